// Partitions of logical regions into subregions (Iris §II-A, Legion's partitions): each way to cut
// a region returns a partition at once, numbered colors 0 .. colors()-1, and knows whether its
// subregions are disjoint and whether they cover the parent.
//
//   auto strips = rill::partition_equal(grid, 4);                   // equal volumes, disjoint
//   auto tiles = rill::partition_by_blocks(grid, rill::point<2>{16, 16});   // 16 x 16 tiles
//   auto odd = rill::partition_by_coloring<2>(grid, 2, [](rill::point<2> p) { return p[0] % 2; });
//   auto halos = rill::partition_by_subspaces(grid, spaces);        // any subspaces, aliased or not
//
// Partitions made from data -- by the color a field holds, by the image or preimage of a pointer
// field -- are partition_by_subspaces over what rill::subspaces_by_field, _by_image and _by_preimage
// (rill/dependent_partition.hpp) compute from an instance, or, from a region's data,
// rill::partition_by_field, _by_image and _by_preimage (rill/partition_by_data.hpp). A partition
// is made on the calling rank (which keeps its nodes); any rank may partition any region it has a
// handle to, and a subregion can be partitioned again. See docs/regions.md.
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "rill/error.hpp"
#include "rill/index_space.hpp"
#include "rill/region.hpp"

namespace rill {

namespace detail {
// A partition of `parent` into these subspaces (padded to 3 dimensions). `disjoint_known`: the
// caller made them disjoint, so that is not checked. Throws rill::misuse_error when one is not
// within the parent.
partition make_partition(region parent, std::vector<index_space<3>> subspaces, bool disjoint_known, const char* what);
// `colors` pieces of equal volume (within one point) in the canonical order of the parent's points.
partition make_equal_partition(region parent, std::size_t colors);
// Tiles of the parent's bounding rect, `extent` points a side, the first at its lower corner.
partition make_block_partition(region parent, const point<3>& extent, int dims);
}  // namespace detail

// `colors` disjoint subregions of equal volume (their volumes differ by at most one point), each a
// run of the parent's points in canonical order (dimension 0 fastest): rows or slabs of a dense
// rect. Throws rill::misuse_error for colors == 0.
inline partition partition_equal(region parent, std::size_t colors) {
  return detail::make_equal_partition(parent, colors);
}

// Tiles of `extent` points a side over the parent's bounding rect, starting at its lower corner;
// tile (i0, i1, ...) has color i0 + n0 * (i1 + n1 * ...), n_d tiles along dimension d. Disjoint and
// complete; a tile outside a sparse parent is an empty subregion.
template <int N>
partition partition_by_blocks(region parent, const point<N>& extent) {
  point<3> e{1, 1, 1};
  for (int d = 0; d < N; ++d) e[d] = extent[d];
  return detail::make_block_partition(parent, e, N);
}

// Subregion c holds the points p of the parent for which color_of(p) == c; points colored
// `colors` or more are in none. Disjoint. N is the parent's dimensions (else rill::misuse_error).
template <int N, class F>
requires std::convertible_to < std::invoke_result_t < F&, const point<N>
& >, std::size_t > partition partition_by_coloring(region parent, std::size_t colors, F&& color_of) {
  std::vector<std::vector<point<N>>> members(colors);
  parent.space<N>().for_each_point([&](const point<N>& p) {
    const std::size_t c = static_cast<std::size_t>(color_of(p));
    if (c < colors) members[c].push_back(p);
  });
  std::vector<index_space<3>> subspaces;
  subspaces.reserve(colors);
  for (const auto& m : members) subspaces.push_back(padded_to_3d(index_space<N>::from_points(m)));
  return detail::make_partition(parent, std::move(subspaces), true, "rill::partition_by_coloring");
}
// Subregion c holds subspaces[c], each of which must lie within the parent (else
// rill::misuse_error); whether they are disjoint and complete is found out.
template <int N>
partition partition_by_subspaces(region parent, const std::vector<index_space<N>>& subspaces) {
  if (parent.dimensions() != N)
    throw misuse_error("rill::partition_by_subspaces: subspaces of " + std::to_string(N) +
                       " dimensions for a region of " + std::to_string(parent.dimensions()));
  std::vector<index_space<3>> padded;
  padded.reserve(subspaces.size());
  for (const auto& s : subspaces) padded.push_back(padded_to_3d(s));
  return detail::make_partition(parent, std::move(padded), false, "rill::partition_by_subspaces");
}

}  // namespace rill
