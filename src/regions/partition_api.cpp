// Making partitions: checking subspaces against their parent, finding out whether they are
// disjoint and complete, numbering the subregions after the partition's id, and the equal and
// block cuts.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>

#include "regions/region_forest.hpp"
#include "rill/error.hpp"
#include "rill/partition.hpp"

namespace rill::detail {
namespace {

bool pairwise_disjoint(const std::vector<index_space<3>>& spaces) {
  // By the lower bound of their bounding rects in dimension 0, so that each is compared only with
  // those whose bounds start before it ends.
  std::vector<std::size_t> order(spaces.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::erase_if(order, [&](std::size_t i) { return spaces[i].empty(); });
  std::sort(order.begin(), order.end(),
            [&](std::size_t i, std::size_t j) { return spaces[i].bounds().lo[0] < spaces[j].bounds().lo[0]; });
  for (std::size_t i = 0; i < order.size(); ++i) {
    const index_space<3>& a = spaces[order[i]];
    for (std::size_t j = i + 1; j < order.size(); ++j) {
      const index_space<3>& b = spaces[order[j]];
      if (b.bounds().lo[0] > a.bounds().hi[0]) break;
      if (a.bounds().overlaps(b.bounds()) && !a.intersect(b).empty()) return false;
    }
  }
  return true;
}

std::size_t union_volume(const std::vector<index_space<3>>& spaces) {
  std::vector<index_space<3>> level = spaces;
  while (level.size() > 1) {
    std::vector<index_space<3>> next;
    for (std::size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(level[i].unite(level[i + 1]));
    if (level.size() % 2 == 1) next.push_back(std::move(level.back()));
    level.swap(next);
  }
  return level.empty() ? 0 : level.front().volume();
}

// Appends to `out` the points a .. b-1, in canonical order, of rect r, whose dimensions above d
// are a single coordinate each: at most 2d+1 rects (a part of a slab, whole slabs, a part of one).
void carve(const rect<3>& r, int d, std::uint64_t a, std::uint64_t b, std::vector<rect<3>>& out) {
  if (a >= b) return;
  if (d == 0) {
    rect<3> q = r;
    q.lo[0] = r.lo[0] + static_cast<coord_t>(a);
    q.hi[0] = r.lo[0] + static_cast<coord_t>(b - 1);
    out.push_back(q);
    return;
  }
  std::uint64_t slab = 1;  // points in one slab: one coordinate of dimension d
  for (int e = 0; e < d; ++e) slab *= static_cast<std::uint64_t>(r.hi[e] - r.lo[e] + 1);
  const auto slabs = [&](std::uint64_t first, std::uint64_t last) {
    rect<3> q = r;
    q.lo[d] = r.lo[d] + static_cast<coord_t>(first);
    q.hi[d] = r.lo[d] + static_cast<coord_t>(last);
    return q;
  };
  const std::uint64_t ia = a / slab, ib = (b - 1) / slab;
  if (ia == ib) {
    carve(slabs(ia, ia), d - 1, a - ia * slab, b - ia * slab, out);
    return;
  }
  std::uint64_t whole_from = ia, whole_to = ib + 1;  // [whole_from, whole_to) are whole slabs
  if (a % slab != 0) carve(slabs(ia, ia), d - 1, a % slab, slab, out), whole_from = ia + 1;
  if (b % slab != 0) whole_to = ib;
  if (whole_from < whole_to) out.push_back(slabs(whole_from, whole_to - 1));
  if (b % slab != 0) carve(slabs(ib, ib), d - 1, 0, b - ib * slab, out);
}

}  // namespace

partition make_partition(region parent, std::vector<index_space<3>> subspaces, bool disjoint_known, const char* what) {
  if (!parent.exists()) throw misuse_error(fmt::format("{}: the parent region handle is empty", what));
  auto& forest = forest_here(what);
  const auto up = forest.node(parent.id(), what);
  if (subspaces.empty()) throw misuse_error(fmt::format("{}: a partition needs at least one color", what));
  if (subspaces.size() > std::numeric_limits<std::uint32_t>::max())
    throw misuse_error(fmt::format("{}: {} colors are more than a partition holds", what, subspaces.size()));
  for (std::size_t c = 0; c < subspaces.size(); ++c) {
    if (!up->space.contains(subspaces[c]))
      throw misuse_error(fmt::format("{}: subspace {} is not within region {:#x} ({} of its points are outside)", what,
                                     c, parent.id(), subspaces[c].subtract(up->space).volume()));
  }
  const bool disjoint = disjoint_known || pairwise_disjoint(subspaces);
  std::size_t covered = 0;
  if (disjoint)
    for (const auto& s : subspaces) covered += s.volume();
  else
    covered = union_volume(subspaces);
  const std::uint8_t flags = static_cast<std::uint8_t>((disjoint ? partition::disjoint_flag : 0) |
                                                       (covered == up->space.volume() ? partition::complete_flag : 0));
  const auto colors = static_cast<std::uint32_t>(subspaces.size());
  const std::uint64_t id = forest.reserve_ids(std::uint64_t{colors} + 1);
  for (std::uint32_t c = 0; c < colors; ++c) {
    auto node = std::make_shared<region_node>();
    node->id = id + 1 + c;
    node->dims = up->dims;
    node->space = std::move(subspaces[c]);
    node->fields = up->fields;
    node->root = up->root;
    node->depth = up->depth + 1;
    node->parent_partition = id;
    node->parent_colors = colors;
    node->parent_flags = flags;
    node->color = c;
    node->parent_region = up->id;
    forest.add(std::move(node));
  }
  return {id, colors, up->dims, flags};
}

partition make_equal_partition(region parent, std::size_t colors) {
  constexpr const char* what = "rill::partition_equal";
  if (colors == 0) throw misuse_error(fmt::format("{}: a partition needs at least one color", what));
  if (colors > std::numeric_limits<std::uint32_t>::max())
    throw misuse_error(fmt::format("{}: {} colors are more than a partition holds", what, colors));
  if (!parent.exists()) throw misuse_error(fmt::format("{}: the parent region handle is empty", what));
  const auto up = forest_here(what).node(parent.id(), what);
  const std::uint64_t total = up->space.volume(), k = colors;
  // Piece c starts at point c * total / k of the parent's, computed without overflow.
  const auto start = [&](std::uint64_t c) { return c * (total / k) + c * (total % k) / k; };
  std::vector<index_space<3>> pieces;
  pieces.reserve(colors);
  std::vector<rect<3>> cut;
  std::size_t next_rect = 0;
  std::uint64_t rect_start = 0;  // the position of rects()[next_rect]'s first point
  const auto rects = up->space.rects();
  for (std::uint64_t c = 0; c < k; ++c) {
    const std::uint64_t a = start(c), b = start(c + 1);
    cut.clear();
    // The rects that meet [a, b), from the first one the previous piece did not use up.
    std::uint64_t pos = rect_start;
    std::size_t i = next_rect;
    while (i < rects.size() && pos < b) {
      const std::uint64_t v = rects[i].volume();
      const std::uint64_t lo = std::max(a, pos), hi = std::min(b, pos + v);
      if (lo < hi) carve(rects[i], 2, lo - pos, hi - pos, cut);
      if (pos + v <= b) {
        pos += v;
        ++i;
      } else {
        break;
      }
    }
    next_rect = i;
    rect_start = pos;
    pieces.push_back(index_space<3>::from_rects(cut));
  }
  return make_partition(parent, std::move(pieces), true, what);
}

partition make_block_partition(region parent, const point<3>& extent, int dims) {
  constexpr const char* what = "rill::partition_by_blocks";
  for (int d = 0; d < 3; ++d)
    if (extent[d] < 1)
      throw misuse_error(fmt::format("{}: a block's extent must be at least 1 in every dimension", what));
  if (!parent.exists()) throw misuse_error(fmt::format("{}: the parent region handle is empty", what));
  const auto up = forest_here(what).node(parent.id(), what);
  if (up->dims != dims)
    throw misuse_error(
        fmt::format("{}: blocks of {} dimensions for region {:#x} of {}", what, dims, parent.id(), up->dims));
  const rect<3> box = up->space.bounds();
  std::array<std::uint64_t, 3> tiles{1, 1, 1};
  std::uint64_t count = 1;
  if (!box.empty()) {
    for (int d = 0; d < 3; ++d) {
      const auto width = static_cast<std::uint64_t>(box.hi[d] - box.lo[d] + 1);
      tiles[static_cast<std::size_t>(d)] =
          (width + static_cast<std::uint64_t>(extent[d]) - 1) / static_cast<std::uint64_t>(extent[d]);
      count *= tiles[static_cast<std::size_t>(d)];
      if (count > std::numeric_limits<std::uint32_t>::max())
        throw misuse_error(fmt::format("{}: the blocks would be more than a partition holds", what));
    }
  }
  std::vector<index_space<3>> pieces;
  pieces.reserve(count);
  for (std::uint64_t t = 0; t < count; ++t) {
    if (box.empty()) {
      pieces.emplace_back();
      continue;
    }
    rect<3> tile;
    std::uint64_t rest = t;
    for (int d = 0; d < 3; ++d) {
      const std::uint64_t i = rest % tiles[static_cast<std::size_t>(d)];
      rest /= tiles[static_cast<std::size_t>(d)];
      tile.lo[d] = box.lo[d] + static_cast<coord_t>(i) * extent[d];
      tile.hi[d] = std::min(box.hi[d], tile.lo[d] + extent[d] - 1);
    }
    pieces.push_back(up->space.dense() ? index_space<3>(tile) : up->space.intersect(index_space<3>(tile)));
  }
  return make_partition(parent, std::move(pieces), true, what);
}

}  // namespace rill::detail
