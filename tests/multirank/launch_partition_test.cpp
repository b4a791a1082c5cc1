// Partitions of regions by their data (rill/partition_by_data.hpp): by field, image and preimage of
// data that launches wrote, spread over the ranks (a quarter per rank, or at random), against
// brute force on the same values; and what is refused.
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "data_harness.hpp"
#include "harness.hpp"
#include "rill/launch.hpp"
#include "rill/partition_by_data.hpp"

namespace rill_test {
namespace {

class launch_partitions : public ::testing::TestWithParam<setup> {};

using data::misuse_of;
using data::says;

constexpr rill::field<std::int64_t> piece{1};
constexpr rill::field<rill::point<1>> to{2};
constexpr rill::coord_t nodes_n = 64, edges_n = 150, colors = 5;

// The values the launches write (and brute force reads): a piece per node, 1 in 7 of them out of
// range (in no subregion), and a node per edge.
std::int64_t piece_of(rill::coord_t n) { return (n * 37 + 11) % 7 == 3 ? colors + 2 : (n * 13 + n / 5) % colors; }
rill::coord_t target_of(rill::coord_t e) { return (e * 29 + e / 3) % nodes_n; }

std::vector<rill::coord_t> points_of(const rill::index_space<1>& s) {
  std::vector<rill::coord_t> v;
  s.for_each_point([&](const rill::point<1>& p) { v.push_back(p[0]); });
  return v;
}

// Any rank, at random (its own seed on the issuing rank).
class scatter_mapper : public rill::mapper {
 public:
  int map_task(const rill::mapping_query&) override {
    return static_cast<int>(rng_() % static_cast<std::uint64_t>(rill::rank_n()));
  }

 private:
  std::mt19937_64 rng_{5};
};

void partitions_match_brute_force() {
  const rill::region nodes = rill::region::create(rill::rect<1>{0, nodes_n - 1}, rill::field_space{piece});
  const rill::region edges = rill::region::create(rill::rect<1>{0, edges_n - 1}, rill::field_space{to});
  const rill::partition node_quarters = rill::partition_equal(nodes, 4),
                        edge_quarters = rill::partition_equal(edges, 4);
  rill::index_launch(
      [](const rill::physical_regions& rs, std::size_t) {
        auto a = rs[0].write<std::int64_t, 1>(piece);
        rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { a[p] = piece_of(p[0]); });
      },
      node_quarters, {rill::req(node_quarters, {piece.id}, rill::privilege::write_discard)});
  rill::index_launch(
      [](const rill::physical_regions& rs, std::size_t) {
        auto a = rs[0].write<rill::point<1>, 1>(to);
        rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { a[p] = {target_of(p[0])}; });
      },
      edge_quarters, {rill::req(edge_quarters, {to.id}, rill::privilege::write_discard)});

  const rill::partition by_piece = rill::partition_by_field<1>(nodes, piece, colors);
  expect(by_piece.colors() == colors && by_piece.disjoint() && !by_piece.complete(),
         "a partition by field is not disjoint, or complete although some nodes have no color");
  for (rill::coord_t c = 0; c < colors; ++c) {
    std::vector<rill::coord_t> want;
    for (rill::coord_t n = 0; n < nodes_n; ++n)
      if (piece_of(n) == c) want.push_back(n);
    expect(points_of(by_piece.subregion(static_cast<std::size_t>(c)).space<1>()) == want,
           "a subregion by field differs from brute force");
  }

  const rill::partition reached = rill::partition_by_image<1, 1>(nodes, edges, to, edge_quarters);
  for (std::size_t q = 0; q < 4; ++q) {
    std::set<rill::coord_t> want;
    for (rill::coord_t e : points_of(edge_quarters.subregion(q).space<1>())) want.insert(target_of(e));
    expect(points_of(reached.subregion(q).space<1>()) == std::vector<rill::coord_t>(want.begin(), want.end()),
           "a subregion by image differs from brute force");
  }

  const rill::partition into = rill::partition_by_preimage<1, 1>(edges, to, node_quarters);
  expect(into.disjoint(), "the preimage of a disjoint partition is not disjoint");
  for (std::size_t q = 0; q < 4; ++q) {
    const rill::index_space<1> quarter = node_quarters.subregion(q).space<1>();
    std::vector<rill::coord_t> want;
    for (rill::coord_t e = 0; e < edges_n; ++e)
      if (quarter.contains(rill::point<1>{target_of(e)})) want.push_back(e);
    expect(points_of(into.subregion(q).space<1>()) == want, "a subregion by preimage differs from brute force");
  }
}

TEST_P(launch_partitions, partitions_by_a_regions_data_match_brute_force) {
  run_checked(GetParam(), [] {
    partitions_match_brute_force();  // a quarter per rank, read where the mapper puts it
    rill::set_mapper(std::make_shared<scatter_mapper>());
    partitions_match_brute_force();  // written and read anywhere
    rill::set_mapper(nullptr);
  });
}

TEST_P(launch_partitions, partitions_by_data_refuse_what_they_cannot_read) {
  run_checked(GetParam(), [] {
    const rill::region nodes = rill::region::create(rill::rect<1>{0, 9}, rill::field_space{piece});
    const rill::region edges = rill::region::create(rill::rect<1>{0, 9}, rill::field_space{to});
    expect(says(misuse_of([&] { (void)rill::partition_by_field<1>(edges, piece, 2); }), "field 1 is not in region"),
           "a field the region does not have");
    // Sources that are not the pointers' points: the image reads outside what it was given.
    const rill::region wider = rill::region::create(rill::rect<1>{0, 19}, rill::field_space{to});
    rill::launch(
        [](const rill::physical_regions& rs) {
          auto a = rs[0].write<rill::point<1>, 1>(to);
          rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { a[p] = {p[0] % 10}; });
        },
        {rill::req(edges, {to.id}, rill::privilege::write_discard)});
    bool refused = false;
    try {
      (void)rill::partition_by_image<1, 1>(nodes, edges, to, rill::partition_equal(wider, 2));
    } catch (const rill::poisoned_error& e) {
      refused = says(e.what(), "outside the instance");
    }
    expect(refused, "an image over points outside the pointers' region was not refused naming the cause");
  });
}

INSTANTIATE_TEST_SUITE_P(setups, launch_partitions, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
