// Partitions of logical regions by what their data holds (Legion's dependent partitioning on
// regions): the color a field stores, or the image or preimage of a pointer field. Each reads the
// field through a launch -- so after the launches that wrote it, on the rank where its data is
// valid (the mapper's choice), with the copies that brings -- computes the subspaces there
// (rill/dependent_partition.hpp) and makes the partition on the calling rank. The calling task
// waits for that launch: a refused one throws rill::misuse_error, a failed one (a point outside
// what the field's instance holds, a poisoned writer before it) rill::poisoned_error naming it.
//
//   // Circuit's cut: the wires of each piece, and the nodes they reach.
//   auto pieces = rill::partition_by_field<1>(wires, piece_of, 4);        // {w : piece_of[w] == c}
//   auto reached = rill::partition_by_image<1, 1>(nodes, wires, to, pieces); // {to[w] : w in piece c}
//   auto wired = rill::partition_by_preimage<1, 1>(wires, from, owned);    // {w : from[w] in owned c}
//
// See docs/regions.md.
#pragma once
#include <concepts>
#include <cstddef>
#include <vector>

#include "rill/dependent_partition.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"

namespace rill {

namespace detail {
// Runs task(regions, args..., promise) as a launch reading field f of r, and returns what it put
// once it has ended (throwing the cause if it failed).
template <class S, class Task, class... Args>
std::vector<S> subspaces_read_by_launch(region r, field_id f, Task task, const Args&... args) {
  promise<std::vector<S>> spaces;
  auto found = spaces.get_future();
  launch(task, {req(r, {f}, privilege::read_only)}, args..., spaces).wait();
  return found.get();
}
}  // namespace detail

// The subregion c of `r` holds the points p of r with color[p] == c, for c < colors (points of
// another color are in none). Disjoint.
template <int N, std::integral C>
partition partition_by_field(region r, field<C> color, std::size_t colors) {
  return partition_by_subspaces(
      r, detail::subspaces_read_by_launch<index_space<N>>(
             r, color.id,
             [](const physical_regions& rs, field<C> f, std::size_t k, promise<std::vector<index_space<N>>> out) {
               out.put(detail::group_by_color<N, C>(rs[0].inst, f, rs[0].reg.space<N>(), k));
             },
             color, colors));
}

// The subregion c of `target` holds the points that ptr[p] names for the points p of
// sources.subregion(c) (a partition of `pointers`), those within target.
template <int N, int M>
partition partition_by_image(region target, region pointers, field<point<M>> ptr, partition sources) {
  return partition_by_subspaces(target, detail::subspaces_read_by_launch<index_space<M>>(
                                            pointers, ptr.id,
                                            [](const physical_regions& rs, field<point<M>> f, partition from, region to,
                                               promise<std::vector<index_space<M>>> out) {
                                              std::vector<index_space<N>> each;
                                              for (std::size_t c = 0; c < from.colors(); ++c)
                                                each.push_back(from.subregion(c).space<N>());
                                              out.put(detail::images_of<N, M>(rs[0].inst, f, each, to.space<M>()));
                                            },
                                            ptr, sources, target));
}

// The subregion c of `pointers` holds its points p whose ptr[p] lies in targets.subregion(c).
template <int N, int M>
partition partition_by_preimage(region pointers, field<point<M>> ptr, partition targets) {
  return partition_by_subspaces(
      pointers,
      detail::subspaces_read_by_launch<index_space<N>>(
          pointers, ptr.id,
          [](const physical_regions& rs, field<point<M>> f, partition to, promise<std::vector<index_space<N>>> out) {
            std::vector<index_space<M>> each;
            for (std::size_t c = 0; c < to.colors(); ++c) each.push_back(to.subregion(c).space<M>());
            out.put(detail::preimages_of<N, M>(rs[0].inst, f, rs[0].reg.space<N>(), each));
          },
          ptr, targets));
}

}  // namespace rill
