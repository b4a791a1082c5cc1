// Region and partition handles: creation of a tree's root, what a handle names (through this
// rank's forest), and the overlap test the tree allows.
#include <fmt/format.h>

#include <memory>

#include "regions/region_forest.hpp"
#include "rill/error.hpp"
#include "rill/partition.hpp"
#include "rill/region.hpp"

namespace rill {

using detail::forest_here;
using detail::region_node;

region region::create_padded(int dims, const index_space<3>& space, const field_space& fields) {
  auto& forest = forest_here("rill::region::create");
  auto node = std::make_shared<region_node>();
  node->id = forest.reserve_ids(1);
  node->dims = dims;
  node->space = space;
  node->fields = fields;
  node->root = node->id;
  const region made(node->id, dims);
  forest.add(std::move(node));
  return made;
}

namespace {

std::shared_ptr<const region_node> node_of(const region& r, const char* what) {
  if (!r.exists()) throw misuse_error(fmt::format("{}: the region handle is empty", what));
  return forest_here(what).node(r.id(), what);
}

}  // namespace

index_space<3> region::space_padded(int dims) const {
  auto n = node_of(*this, "rill::region::space");
  if (n->dims != dims)
    throw misuse_error(fmt::format("rill::region::space<{}>: region {:#x} has {} dimensions", dims, id_, n->dims));
  return n->space;
}

std::size_t region::volume() const { return node_of(*this, "rill::region::volume")->space.volume(); }
field_space region::fields() const { return node_of(*this, "rill::region::fields")->fields; }
partition region::parent() const { return node_of(*this, "rill::region::parent")->parent(); }
std::size_t region::color() const { return node_of(*this, "rill::region::color")->color; }
region region::root() const { return {node_of(*this, "rill::region::root")->root, dims_}; }

region partition::subregion(std::size_t color) const {
  if (!exists()) throw misuse_error("rill::partition::subregion: the partition handle is empty");
  if (color >= colors_)
    throw misuse_error(fmt::format("rill::partition::subregion: color {} of a partition of {} colors", color, colors_));
  return {id_ + 1 + color, dims_};
}

region partition::parent() const {
  // Every partition has a subregion 0, numbered right after it.
  return {node_of(subregion(0), "rill::partition::parent")->parent_region, dims_};
}

bool regions_overlap(region a, region b) {
  constexpr const char* what = "rill::regions_overlap";
  auto& forest = forest_here(what);
  const auto na = node_of(a, what), nb = node_of(b, what);
  if (na->root != nb->root || na->space.empty() || nb->space.empty()) return false;
  // Up to the same depth: if that is the other region, one holds the other.
  auto x = na, y = nb;
  while (x->depth > y->depth) x = forest.node(x->parent_region, what);
  while (y->depth > x->depth) y = forest.node(y->parent_region, what);
  if (x == y || x->id == y->id) return true;
  // Up together to the region where their paths meet: the last step down from it decides when
  // both take the same disjoint partition (to different colors, or they would not differ).
  while (x->parent_region != y->parent_region) {
    x = forest.node(x->parent_region, what);
    y = forest.node(y->parent_region, what);
  }
  if (x->parent_partition == y->parent_partition && (x->parent_flags & partition::disjoint_flag) != 0) return false;
  if (!na->space.bounds().overlaps(nb->space.bounds())) return false;
  return !na->space.intersect(nb->space).empty();
}

}  // namespace rill
