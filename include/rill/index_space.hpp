// Index spaces: the points a physical instance holds and a copy, fill or reduction covers (Realm
// §7; Realm's Point, Rect and IndexSpace). Values, valid on every rank, sent in messages as they are.
//
//   rill::rect<2> grid{{0, 0}, {99, 99}};                          // dense: 100 x 100 points
//   auto ghosts = rill::index_space<1>::from_points(ids);          // sparse: any set of points
//   auto halo = rill::index_space<2>(grid).subtract(rill::rect<2>{{1, 1}, {98, 98}});
//   halo.for_each_point([](rill::point<2> p) { ... });            // dimension 0 fastest
//
// A rect's bounds are inclusive (lo and hi both belong to it); a rect with hi < lo in some
// dimension is empty. An index space is a set of disjoint non-empty rects kept in a canonical
// order: ascending by lo, with dimension N-1 the most significant (so that iteration visits points
// with dimension 0 fastest, as Realm and the instances' default layout do). Set operations return
// new spaces and leave their operands alone. Their members are compiled once, in Rill, for 1, 2
// and 3 dimensions. See docs/data.md.
#pragma once
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace rill {

using coord_t = std::int64_t;

template <int N>
struct point {
  static_assert(N >= 1 && N <= 3, "rill::point: 1 to 3 dimensions");
  std::array<coord_t, N> x{};

  constexpr point() = default;
  template <std::integral... C>
  requires(sizeof...(C) == N) constexpr point(C... c) : x{static_cast<coord_t>(c)...} {}

  constexpr coord_t& operator[](int d) { return x[static_cast<std::size_t>(d)]; }
  constexpr coord_t operator[](int d) const { return x[static_cast<std::size_t>(d)]; }
  friend constexpr bool operator==(const point&, const point&) = default;

  template <class Archive>
  void serialize(Archive& ar) {
    for (coord_t& c : x) ar(c);
  }
};

template <int N>
struct rect {
  point<N> lo;
  point<N> hi;  // inclusive

  // The empty rect.
  constexpr rect() { hi.x.fill(-1); }
  constexpr rect(point<N> l, point<N> h) : lo(l), hi(h) {}

  constexpr bool empty() const {
    for (int d = 0; d < N; ++d)
      if (hi[d] < lo[d]) return true;
    return false;
  }
  // The number of points; throws rill::misuse_error if it does not fit in std::size_t.
  std::size_t volume() const;
  constexpr bool contains(const point<N>& p) const {
    for (int d = 0; d < N; ++d)
      if (p[d] < lo[d] || p[d] > hi[d]) return false;
    return true;
  }
  constexpr bool contains(const rect& r) const { return r.empty() || (contains(r.lo) && contains(r.hi)); }
  constexpr bool overlaps(const rect& r) const { return !intersection(r).empty(); }
  constexpr rect intersection(const rect& r) const {
    rect out;
    for (int d = 0; d < N; ++d) {
      out.lo[d] = lo[d] > r.lo[d] ? lo[d] : r.lo[d];
      out.hi[d] = hi[d] < r.hi[d] ? hi[d] : r.hi[d];
    }
    return out;
  }
  // The smallest rect holding both.
  constexpr rect bounding(const rect& r) const {
    if (empty()) return r;
    if (r.empty()) return *this;
    rect out;
    for (int d = 0; d < N; ++d) {
      out.lo[d] = lo[d] < r.lo[d] ? lo[d] : r.lo[d];
      out.hi[d] = hi[d] > r.hi[d] ? hi[d] : r.hi[d];
    }
    return out;
  }
  // Empty rects are all equal.
  friend constexpr bool operator==(const rect& a, const rect& b) {
    return (a.empty() && b.empty()) || (a.lo == b.lo && a.hi == b.hi);
  }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(lo, hi);
  }
};

template <int N>
class index_space {
 public:
  // The empty space.
  index_space() = default;
  // Dense: every point of r.
  index_space(const rect<N>& r);  // NOLINT(google-explicit-constructor): a rect is a space
  // Sparse: the points given (repeats allowed), or the union of the rects given (overlaps allowed).
  static index_space from_points(std::span<const point<N>> points);
  static index_space from_rects(std::span<const rect<N>> rects);

  bool empty() const { return rects_.empty(); }
  // Every point of bounds() belongs to the space.
  bool dense() const { return rects_.size() <= 1; }
  std::size_t volume() const;
  // The smallest rect holding the space (empty for the empty space).
  const rect<N>& bounds() const { return bounds_; }
  // The disjoint rects that make up the space, in canonical order.
  std::span<const rect<N>> rects() const { return rects_; }

  bool contains(const point<N>& p) const;
  // A dense space (one rect) holds another when it holds the other's bounds: no subtraction.
  bool contains(const index_space& other) const {
    if (other.empty()) return true;
    if (dense()) return !empty() && bounds_.contains(other.bounds_);
    return other.subtract(*this).empty();
  }

  index_space unite(const index_space& other) const;
  index_space intersect(const index_space& other) const;
  index_space subtract(const index_space& other) const;

  // f(point<N>) for every point, rect by rect, dimension 0 fastest.
  template <class F>
  void for_each_point(F&& f) const {
    for (const rect<N>& r : rects_) {
      point<N> p = r.lo;
      for (;;) {
        f(static_cast<const point<N>&>(p));
        int d = 0;
        while (d < N && p[d] == r.hi[d]) p[d] = r.lo[d], ++d;
        if (d == N) break;
        ++p[d];
      }
    }
  }

  // The same points (whatever the rects that hold them).
  friend bool operator==(const index_space& a, const index_space& b) {
    return a.rects_ == b.rects_ || (a.volume() == b.volume() && a.contains(b));
  }

  template <class Archive>
  void save(Archive& ar) const {
    ar(rects_);
  }
  template <class Archive>
  void load(Archive& ar) {
    std::vector<rect<N>> rects;
    ar(rects);
    *this = from_sent_rects(std::move(rects));
  }

 private:
  // Takes disjoint non-empty rects, merges neighbours and puts them in canonical order.
  static index_space canonical(std::vector<rect<N>> disjoint);
  // Checks what another rank sent (non-empty rects in canonical order) and adopts it.
  static index_space from_sent_rects(std::vector<rect<N>> rects);
  // The space of these disjoint non-empty rects, already in canonical order.
  static index_space adopt(std::vector<rect<N>> rects);
  template <int M>
  friend index_space<3> padded_to_3d(const index_space<M>& space);
  template <int M>
  friend index_space<M> unpadded_from_3d(const index_space<3>& space);

  std::vector<rect<N>> rects_;
  rect<N> bounds_;
  coord_t widest_ = 0;  // the largest hi - lo in dimension N-1: how far back an overlap can start
};

// An index space of fewer than 3 dimensions as one of 3 whose further coordinates are 0: how the
// data layer keeps every instance's space, whatever its dimension. The rects stay disjoint and in
// canonical order (dimension N-1 stays the most significant one that varies), so they are taken
// as they are.
template <int N>
index_space<3> padded_to_3d(const index_space<N>& space) {
  if constexpr (N == 3) {
    return space;
  } else {
    std::vector<rect<3>> rects;
    rects.reserve(space.rects().size());
    for (const rect<N>& r : space.rects()) {
      rect<3> p{point<3>{0, 0, 0}, point<3>{0, 0, 0}};
      for (int d = 0; d < N; ++d) p.lo[d] = r.lo[d], p.hi[d] = r.hi[d];
      rects.push_back(p);
    }
    return index_space<3>::adopt(std::move(rects));
  }
}

// The reverse of padded_to_3d: a space of 3 dimensions whose coordinates beyond the first N are
// all 0, as a space of N dimensions (what the padding of one of N made). Coordinates dropped are
// not checked: the caller knows the space was padded from N.
template <int N>
index_space<N> unpadded_from_3d(const index_space<3>& space) {
  if constexpr (N == 3) {
    return space;
  } else {
    std::vector<rect<N>> rects;
    rects.reserve(space.rects().size());
    for (const rect<3>& r : space.rects()) {
      rect<N> q;
      for (int d = 0; d < N; ++d) q.lo[d] = r.lo[d], q.hi[d] = r.hi[d];
      rects.push_back(q);
    }
    return index_space<N>::adopt(std::move(rects));
  }
}

}  // namespace rill
