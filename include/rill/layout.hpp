// How an instance lays out its fields in memory (Realm §7's instance layouts).
//
//   rill::layout::soa()                        // struct of arrays: each field an array of its own
//   rill::layout::aos()                        // array of structs: a point's fields side by side
//   rill::layout::grouped({{x, y}, {mass}})    // hybrid: x and y interleaved, mass apart
//   rill::layout::soa().order({1, 0})          // dimension 1 fastest (C order for a 2-D grid)
//
// A group's fields are stored side by side in the order given, each aligned to its size (up to 16
// bytes); a field in no group gets an array of its own. Within a group's array, points go in the
// dimension order given (default: dimension 0 fastest, as Realm's default), over the bounding
// rect of the instance's index space. A value, valid on every rank. See docs/data.md.
#pragma once
#include <cstdint>
#include <vector>

#include "rill/field_space.hpp"

namespace rill {

class layout {
 public:
  static layout soa() { return layout(kind::soa, {}); }
  static layout aos() { return layout(kind::aos, {}); }
  static layout grouped(std::vector<std::vector<field_id>> groups) { return layout(kind::grouped, std::move(groups)); }

  // Dimensions from fastest to slowest: a permutation of 0..N-1 for an N-dimensional instance.
  layout& order(std::vector<int> fastest_first) {
    order_ = std::move(fastest_first);
    return *this;
  }

  enum class kind : std::uint8_t { soa, aos, grouped };
  kind what() const { return kind_; }
  const std::vector<std::vector<field_id>>& groups() const { return groups_; }
  // Empty: dimension 0 fastest, then 1, then 2.
  const std::vector<int>& dimension_order() const { return order_; }

  friend bool operator==(const layout&, const layout&) = default;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(kind_, groups_, order_);
  }

  layout() = default;

 private:
  layout(kind k, std::vector<std::vector<field_id>> g) : kind_(k), groups_(std::move(g)) {}
  kind kind_ = kind::soa;
  std::vector<std::vector<field_id>> groups_;
  std::vector<int> order_;
};

}  // namespace rill
