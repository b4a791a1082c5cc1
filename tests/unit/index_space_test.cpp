// Index spaces and field spaces (include/rill/index_space.hpp, field_space.hpp), checked against a
// model: a set of points in a small box, where every operation is a loop over the box.
#include "rill/index_space.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "rill/error.hpp"
#include "rill/field_space.hpp"
#include "rill/serialization.hpp"

namespace {

using rill::index_space;
using rill::point;
using rill::rect;

template <int N>
using model = std::set<std::array<rill::coord_t, N>>;

constexpr rill::coord_t box = 9;  // coordinates in [-1, box - 2]: negative ones too

template <int N>
model<N> points_of(const index_space<N>& s) {
  model<N> out;
  s.for_each_point([&](const point<N>& p) { EXPECT_TRUE(out.insert(p.x).second) << "a point visited twice"; });
  return out;
}

// Every point of the box: the space holds exactly the model's points, its rects are disjoint,
// non-empty and in canonical order, and its volume and bounds agree.
template <int N>
void expect_same(const index_space<N>& s, const model<N>& m) {
  EXPECT_EQ(points_of(s), m);
  EXPECT_EQ(s.volume(), m.size());
  EXPECT_EQ(s.empty(), m.empty());
  const auto rs = s.rects();
  for (std::size_t i = 0; i < rs.size(); ++i) {
    EXPECT_FALSE(rs[i].empty());
    for (std::size_t j = i + 1; j < rs.size(); ++j) EXPECT_FALSE(rs[i].overlaps(rs[j]));
  }
  point<N> p;
  const auto visit = [&](auto&& self, int d) -> void {
    if (d < 0) {
      EXPECT_EQ(s.contains(p), m.count(p.x) == 1);
      return;
    }
    for (p[d] = -1; p[d] < box - 1; ++p[d]) self(self, d - 1);
  };
  visit(visit, N - 1);
  if (!m.empty()) {
    for (int d = 0; d < N; ++d) {
      rill::coord_t lo = box, hi = -box;
      for (const auto& q : m)
        lo = std::min(lo, q[static_cast<std::size_t>(d)]), hi = std::max(hi, q[static_cast<std::size_t>(d)]);
      EXPECT_EQ(s.bounds().lo[d], lo);
      EXPECT_EQ(s.bounds().hi[d], hi);
    }
  }
}

// On a `line`, every point has 2 in the dimensions above 0 (the shape of a 1-D space padded to
// more dimensions, which the set operations search differently).
template <int N>
point<N> random_point(std::mt19937_64& rng, bool line) {
  std::uniform_int_distribution<rill::coord_t> c(-1, box - 2);
  point<N> p;
  for (int d = 0; d < N; ++d) p[d] = line && d > 0 ? 2 : c(rng);
  return p;
}

// A random space built the way users build them: from points, from rects, or dense.
template <int N>
std::pair<index_space<N>, model<N>> random_space(std::mt19937_64& rng, bool line) {
  model<N> m;
  switch (rng() % 3) {
    case 0: {
      std::vector<point<N>> pts;
      const std::size_t n = rng() % 60;
      for (std::size_t i = 0; i < n; ++i) pts.push_back(random_point<N>(rng, line));
      for (const auto& p : pts) m.insert(p.x);
      return {index_space<N>::from_points(pts), m};
    }
    case 1: {
      std::vector<rect<N>> rs;
      const std::size_t n = rng() % 6;
      for (std::size_t i = 0; i < n; ++i) {
        point<N> a = random_point<N>(rng, line), b = random_point<N>(rng, line);
        rect<N> r;
        for (int d = 0; d < N; ++d) r.lo[d] = std::min(a[d], b[d]), r.hi[d] = std::max(a[d], b[d]);
        rs.push_back(r);
      }
      auto s = index_space<N>::from_rects(rs);
      for (const auto& r : rs) index_space<N>(r).for_each_point([&](const point<N>& p) { m.insert(p.x); });
      return {s, m};
    }
    default: {
      const point<N> a = random_point<N>(rng, line), b = random_point<N>(rng, line);
      const rect<N> r(a, b);  // empty unless a <= b in every dimension
      index_space<N> s(r);
      if (!r.empty()) index_space<N>(r).for_each_point([&](const point<N>& p) { m.insert(p.x); });
      return {s, m};
    }
  }
}

// a and b on lines or anywhere in the box, as `lines` says (bit 0: a, bit 1: b).
template <int N>
void check_set_operations(std::uint64_t seed, unsigned lines = 0) {
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " round " << round);
    const auto [a, ma] = random_space<N>(rng, (lines & 1) != 0);
    const auto [b, mb] = random_space<N>(rng, (lines & 2) != 0);
    expect_same<N>(a, ma);
    model<N> u = ma, i, d;
    u.insert(mb.begin(), mb.end());
    for (const auto& p : ma) (mb.count(p) ? i : d).insert(p);
    expect_same<N>(a.unite(b), u);
    expect_same<N>(a.intersect(b), i);
    expect_same<N>(a.subtract(b), d);
    EXPECT_EQ(a.contains(b), std::includes(ma.begin(), ma.end(), mb.begin(), mb.end()));
    EXPECT_EQ(a == b, ma == mb);
    EXPECT_TRUE(a.unite(b) == b.unite(a));
  }
}

TEST(IndexSpace, SetOperationsMatchTheModel1D) { check_set_operations<1>(1); }
TEST(IndexSpace, SetOperationsMatchTheModel2D) { check_set_operations<2>(2); }
TEST(IndexSpace, SetOperationsMatchTheModel3D) { check_set_operations<3>(3); }
TEST(IndexSpace, SetOperationsOnLinesMatchTheModel) {
  for (unsigned lines = 1; lines <= 3; ++lines) {
    check_set_operations<2>(4 + lines, lines);
    check_set_operations<3>(8 + lines, lines);
  }
}

TEST(IndexSpace, RectBasics) {
  const rect<2> r{{0, 0}, {3, 4}};
  EXPECT_EQ(r.volume(), 20u);
  EXPECT_TRUE(rect<2>().empty());
  EXPECT_EQ(rect<2>().volume(), 0u);
  EXPECT_TRUE(r.contains(point<2>{3, 4}));
  EXPECT_FALSE(r.contains(point<2>{4, 0}));
  EXPECT_EQ(r.intersection(rect<2>{{2, 2}, {9, 9}}), (rect<2>{{2, 2}, {3, 4}}));
  EXPECT_TRUE(r.intersection(rect<2>{{5, 5}, {9, 9}}).empty());
  EXPECT_EQ(rect<2>().bounding(r), r);
  // Empty rects are equal whatever their bounds.
  EXPECT_EQ((rect<1>{5, 2}), (rect<1>{9, 0}));
}

TEST(IndexSpace, DenseAndSparse) {
  const index_space<2> dense(rect<2>{{0, 0}, {9, 9}});
  EXPECT_TRUE(dense.dense());
  const auto holed = dense.subtract(rect<2>{{1, 1}, {8, 8}});
  EXPECT_FALSE(holed.dense());
  EXPECT_EQ(holed.volume(), 36u);
  EXPECT_EQ(holed.bounds(), (rect<2>{{0, 0}, {9, 9}}));
  // The hole put back gives the dense space again, as one rect.
  const auto whole = holed.unite(rect<2>{{1, 1}, {8, 8}});
  EXPECT_TRUE(whole.dense());
  EXPECT_EQ(whole.rects().size(), 1u);
}

TEST(IndexSpace, PointsBecomeRuns) {
  std::vector<point<1>> pts;
  for (int i = 0; i < 1000; ++i) pts.push_back(point<1>{(i / 10) * 20 + i % 10});  // runs of 10, gaps of 10
  const auto s = index_space<1>::from_points(pts);
  EXPECT_EQ(s.rects().size(), 100u);
  EXPECT_EQ(s.volume(), 1000u);
  EXPECT_TRUE(s.contains(point<1>{1989}));
  EXPECT_FALSE(s.contains(point<1>{1990}));
}

TEST(IndexSpace, IterationIsDimensionZeroFastest) {
  std::vector<point<2>> seen;
  index_space<2>(rect<2>{{0, 0}, {1, 1}}).for_each_point([&](const point<2>& p) { seen.push_back(p); });
  EXPECT_EQ(seen, (std::vector<point<2>>{{0, 0}, {1, 0}, {0, 1}, {1, 1}}));
}

TEST(IndexSpace, ExtremeCoordinates) {
  constexpr auto lo = std::numeric_limits<rill::coord_t>::min(), hi = std::numeric_limits<rill::coord_t>::max();
  const index_space<1> ends = index_space<1>::from_points(std::vector<point<1>>{{lo}, {hi}, {hi - 1}});
  EXPECT_EQ(ends.volume(), 3u);
  EXPECT_TRUE(ends.contains(point<1>{lo}));
  EXPECT_EQ(ends.subtract(rect<1>{hi, hi}).volume(), 2u);
  EXPECT_THROW((void)rect<1>(lo, hi).volume(), rill::misuse_error);  // 2^64 points
  EXPECT_THROW((void)rect<3>({0, 0, 0}, {1 << 30, 1 << 30, 1 << 30}).volume(), rill::misuse_error);
}

TEST(IndexSpace, TravelsInMessages) {
  const auto s = index_space<3>::from_rects(std::vector<rect<3>>{{{0, 0, 0}, {2, 2, 2}}, {{5, 5, 5}, {6, 7, 8}}});
  std::vector<std::byte> bytes;
  rill::detail::serialize_into(bytes, s);
  const auto [back] = rill::detail::deserialize_tuple<std::tuple<index_space<3>>>(bytes.data(), bytes.size());
  EXPECT_EQ(back.rects().size(), s.rects().size());
  EXPECT_TRUE(back == s);
  EXPECT_EQ(back.bounds(), s.bounds());
  // Rects out of order are not what any rank sends.
  std::vector<std::byte> bad;
  rill::detail::serialize_into(bad, std::vector<rect<1>>{{5, 6}, {0, 1}});
  EXPECT_THROW((rill::detail::deserialize_tuple<std::tuple<index_space<1>>>(bad.data(), bad.size())),
               rill::decode_error);
}

TEST(FieldSpace, FieldsByIdAndSize) {
  constexpr rill::field<double> voltage{7};
  constexpr rill::field<float> charge{2};
  rill::field_space fs{voltage, charge};
  fs.add(4, 24);
  EXPECT_EQ(fs.bytes_of(voltage), 8u);
  EXPECT_EQ(fs.bytes_of(4), 24u);
  EXPECT_EQ(fs.bytes_per_point(), 36u);
  ASSERT_EQ(fs.fields().size(), 3u);
  EXPECT_EQ(fs.fields()[0].id, 2u);  // sorted by id
  EXPECT_EQ(fs, (rill::field_space{charge, voltage}.add(4, 24)));
  EXPECT_THROW(fs.add(7, 8), rill::misuse_error);
  EXPECT_THROW(fs.add(9, 0), rill::misuse_error);
  EXPECT_THROW((void)fs.bytes_of(3), rill::misuse_error);
  EXPECT_FALSE(fs.has(3));

  std::vector<std::byte> bytes;
  rill::detail::serialize_into(bytes, fs);
  const auto [back] = rill::detail::deserialize_tuple<std::tuple<rill::field_space>>(bytes.data(), bytes.size());
  EXPECT_EQ(back, fs);
}

}  // namespace
