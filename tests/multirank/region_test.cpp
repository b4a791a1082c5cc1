// Logical regions and partitions (rill/region.hpp, rill/partition.hpp): each way to partition
// against the points it should give, found point by point; the tree's overlap test against the
// points of random region trees, asked on a rank that did not make them; handles made on one
// rank used on others; and what is refused.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "data_harness.hpp"
#include "harness.hpp"
#include "rill/partition.hpp"
#include "rill/region.hpp"

namespace rill_test {
namespace {

class regions : public ::testing::TestWithParam<setup> {};

using namespace data;  // NOLINT(google-build-using-namespace): the suite's shared names

template <int N>
std::set<std::array<rill::coord_t, N>> points_of(const rill::index_space<N>& s) {
  std::set<std::array<rill::coord_t, N>> out;
  s.for_each_point([&](const rill::point<N>& p) { out.insert(p.x); });
  return out;
}

// A sparse space of about `n` random points in [0, side)^N.
template <int N>
rill::index_space<N> random_space(std::mt19937_64& rng, int side, int n) {
  std::vector<rill::point<N>> pts;
  for (int i = 0; i < n; ++i) {
    rill::point<N> p;
    for (int d = 0; d < N; ++d) p[d] = static_cast<rill::coord_t>(rng() % static_cast<std::uint64_t>(side));
    pts.push_back(p);
  }
  return rill::index_space<N>::from_points(pts);
}

// Whether p's subregions hold exactly `expected` (by color), and its flags say what they are.
template <int N>
void expect_subregions(rill::partition p, const std::vector<std::set<std::array<rill::coord_t, N>>>& expected,
                       const std::set<std::array<rill::coord_t, N>>& parent, const std::string& what) {
  expect(p.colors() == expected.size(), what + ": wrong number of colors");
  bool disjoint = true;
  std::set<std::array<rill::coord_t, N>> covered;
  for (std::size_t c = 0; c < expected.size(); ++c) {
    const rill::region sub = p.subregion(c);
    expect(points_of(sub.space<N>()) == expected[c], what + ": subregion " + std::to_string(c) + " holds other points");
    expect(sub.parent() == p && sub.color() == c, what + ": a subregion does not know its partition");
    for (const auto& x : expected[c]) disjoint = covered.insert(x).second && disjoint;
  }
  expect(p.disjoint() == disjoint, what + ": the disjoint flag is wrong");
  expect(p.complete() == (covered == parent), what + ": the complete flag is wrong");
}

template <int N>
void check_equal(const rill::index_space<N>& space, std::size_t colors) {
  const rill::region r = rill::region::create(space, fields);
  const rill::partition p = rill::partition_equal(r, colors);
  // Point i of the parent (canonical order) belongs to piece c when c*V/k <= i < (c+1)*V/k.
  const std::size_t total = space.volume();
  std::vector<std::set<std::array<rill::coord_t, N>>> expected(colors);
  std::size_t i = 0;
  space.for_each_point([&](const rill::point<N>& q) {
    std::size_t c = 0;
    while (c + 1 < colors && (c + 1) * total / colors <= i) ++c;
    expected[c].insert(q.x);
    ++i;
  });
  expect_subregions<N>(p, expected, points_of(space), "partition_equal into " + std::to_string(colors));
  expect(p.parent() == r, "partition_equal: the partition does not know its parent");
}

TEST_P(regions, equal_partitions_are_runs_of_equal_volume) {
  run_checked(GetParam(), [] {
    std::mt19937_64 rng(5);
    for (std::size_t k : {1, 3, 4, 7}) {
      check_equal<1>(rill::rect<1>{-5, 94}, k);
      check_equal<2>(rill::rect<2>{{0, 0}, {9, 6}}, k);
      check_equal<3>(rill::rect<3>{{1, 2, 3}, {4, 4, 6}}, k);
      check_equal<1>(random_space<1>(rng, 200, 60), k);
      check_equal<2>(random_space<2>(rng, 12, 70), k);
      check_equal<3>(random_space<3>(rng, 6, 90), k);
    }
    check_equal<2>(rill::rect<2>{{0, 0}, {2, 1}}, 10);  // more colors than points: empty pieces
  });
}

template <int N>
void check_blocks(const rill::index_space<N>& space, const rill::point<N>& extent) {
  const rill::region r = rill::region::create(space, fields);
  const rill::partition p = rill::partition_by_blocks(r, extent);
  const rill::rect<N> box = space.bounds();
  std::array<std::size_t, N> tiles{};
  std::size_t count = 1;
  for (int d = 0; d < N; ++d) {
    tiles[d] = static_cast<std::size_t>((box.hi[d] - box.lo[d] + extent[d]) / extent[d]);
    count *= tiles[d];
  }
  std::vector<std::set<std::array<rill::coord_t, N>>> expected(count);
  space.for_each_point([&](const rill::point<N>& q) {
    std::size_t c = 0;
    for (int d = N - 1; d >= 0; --d) c = c * tiles[d] + static_cast<std::size_t>((q[d] - box.lo[d]) / extent[d]);
    expected[c].insert(q.x);
  });
  expect_subregions<N>(p, expected, points_of(space), "partition_by_blocks");
}

TEST_P(regions, blocks_tile_the_bounding_rect) {
  run_checked(GetParam(), [] {
    std::mt19937_64 rng(6);
    check_blocks<1>(rill::rect<1>{3, 40}, rill::point<1>{5});
    check_blocks<2>(rill::rect<2>{{0, 0}, {9, 6}}, rill::point<2>{4, 3});
    check_blocks<2>(rill::rect<2>{{-2, 1}, {9, 6}}, rill::point<2>{20, 1});
    check_blocks<3>(rill::rect<3>{{0, 0, 0}, {5, 4, 3}}, rill::point<3>{2, 5, 3});
    check_blocks<2>(random_space<2>(rng, 16, 50), rill::point<2>{5, 4});
    check_blocks<3>(random_space<3>(rng, 8, 60), rill::point<3>{3, 3, 3});
  });
}

TEST_P(regions, colorings_and_subspaces_give_the_points_asked_for) {
  run_checked(GetParam(), [] {
    std::mt19937_64 rng(7);
    const rill::index_space<2> space = random_space<2>(rng, 10, 60);
    const auto all = points_of(space);
    const rill::region r = rill::region::create(space, fields);
    // A coloring that leaves some points out (color 3 of 3 colors).
    const auto color_of = [](const rill::point<2>& p) { return static_cast<std::size_t>((p[0] * 7 + p[1]) % 4); };
    std::vector<std::set<std::array<rill::coord_t, 2>>> expected(3);
    space.for_each_point([&](const rill::point<2>& p) {
      if (color_of(p) < 3) expected[color_of(p)].insert(p.x);
    });
    expect_subregions<2>(rill::partition_by_coloring<2>(r, 3, color_of), expected, all, "partition_by_coloring");

    // Subspaces, aliased (each a window of the points and its neighbour's) or not.
    for (bool aliased : {false, true}) {
      std::vector<rill::index_space<2>> subs;
      std::vector<std::set<std::array<rill::coord_t, 2>>> want;
      for (int c = 0; c < 4; ++c) {
        const rill::rect<2> window{{0, c * 3}, {9, c * 3 + (aliased ? 3 : 2)}};
        subs.push_back(space.intersect(window));
        want.push_back(points_of(subs.back()));
      }
      expect_subregions<2>(rill::partition_by_subspaces(r, subs), want, all, "partition_by_subspaces");
    }
  });
}

// A random tree: partitions of random regions already in it, made by random ranks in every way.
std::vector<rill::region> random_tree(std::mt19937_64& rng, rill::region root, int partitions) {
  std::vector<rill::region> all{root};
  for (int i = 0; i < partitions; ++i) {
    const rill::region parent = all[rng() % all.size()];
    const int maker = static_cast<int>(rng() % static_cast<std::uint64_t>(rill::rank_n()));
    const int how = static_cast<int>(rng() % 4);
    const std::uint64_t salt = rng();
    const rill::partition p = rill::rpc(
                                  maker,
                                  [](rill::region up, int way, std::uint64_t s) {
                                    switch (way) {
                                      case 0: return rill::partition_equal(up, 1 + s % 4);
                                      case 1:
                                        return rill::partition_by_blocks(up, rill::point<2>{1 + s % 5, 1 + s / 5 % 5});
                                      case 2:
                                        return rill::partition_by_coloring<2>(up, 3, [s](const rill::point<2>& q) {
                                          return static_cast<std::size_t>((q[0] * 31 + q[1] * 17 + s) % 4);
                                        });
                                      default: {
                                        // Overlapping windows of the parent's bounding rect.
                                        const rill::index_space<2> sp = up.space<2>();
                                        const rill::rect<2> b = sp.bounds();
                                        std::vector<rill::index_space<2>> subs;
                                        for (int c = 0; c < 3; ++c) {
                                          const rill::coord_t lo =
                                              b.lo[0] + static_cast<rill::coord_t>((s >> (8 * c)) % 6);
                                          subs.push_back(sp.intersect(rill::rect<2>{{lo, b.lo[1]}, {lo + 3, b.hi[1]}}));
                                        }
                                        return rill::partition_by_subspaces(up, subs);
                                      }
                                    }
                                  },
                                  parent, how, salt)
                                  .get();
    for (std::size_t c = 0; c < p.colors(); ++c) all.push_back(p.subregion(c));
  }
  return all;
}

TEST_P(regions, the_tree_tells_overlap_as_the_points_do_on_every_rank) {
  run_checked(GetParam(), [] {
    std::mt19937_64 rng(11);
    for (int round = 0; round < 3; ++round) {
      const rill::region root = rill::region::create(random_space<2>(rng, 12, 90), fields);
      const rill::region other_tree = rill::region::create(rill::rect<2>{{0, 0}, {11, 11}}, fields);
      std::vector<rill::region> all = random_tree(rng, root, 8);
      all.push_back(other_tree);
      std::vector<std::uint8_t> expected;
      for (const rill::region& a : all) {
        const auto pa = points_of(a.space<2>());
        for (const rill::region& b : all) {
          bool meet = false;
          if (a.root() == b.root())
            for (const auto& x : points_of(b.space<2>())) meet = meet || pa.count(x) != 0;
          expected.push_back(meet ? 1 : 0);
        }
      }
      // Asked on the last rank, which made at most some of the nodes and copies the rest.
      const std::vector<std::uint8_t> seen = rill::rpc(
                                                 rill::rank_n() - 1,
                                                 [](const std::vector<rill::region>& regions) {
                                                   std::vector<std::uint8_t> out;
                                                   for (const rill::region& a : regions)
                                                     for (const rill::region& b : regions)
                                                       out.push_back(rill::regions_overlap(a, b) ? 1 : 0);
                                                   return out;
                                                 },
                                                 all)
                                                 .get();
      expect(seen == expected, "regions_overlap disagrees with the regions' points");
    }
  });
}

TEST_P(regions, handles_work_on_every_rank) {
  run_checked(GetParam(), [] {
    const rill::region grid = rill::region::create(rill::rect<2>{{0, 0}, {7, 7}}, fields);
    const rill::partition rows = rill::partition_equal(grid, 4);
    for (int r = 0; r < rill::rank_n(); ++r) {
      // Another rank partitions a subregion made here, and a third reads what it made.
      const rill::partition cols = rill::rpc(
                                       r,
                                       [](rill::region sub) {
                                         return rill::partition_by_blocks(sub, rill::point<2>{1, 2});
                                       },
                                       rows.subregion(1))
                                       .get();
      const int reader = (r + 1) % rill::rank_n();
      const auto answer =
          rill::rpc(
              reader,
              [](rill::partition p) {
                const rill::region cell = p.subregion(3);
                return std::make_tuple(cell.space<2>().bounds(), cell.root().parent() == rill::partition(),
                                       cell.root().volume(), cell.fields() == fields, cell.parent().parent().color());
              },
              cols)
              .get();
      // Row 1 holds points (x, 2..3); its tile 3 is column 3.
      expect(std::get<0>(answer) == rill::rect<2>{{3, 2}, {3, 3}}, "a subregion's points read wrong on another rank");
      expect(std::get<1>(answer), "a root seen on another rank has a parent");
      expect(std::get<2>(answer) == 64 && std::get<3>(answer) && std::get<4>(answer) == 1,
             "a tree read on another rank lost its root's volume, fields or a color");
    }
  });
}

TEST_P(regions, misuse_is_refused_naming_the_cause) {
  run_checked(GetParam(), [] {
    const rill::region line = rill::region::create(rill::rect<1>{0, 9}, fields);
    expect(says(misuse_of([&] { (void)line.space<2>(); }), "has 1 dimensions"), "space<2> of a 1-D region");
    expect(says(misuse_of([&] { (void)rill::partition_equal(line, 0); }), "at least one color"), "zero colors");
    expect(says(misuse_of([&] { (void)rill::partition_equal(line, 2).subregion(2); }), "color 2 of a partition of 2"),
           "a color out of range");
    expect(
        says(misuse_of([&] { (void)rill::partition_by_blocks(line, rill::point<1>{0}); }), "extent must be at least 1"),
        "a block of extent 0");
    expect(says(misuse_of([&] {
                  (void)rill::partition_by_subspaces(line, std::vector<rill::index_space<1>>{rill::rect<1>{5, 12}});
                }),
                "subspace 0 is not within region"),
           "a subspace outside its parent");
    expect(says(misuse_of([&] {
                  (void)rill::partition_by_subspaces(line,
                                                     std::vector<rill::index_space<2>>{rill::rect<2>{{0, 0}, {1, 0}}});
                }),
                "subspaces of 2 dimensions for a region of 1"),
           "subspaces of other dimensions");
    expect(says(misuse_of([&] { (void)rill::region().volume(); }), "handle is empty"), "an empty handle");
    expect(says(misuse_of([&] { (void)rill::partition().parent(); }), "handle is empty"), "an empty partition");
    // A handle no rank made: a forged id on another rank's number.
    const int other = rill::rank_n() - 1;
    rill::region forged;
    const std::uint64_t bad = (static_cast<std::uint64_t>(other) << 40) | 0xfffff;
    std::memcpy(static_cast<void*>(&forged), &bad, sizeof bad);  // the id, the handle's first word
    expect(says(misuse_of([&] { (void)forged.volume(); }), "made no region") ||
               says(misuse_of([&] { (void)forged.volume(); }), "no region has id"),
           "a forged handle");
  });
}

INSTANTIATE_TEST_SUITE_P(setups, regions, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
