// Subspaces computed from data (Realm's dependent partitioning): index spaces made from what an
// instance's fields hold, read on the instance's rank once a precondition has triggered.
//
//   // color[p] says which piece p belongs to: pieces[c] = {p in over : color[p] == c}
//   auto pieces = rill::subspaces_by_field(inst, color, over, /*colors=*/4, after).get();
//   // the points edges of each piece point at: ghosts[i] = {ptr[p] : p in pieces[i]} within nodes
//   auto ghosts = rill::subspaces_by_image(edges, ptr, pieces, nodes, after).get();
//   // the edges that point into each piece of nodes: mine[j] = {p in over : ptr[p] in parts[j]}
//   auto mine = rill::subspaces_by_preimage(edges, ptr, over, parts, after).get();
//
// A pointer field holds a point of another (or the same) index space: `field<point<M>>`. Each call
// returns a future of the subspaces at once; a poisoned precondition poisons it, and so does an
// instance that is not there, a field it does not hold, or points outside it (naming the cause).
// These are how an irregular program finds its pieces, its ghost points and the edges that reach
// them; partitions of logical regions by field, image and preimage (rill/partition.hpp) are made
// of them. See docs/regions.md.
#pragma once
#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/finish.hpp"
#include "rill/future.hpp"
#include "rill/index_space.hpp"
#include "rill/instance.hpp"

namespace rill {

namespace detail {

// Throws rill::misuse_error unless every point of `over` lies within the accessor's bounds.
template <class A, int N>
void require_within(const A& acc, const index_space<N>& over, const char* what) {
  if (!over.empty() && !acc.bounds().contains(over.bounds()))
    throw misuse_error(std::string(what) + ": points lie outside the instance");
}

// Canonical order of points (dimension M-1 most significant), as index spaces keep them.
template <int M>
bool point_before(const point<M>& a, const point<M>& b) {
  for (int d = M - 1; d >= 0; --d)
    if (a[d] != b[d]) return a[d] < b[d];
  return false;
}

template <int N, class C>
std::vector<index_space<N>> group_by_color(instance inst, field<C> color, const index_space<N>& over,
                                           std::uint64_t colors) {
  accessor<C, N> acc(inst, color);
  require_within(acc, over, "rill::subspaces_by_field");
  std::vector<std::vector<point<N>>> members(colors);
  over.for_each_point([&](const point<N>& p) {
    const C c = acc[p];
    if (c >= C{0} && static_cast<std::uint64_t>(c) < colors) members[static_cast<std::size_t>(c)].push_back(p);
  });
  std::vector<index_space<N>> out;
  out.reserve(members.size());
  for (const auto& m : members) out.push_back(index_space<N>::from_points(m));
  return out;
}

template <int N, int M>
std::vector<index_space<M>> images_of(instance inst, field<point<M>> ptr, const std::vector<index_space<N>>& sources,
                                      const index_space<M>& target) {
  accessor<point<M>, N> acc(inst, ptr);
  std::vector<index_space<M>> out;
  out.reserve(sources.size());
  std::vector<point<M>> reached;
  for (const index_space<N>& s : sources) {
    require_within(acc, s, "rill::subspaces_by_image");
    reached.clear();
    s.for_each_point([&](const point<N>& p) { reached.push_back(acc[p]); });
    out.push_back(index_space<M>::from_points(reached).intersect(target));
  }
  return out;
}

template <int N, int M>
std::vector<index_space<N>> preimages_of(instance inst, field<point<M>> ptr, const index_space<N>& over,
                                         const std::vector<index_space<M>>& targets) {
  accessor<point<M>, N> acc(inst, ptr);
  require_within(acc, over, "rill::subspaces_by_preimage");
  // Every (pointed-at, pointing) pair, sorted by the point pointed at: a target's points are then
  // found by binary search, a row of a rect (its points along dimension 0) at a time.
  std::vector<std::pair<point<M>, point<N>>> pairs;
  pairs.reserve(over.volume());
  over.for_each_point([&](const point<N>& p) { pairs.emplace_back(acc[p], p); });
  const auto by_target = [](const auto& a, const auto& b) { return point_before(a.first, b.first); };
  std::sort(pairs.begin(), pairs.end(), by_target);
  std::vector<index_space<N>> out;
  out.reserve(targets.size());
  std::vector<point<N>> found;
  for (const index_space<M>& t : targets) {
    found.clear();
    for (const rect<M>& r : t.rects()) {
      // Each row: the points from (lo[0], q1, ...) to (hi[0], q1, ...).
      rect<M> rows = r;
      rows.hi[0] = r.lo[0];
      index_space<M>(rows).for_each_point([&](const point<M>& first) {
        point<M> last = first;
        last[0] = r.hi[0];
        auto from = std::lower_bound(pairs.begin(), pairs.end(), std::make_pair(first, point<N>{}), by_target);
        auto to = std::upper_bound(from, pairs.end(), std::make_pair(last, point<N>{}), by_target);
        for (; from != to; ++from) found.push_back(from->second);
      });
    }
    out.push_back(index_space<N>::from_points(found));
  }
  return out;
}

// Runs compute() on rank `owner` once `after` has triggered, and answers through a future here.
template <class R, class Compute, class... Args>
future<R> computed_at(int owner, event after, Compute /*code, stateless*/, Args... args) {
  static_assert(std::is_empty_v<Compute>, "computed_at: the computation travels as code, not as a closure");
  promise<R> p;
  future<R> out = p.get_future();
  run_after(
      after,
      [p, owner, args...]() {
        async_at(
            owner, [](promise<R> q, Args... a) { fulfil(q, Compute{}, std::move(a)...); }, p, args...);
      },
      poison_into(p));
  return out;
}

}  // namespace detail

// The points of `over` grouped by the value of their field `color` in inst: result[c] holds the
// points whose color is c, for c < colors (points of other colors are in none).
template <int N, std::integral C>
future<std::vector<index_space<N>>> subspaces_by_field(instance inst, field<C> color, const index_space<N>& over,
                                                       std::size_t colors, event after = event::none()) {
  return detail::computed_at<std::vector<index_space<N>>>(
      inst.owner(), after,
      [](instance i, field<C> c, const index_space<N>& s, std::uint64_t n) {
        return detail::group_by_color<N, C>(i, c, s, n);
      },
      inst, color, over, static_cast<std::uint64_t>(colors));
}

// For each source subspace, the points its points' field `ptr` holds, within `target`.
template <int N, int M>
future<std::vector<index_space<M>>> subspaces_by_image(instance inst, field<point<M>> ptr,
                                                       const std::vector<index_space<N>>& sources,
                                                       const index_space<M>& target, event after = event::none()) {
  return detail::computed_at<std::vector<index_space<M>>>(
      inst.owner(), after,
      [](instance i, field<point<M>> f, const std::vector<index_space<N>>& s, const index_space<M>& t) {
        return detail::images_of<N, M>(i, f, s, t);
      },
      inst, ptr, sources, target);
}

// For each target subspace, the points of `over` whose field `ptr` holds a point of it.
template <int N, int M>
future<std::vector<index_space<N>>> subspaces_by_preimage(instance inst, field<point<M>> ptr,
                                                          const index_space<N>& over,
                                                          const std::vector<index_space<M>>& targets,
                                                          event after = event::none()) {
  return detail::computed_at<std::vector<index_space<N>>>(
      inst.owner(), after,
      [](instance i, field<point<M>> f, const index_space<N>& s, const std::vector<index_space<M>>& t) {
        return detail::preimages_of<N, M>(i, f, s, t);
      },
      inst, ptr, over, targets);
}

}  // namespace rill
