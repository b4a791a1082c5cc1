// Index spaces as sets of disjoint rects: construction, canonical form and set operations.
//
// Every operation keeps its result a list of disjoint non-empty rects, then hands it to
// canonical(), which merges neighbours (rects equal in all dimensions but one and touching in that
// one) and sorts them. Subtracting rect s from rect r cuts r into at most 2N slabs around s; an
// intersection of two disjoint lists is the pairwise intersections. To keep those pairwise loops
// short, the other operand's rects are searched by their lo in dimension N-1, within the widest
// extent any of them has there: spaces built from points, the irregular case, consist of thin
// rects, so each rect meets only its neighbours.
#include "rill/index_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "rill/error.hpp"
#include "rill/serialization.hpp"

namespace rill {
namespace {

// Canonical order: by lo, dimension N-1 most significant (the order for_each_point visits).
template <int N>
bool before(const point<N>& a, const point<N>& b) {
  for (int d = N - 1; d >= 0; --d)
    if (a[d] != b[d]) return a[d] < b[d];
  return false;
}

// r without s, as at most 2N disjoint slabs appended to out: in each dimension in turn, the parts
// of r below and above s, then r narrowed to s there.
template <int N>
void append_difference(rect<N> r, const rect<N>& s, std::vector<rect<N>>& out) {
  if (!r.overlaps(s)) {
    out.push_back(r);
    return;
  }
  for (int d = N - 1; d >= 0; --d) {
    if (r.lo[d] < s.lo[d]) {
      rect<N> below = r;
      below.hi[d] = s.lo[d] - 1;
      out.push_back(below);
      r.lo[d] = s.lo[d];
    }
    if (r.hi[d] > s.hi[d]) {
      rect<N> above = r;
      above.lo[d] = s.hi[d] + 1;
      out.push_back(above);
      r.hi[d] = s.hi[d];
    }
  }
}

// f(s) for every rect s of a canonical list that overlaps r; no rect of the list is wider than
// `widest` in dimension N-1, so none starting before r.lo[N-1] - widest reaches r. Rects that lie
// on one line along dimension 0 (`bounds` one point wide in every other: a 1-D space, or one
// padded to 3-D as copies take it) are disjoint intervals in ascending order, their his too: a
// binary search finds the first reaching r, however wide some are (else a sparse 1-D space
// padded to 3-D, all its rects at the same coordinate in dimension 2, is scanned whole).
template <int N, class F>
void for_each_overlapping(std::span<const rect<N>> rects, coord_t widest, const rect<N>& bounds, const rect<N>& r,
                          F&& f) {
  bool line = true;
  for (int d = 1; d < N; ++d) line = line && bounds.lo[d] == bounds.hi[d];
  if (line) {
    auto it =
        std::lower_bound(rects.begin(), rects.end(), r.lo[0], [](const rect<N>& s, coord_t v) { return s.hi[0] < v; });
    for (; it != rects.end() && it->lo[0] <= r.hi[0]; ++it)
      if (it->overlaps(r)) f(*it);
    return;
  }
  const coord_t lowest = std::numeric_limits<coord_t>::min();
  const coord_t from = r.lo[N - 1] < lowest + widest ? lowest : r.lo[N - 1] - widest;
  auto it =
      std::lower_bound(rects.begin(), rects.end(), from, [](const rect<N>& s, coord_t v) { return s.lo[N - 1] < v; });
  for (; it != rects.end() && it->lo[N - 1] <= r.hi[N - 1]; ++it)
    if (it->overlaps(r)) f(*it);
}

// Whether coordinate b directly follows a.
inline bool touches(coord_t a, coord_t b) { return a < std::numeric_limits<coord_t>::max() && a + 1 == b; }

// Merges rects that are equal in every dimension but d and touch in d; returns whether any did.
template <int N>
bool merge_along(std::vector<rect<N>>& rects, int d) {
  std::sort(rects.begin(), rects.end(), [d](const rect<N>& a, const rect<N>& b) {
    for (int e = N - 1; e >= 0; --e) {
      if (e == d) continue;
      if (a.lo[e] != b.lo[e]) return a.lo[e] < b.lo[e];
      if (a.hi[e] != b.hi[e]) return a.hi[e] < b.hi[e];
    }
    return a.lo[d] < b.lo[d];
  });
  const auto same_but_d = [d](const rect<N>& a, const rect<N>& b) {
    for (int e = 0; e < N; ++e)
      if (e != d && (a.lo[e] != b.lo[e] || a.hi[e] != b.hi[e])) return false;
    return true;
  };
  std::size_t kept = 0;
  for (std::size_t i = 0; i < rects.size(); ++i) {
    if (kept > 0 && same_but_d(rects[kept - 1], rects[i]) && touches(rects[kept - 1].hi[d], rects[i].lo[d]))
      rects[kept - 1].hi[d] = rects[i].hi[d];
    else
      rects[kept++] = rects[i];
  }
  const bool merged = kept < rects.size();
  rects.resize(kept);
  return merged;
}

}  // namespace

template <int N>
std::size_t rect<N>::volume() const {
  if (empty()) return 0;
  std::size_t v = 1;
  for (int d = 0; d < N; ++d) {
    // hi - lo + 1 in unsigned arithmetic: exact for any pair of int64 coordinates with lo <= hi.
    const auto extent = static_cast<std::uint64_t>(hi[d]) - static_cast<std::uint64_t>(lo[d]) + 1;
    if (extent == 0 || v > std::numeric_limits<std::size_t>::max() / extent)
      throw misuse_error(fmt::format("rill::rect<{}>: more points than a std::size_t counts", N));
    v *= extent;
  }
  return v;
}

template <int N>
index_space<N>::index_space(const rect<N>& r) {
  if (!r.empty()) *this = adopt({r});
}

template <int N>
index_space<N> index_space<N>::adopt(std::vector<rect<N>> rects) {
  index_space out;
  for (const rect<N>& r : rects) {
    out.bounds_ = out.bounds_.bounding(r);
    out.widest_ = std::max(out.widest_, r.hi[N - 1] - r.lo[N - 1]);
  }
  out.rects_ = std::move(rects);
  return out;
}

template <int N>
index_space<N> index_space<N>::canonical(std::vector<rect<N>> disjoint) {
  // Rects alike in every dimension but 0 (all of a 1-D space's, and most of those padded to 3-D)
  // can merge only along dimension 0: their canonical form is their maximal runs there, in order,
  // which one sort and one pass find (the rounds below sort once per dimension each).
  const auto alike_but_0 = [&](const rect<N>& r) {
    for (int d = 1; d < N; ++d)
      if (r.lo[d] != disjoint.front().lo[d] || r.hi[d] != disjoint.front().hi[d]) return false;
    return true;
  };
  if (!disjoint.empty() && std::all_of(disjoint.begin(), disjoint.end(), alike_but_0)) {
    std::sort(disjoint.begin(), disjoint.end(), [](const rect<N>& a, const rect<N>& b) { return a.lo[0] < b.lo[0]; });
    std::size_t kept = 0;
    for (std::size_t i = 0; i < disjoint.size(); ++i) {
      if (kept > 0 && touches(disjoint[kept - 1].hi[0], disjoint[i].lo[0]))
        disjoint[kept - 1].hi[0] = disjoint[i].hi[0];
      else
        disjoint[kept++] = disjoint[i];
    }
    disjoint.resize(kept);
    return adopt(std::move(disjoint));
  }
  // Two rounds catch what one misses: a merge along a later dimension can line rects up for an
  // earlier one. Further rounds rarely find more, and the form is only needed to be small.
  for (int round = 0; round < 2; ++round) {
    bool merged = false;
    for (int d = 0; d < N; ++d) merged = merge_along(disjoint, d) || merged;
    if (!merged) break;
  }
  std::sort(disjoint.begin(), disjoint.end(), [](const rect<N>& a, const rect<N>& b) { return before(a.lo, b.lo); });
  return adopt(std::move(disjoint));
}

template <int N>
index_space<N> index_space<N>::from_points(std::span<const point<N>> points) {
  std::vector<point<N>> sorted(points.begin(), points.end());
  std::sort(sorted.begin(), sorted.end(), [](const point<N>& a, const point<N>& b) { return before(a, b); });
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  // Runs along dimension 0 (consecutive in canonical order when the other coordinates agree).
  std::vector<rect<N>> runs;
  for (const point<N>& p : sorted) {
    if (!runs.empty()) {
      rect<N>& last = runs.back();
      point<N> next = last.hi;
      next[0] = p[0];
      if (next == p && touches(last.hi[0], p[0])) {
        last.hi = p;
        continue;
      }
    }
    runs.push_back(rect<N>(p, p));
  }
  return canonical(std::move(runs));
}

template <int N>
index_space<N> index_space<N>::from_rects(std::span<const rect<N>> rects) {
  // Pairwise, as a merge sort does: each rect takes part in log2(n) unions, not n.
  std::vector<index_space> spaces(rects.begin(), rects.end());
  while (spaces.size() > 1) {
    std::vector<index_space> next;
    for (std::size_t i = 0; i + 1 < spaces.size(); i += 2) next.push_back(spaces[i].unite(spaces[i + 1]));
    if (spaces.size() % 2 == 1) next.push_back(std::move(spaces.back()));
    spaces.swap(next);
  }
  return spaces.empty() ? index_space() : std::move(spaces.front());
}

template <int N>
index_space<N> index_space<N>::from_sent_rects(std::vector<rect<N>> rects) {
  for (std::size_t i = 0; i < rects.size(); ++i) {
    if (rects[i].empty() || (i > 0 && !before(rects[i - 1].lo, rects[i].lo)))
      throw decode_error("index space with an empty rect or rects out of order");
  }
  index_space out = adopt(std::move(rects));
  try {
    (void)out.volume();
  } catch (const misuse_error&) {
    throw decode_error("index space with more points than a std::size_t counts");
  }
  return out;
}

template <int N>
std::size_t index_space<N>::volume() const {
  std::size_t v = 0;
  for (const rect<N>& r : rects_) {
    const std::size_t more = r.volume();
    if (more > std::numeric_limits<std::size_t>::max() - v)
      throw misuse_error(fmt::format("rill::index_space<{}>: more points than a std::size_t counts", N));
    v += more;
  }
  return v;
}

template <int N>
bool index_space<N>::contains(const point<N>& p) const {
  if (!bounds_.contains(p)) return false;
  if constexpr (N == 1) {
    // Disjoint intervals in ascending order: the last one starting at or before p.
    auto it =
        std::upper_bound(rects_.begin(), rects_.end(), p[0], [](coord_t v, const rect<1>& r) { return v < r.lo[0]; });
    return it != rects_.begin() && std::prev(it)->contains(p);
  } else {
    bool found = false;
    for_each_overlapping<N>(rects_, widest_, bounds_, rect<N>(p, p), [&](const rect<N>&) { found = true; });
    return found;
  }
}

template <int N>
index_space<N> index_space<N>::intersect(const index_space& other) const {
  std::vector<rect<N>> out;
  for (const rect<N>& r : rects_)
    for_each_overlapping<N>(other.rects_, other.widest_, other.bounds_, r,
                            [&](const rect<N>& s) { out.push_back(r.intersection(s)); });
  return canonical(std::move(out));
}

template <int N>
index_space<N> index_space<N>::subtract(const index_space& other) const {
  if (other.empty() || !bounds_.overlaps(other.bounds_)) return *this;
  std::vector<rect<N>> out, pieces, next;
  for (const rect<N>& r : rects_) {
    pieces.assign(1, r);
    for_each_overlapping<N>(other.rects_, other.widest_, other.bounds_, r, [&](const rect<N>& s) {
      next.clear();
      for (const rect<N>& p : pieces) append_difference(p, s, next);
      pieces.swap(next);
    });
    out.insert(out.end(), pieces.begin(), pieces.end());
  }
  return canonical(std::move(out));
}

template <int N>
index_space<N> index_space<N>::unite(const index_space& other) const {
  if (other.empty()) return *this;
  if (empty()) return other;
  std::vector<rect<N>> out = other.subtract(*this).rects_;
  out.insert(out.end(), rects_.begin(), rects_.end());
  return canonical(std::move(out));
}

template struct rect<1>;
template struct rect<2>;
template struct rect<3>;
template class index_space<1>;
template class index_space<2>;
template class index_space<3>;

}  // namespace rill
