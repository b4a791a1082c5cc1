// The regions layer's part of a rank: the nodes of region trees it knows. A node is made once, on
// the rank whose task made it (a region::create or a partition), and never changes, so other
// ranks copy it the first time they need it and keep the copy.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "rill/field_space.hpp"
#include "rill/index_space.hpp"
#include "rill/region.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

// A region of a tree: its points and fields, and where it hangs (for a subregion, the partition
// and color it is of, and that partition's parent).
struct region_node {
  std::uint64_t id = 0;
  std::int32_t dims = 0;
  index_space<3> space;  // padded to 3 dimensions (rill::padded_to_3d)
  field_space fields;
  std::uint64_t root = 0;
  std::uint32_t depth = 0;  // regions above it
  // Subregions only: the partition (id, colors, flags), its color there, the partition's parent.
  std::uint64_t parent_partition = 0;
  std::uint32_t parent_colors = 0;
  std::uint8_t parent_flags = 0;
  std::uint64_t color = 0;
  std::uint64_t parent_region = 0;

  partition parent() const {
    return parent_partition == 0 ? partition() : partition(parent_partition, parent_colors, dims, parent_flags);
  }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(id, dims, space, fields, root, depth, parent_partition, parent_colors, parent_flags, color, parent_region);
  }
};

class region_forest final : public rank_module {
 public:
  explicit region_forest(int rank);

  // `n` fresh consecutive ids: this rank in the top 24 bits, a sequence number below (never 0).
  std::uint64_t reserve_ids(std::uint64_t n);
  void add(std::shared_ptr<const region_node> node);
  // The node of region `id`, fetched from the rank that made it when this rank does not have it
  // (the calling task waits for the answer). Throws rill::misuse_error naming `what` when no rank
  // made it.
  std::shared_ptr<const region_node> node(std::uint64_t id, const char* what);
  // A node this rank made or copied, or null.
  std::shared_ptr<const region_node> known(std::uint64_t id) const;

 private:
  const int rank_;
  mutable std::mutex lock_;
  std::uint64_t next_sequence_ = 1;  // under lock_
  std::unordered_map<std::uint64_t, std::shared_ptr<const region_node>> nodes_;
};

inline region_forest& forest_here(const char* what) { return current_module<region_forest>(what); }

}  // namespace rill::detail
