// Logical regions (Iris §II-A, Legion's regions): a name for a collection of data, an index space
// of points times a field space of fields, that has no storage and no place of its own. Regions
// are partitioned into subregions (rill/partition.hpp), which can be partitioned again: a region
// tree, whose shape tells which regions may share points without comparing them.
//
//   rill::region grid = rill::region::create(rill::rect<2>{{0, 0}, {99, 99}}, rill::field_space{t});
//   rill::partition rows = rill::partition_equal(grid, 4);      // 4 disjoint subregions
//   rill::region r2 = rows.subregion(2);
//   rill::index_space<2> pts = r2.space<2>();                   // its points
//   bool shared = rill::regions_overlap(r2, rows.subregion(3)); // false: a disjoint partition
//
// Handles are values valid on every rank (DESIGN.md invariant 3): two 64-bit words, sent in
// messages as they are. A region tree lives where its nodes were made; another rank that asks a
// handle for its points or fields fetches the node from its maker once (the calling task waits
// for the answer) and keeps it, since nodes never change. A partition's subregions are numbered
// from its own id, so `subregion(c)` needs no lookup. See docs/regions.md.
#pragma once
#include <compare>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rill/event.hpp"
#include "rill/field_space.hpp"
#include "rill/index_space.hpp"

namespace rill {

class partition;

class region {
 public:
  constexpr region() = default;

  // A new region tree whose root holds `space` and `fields`.
  template <int N>
  static region create(const index_space<N>& space, const field_space& fields) {
    return create_padded(N, padded_to_3d(space), fields);
  }
  template <int N>
  static region create(const rect<N>& space, const field_space& fields) {
    return create(index_space<N>(space), fields);
  }

  bool exists() const { return id_ != 0; }
  // Unique in the run: the rank that made it in the top 24 bits, a sequence number below.
  std::uint64_t id() const { return id_; }
  int dimensions() const { return dims_; }

  // Its points; throws rill::misuse_error when N is not its dimensions or the handle names no region.
  template <int N>
  index_space<N> space() const {
    return unpadded_from_3d<N>(space_padded(N));
  }
  // Points in it (0 for an empty region).
  std::size_t volume() const;
  // Its fields: every region of a tree has the fields of the root.
  field_space fields() const;
  // The partition it is a subregion of (a partition that does not exist for a root) and its color there.
  partition parent() const;
  std::size_t color() const;

  // Destroys the region tree this root heads, for the calling rank's launches: later launches
  // on it or its subregions are refused (rill::misuse_error), and its instances, everywhere,
  // are destroyed once `after` and every launch already made on it have ended (failed or not).
  // Returns the event of their destruction; never blocks. Called by the launches' issuer
  // outside launched tasks, once per tree, on a root (a subregion is refused).
  event destroy(event after = event::none()) const;
  // The root of its tree.
  region root() const;

  friend bool operator==(const region&, const region&) = default;
  friend auto operator<=>(const region&, const region&) = default;

 private:
  friend class partition;
  constexpr region(std::uint64_t id, int dims) : id_(id), dims_(dims) {}
  static region create_padded(int dims, const index_space<3>& space, const field_space& fields);
  index_space<3> space_padded(int dims) const;

  std::uint64_t id_ = 0;
  std::int32_t dims_ = 0;
  std::uint32_t unused_ = 0;
};
static_assert(std::is_trivially_copyable_v<region> && sizeof(region) == 16);

class partition {
 public:
  constexpr partition() = default;

  bool exists() const { return id_ != 0; }
  std::uint64_t id() const { return id_; }
  // Subregions are numbered 0 .. colors()-1.
  std::size_t colors() const { return colors_; }
  // Known when the partition is made: no two subregions share a point.
  bool disjoint() const { return (flags_ & disjoint_flag) != 0; }
  // Every point of the parent is in some subregion.
  bool complete() const { return (flags_ & complete_flag) != 0; }
  int dimensions() const { return dims_; }

  // Throws rill::misuse_error for a color of colors() or more.
  region subregion(std::size_t color) const;
  // The region it partitions.
  region parent() const;

  friend bool operator==(const partition&, const partition&) = default;

  static constexpr std::uint8_t disjoint_flag = 1, complete_flag = 2;
  // Made by the regions layer (rill/partition.hpp's functions), never by hand.
  constexpr partition(std::uint64_t id, std::uint32_t colors, int dims, std::uint8_t flags)
      : id_(id), colors_(colors), dims_(static_cast<std::int8_t>(dims)), flags_(flags) {}

 private:
  std::uint64_t id_ = 0;
  std::uint32_t colors_ = 0;
  std::int8_t dims_ = 0;
  std::uint8_t flags_ = 0;
};
static_assert(std::is_trivially_copyable_v<partition> && sizeof(partition) == 16);

// Whether a and b share a point of the same data: never when they are in different trees; when
// the tree proves they do not (below two subregions of one disjoint partition), without comparing
// points; otherwise by intersecting their points.
bool regions_overlap(region a, region b);

}  // namespace rill
