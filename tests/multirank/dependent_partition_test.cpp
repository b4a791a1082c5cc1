// Subspaces computed from data (rill/dependent_partition.hpp): by field, image and preimage of
// instances on every rank, against the same sets built point by point from the values written;
// read only after their precondition; and failures as poisoned futures.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "harness.hpp"
#include "rill/dependent_partition.hpp"
#include "rill/instance.hpp"

namespace rill_test {
namespace {

class dependent_partitions : public ::testing::TestWithParam<setup> {};

using namespace data;  // NOLINT(google-build-using-namespace): the suite's shared names

constexpr rill::field<std::int64_t> color{1};
constexpr rill::field<rill::point<2>> target{10};
const rill::field_space graph_fields{color, target};

// What the tests write at point p of an instance: a color in [0, 6) (5 and up belong to no piece
// of 5) and a point of the 13 x 11 node grid.
template <int N>
std::int64_t color_at(const rill::point<N>& p, std::int64_t salt) {
  return (code_of(p, salt) % 6 + 6) % 6;
}
template <int N>
rill::point<2> target_at(const rill::point<N>& p, std::int64_t salt) {
  const std::int64_t c = code_of(p, salt);
  return {(c * 7 % 13 + 13) % 13, (c / 13 % 11 + 11) % 11};
}
const rill::rect<2> node_grid{{0, 0}, {12, 10}};

template <int N>
using point_set = std::set<std::array<rill::coord_t, N>>;

template <int N>
point_set<N> points_of(const rill::index_space<N>& s) {
  point_set<N> out;
  s.for_each_point([&](const rill::point<N>& p) { out.insert(p.x); });
  return out;
}

// Makes an instance of `space` on rank `owner` and writes every point's color and target once
// `after` has triggered; returns it and the event of the write.
template <int N>
std::pair<rill::instance, rill::event> written(int owner, const rill::index_space<N>& space, std::int64_t salt,
                                               rill::event after = rill::event::none()) {
  auto [inst, ready] = rill::instance::create(rill::memory::system(owner), space, graph_fields);
  const rill::event done = rill::proc(owner).spawn(
      rill::after(rill::merge(ready, after)),
      [](rill::instance i, const rill::index_space<N>& s, std::int64_t salt_) {
        rill::accessor<std::int64_t, N> c(i, color);
        rill::accessor<rill::point<2>, N> t(i, target);
        s.for_each_point([&](const rill::point<N>& p) {
          c[p] = color_at(p, salt_);
          t[p] = target_at(p, salt_);
        });
      },
      inst, space, salt);
  return {inst, done};
}

template <int N>
void check_all_three(const rill::index_space<N>& space, const rill::index_space<N>& over) {
  const std::int64_t salt = 3;
  for (int owner = 0; owner < rill::rank_n(); ++owner) {
    // A gate the tests open only after asking: nothing may be read before the write it allows.
    rill::user_event gate = rill::user_event::create();
    auto [inst, wrote] = written<N>(owner, space, salt, gate);
    auto by_field = rill::subspaces_by_field(inst, color, over, 5, wrote);
    std::vector<point_set<N>> pieces(5);
    over.for_each_point([&](const rill::point<N>& p) {
      if (color_at(p, salt) < 5) pieces[static_cast<std::size_t>(color_at(p, salt))].insert(p.x);
    });
    gate.trigger();
    const std::vector<rill::index_space<N>> got = by_field.get();
    expect(got.size() == 5, "subspaces_by_field: not one subspace per color");
    for (std::size_t c = 0; c < 5; ++c) expect(points_of(got[c]) == pieces[c], "subspaces_by_field: a piece differs");

    // Images of the pieces, within the node grid less a window.
    const rill::index_space<2> nodes = rill::index_space<2>(node_grid).subtract(rill::rect<2>{{4, 3}, {8, 6}});
    const std::vector<rill::index_space<2>> images = rill::subspaces_by_image(inst, target, got, nodes, wrote).get();
    expect(images.size() == 5, "subspaces_by_image: not one subspace per source");
    for (std::size_t c = 0; c < 5; ++c) {
      point_set<2> want;
      got[c].for_each_point([&](const rill::point<N>& p) {
        const rill::point<2> q = target_at(p, salt);
        if (nodes.contains(q)) want.insert(q.x);
      });
      expect(points_of(images[c]) == want, "subspaces_by_image: an image differs");
    }

    // Preimages of overlapping bands of the node grid, and of an empty one.
    std::vector<rill::index_space<2>> bands;
    for (rill::coord_t y = 0; y < 11; y += 3) bands.emplace_back(rill::rect<2>{{0, y}, {12, y + 4}});
    bands.emplace_back();
    const std::vector<rill::index_space<N>> pre = rill::subspaces_by_preimage(inst, target, over, bands, wrote).get();
    expect(pre.size() == bands.size(), "subspaces_by_preimage: not one subspace per target");
    for (std::size_t j = 0; j < bands.size(); ++j) {
      point_set<N> want;
      over.for_each_point([&](const rill::point<N>& p) {
        if (bands[j].contains(target_at(p, salt))) want.insert(p.x);
      });
      expect(points_of(pre[j]) == want, "subspaces_by_preimage: a preimage differs");
    }
    inst.destroy().wait();
  }
}

TEST_P(dependent_partitions, by_field_image_and_preimage_match_the_values_written) {
  run_checked(GetParam(), [] {
    check_all_three<1>(rill::rect<1>{-20, 300}, rill::rect<1>{-20, 300});
    const rill::index_space<2> grid(rill::rect<2>{{0, 0}, {30, 17}});
    check_all_three<2>(grid, grid.subtract(rill::rect<2>{{5, 5}, {20, 12}}));
    std::vector<rill::point<3>> pts;
    for (int i = 0; i < 200; ++i) pts.push_back({i % 7, (i * 3) % 6, (i * 5) % 4});
    check_all_three<3>(rill::rect<3>{{0, 0, 0}, {6, 5, 3}}, rill::index_space<3>::from_points(pts));
  });
}

TEST_P(dependent_partitions, failures_poison_the_future) {
  run_checked(GetParam(), [] {
    const int owner = rill::rank_n() - 1;
    auto [inst, wrote] = written<1>(owner, rill::rect<1>{0, 99}, 1);
    wrote.wait();
    // A poisoned precondition.
    rill::user_event bad = rill::user_event::create();
    auto f = rill::subspaces_by_field(inst, color, rill::index_space<1>(rill::rect<1>{0, 9}), 2, bad);
    bad.poison("the producer failed");
    expect(says(poison_of(f), "the producer failed"), "a poisoned precondition did not poison the future");
    // A field the instance does not hold, and points outside it.
    constexpr rill::field<std::int64_t> missing{99};
    expect(says(poison_of(rill::subspaces_by_field(inst, missing, rill::index_space<1>(rill::rect<1>{0, 9}), 2)), "99"),
           "a missing field was not named");
    expect(says(poison_of(rill::subspaces_by_preimage(inst, target, rill::index_space<1>(rill::rect<1>{50, 150}),
                                                      std::vector<rill::index_space<2>>{node_grid})),
                "outside the instance"),
           "points outside the instance were not refused");
    inst.destroy().wait();
  });
}

INSTANTIATE_TEST_SUITE_P(setups, dependent_partitions, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
