// The reduce privilege of launches (rill/launch.hpp): reductions by many tasks into shared points
// run at once and are applied exactly once; a reduction with another operator, or a read, waits
// for them; reductions move only their results; and what is refused.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "harness.hpp"
#include "launch_harness.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"

namespace rill_test {
namespace {

class launch_reductions : public ::testing::TestWithParam<setup> {};

using data::misuse_of;
using data::poison_of;
using data::says;

constexpr rill::field<std::int64_t> count{1};
constexpr rill::field<double> weight{2};
using sum_op = rill::reduce::sum<std::int64_t>;
using max_op = rill::reduce::max<std::int64_t>;
constexpr rill::coord_t points = 40;

void set_to(const rill::physical_regions& rs, std::int64_t v) {
  auto acc = rs[0].write<std::int64_t, 1>(count);
  rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] = v; });
}
void read_counts(const rill::physical_regions& rs, rill::promise<std::vector<std::int64_t>> out) {
  auto acc = rs[0].read<std::int64_t, 1>(count);
  std::vector<std::int64_t> v;
  rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { v.push_back(acc[p]); });
  out.put(std::move(v));
}
std::vector<std::int64_t> counts_of(rill::region r) {
  rill::promise<std::vector<std::int64_t>> out;
  rill::launch(read_counts, {rill::req(r, {count.id}, rill::privilege::read_only)}, out);
  return out.get_future().get();
}

// Windows of 10 points every 5: each point but the first and last five lies in two.
rill::partition windows_of(rill::region r) {
  std::vector<rill::index_space<1>> w;
  for (rill::coord_t lo = 0; lo + 9 < points; lo += 5) w.emplace_back(rill::rect<1>{lo, lo + 9});
  return rill::partition_by_subspaces(r, w);
}

TEST_P(launch_reductions, reductions_into_shared_points_are_applied_once_each) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{count});
    const rill::partition windows = windows_of(root);
    rill::launch(set_to, {rill::req(root, {count.id}, rill::privilege::write_discard)}, std::int64_t{100});
    // Every window adds 1 + its color to each of its points, twice over.
    for (int round = 0; round < 2; ++round)
      rill::index_launch(
          [](const rill::physical_regions& rs, std::size_t c) {
            auto r = rs[0].reduce<sum_op, 1>(count);
            rs[0].reg.space<1>().for_each_point(
                [&](const rill::point<1>& p) { r(p, 1 + static_cast<std::int64_t>(c)); });
          },
          windows, {rill::req(windows, {count.id}, rill::reduce_with<sum_op>())});
    std::vector<std::int64_t> want(points, 100);
    for (std::size_t c = 0; c < windows.colors(); ++c)
      windows.subregion(c).space<1>().for_each_point([&](const rill::point<1>& p) {
        want[static_cast<std::size_t>(p[0])] += 2 * (1 + static_cast<std::int64_t>(c));
      });
    // A read of part of the region first: the rest stays pending until the whole is read.
    const rill::region left = rill::partition_equal(root, 2).subregion(0);
    const std::vector<std::int64_t> part = counts_of(left);
    expect(part == std::vector<std::int64_t>(want.begin(), want.begin() + points / 2),
           "a read of half the region saw other sums");
    expect(counts_of(root) == want, "the reductions were not each applied once");
    expect(counts_of(root) == want, "a second read saw the reductions applied again");
  });
}

TEST_P(launch_reductions, same_operator_reductions_run_while_an_earlier_one_waits) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{count});
    rill::launch(set_to, {rill::req(root, {count.id}, rill::privilege::write_discard)}, std::int64_t{0}).wait();
    const auto add_one = [](const rill::physical_regions& rs) {
      auto r = rs[0].reduce<sum_op, 1>(count);
      rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { r(p, 1); });
    };
    const auto raise_to_five = [](const rill::physical_regions& rs) {
      auto r = rs[0].reduce<max_op, 1>(count);
      rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { r(p, 5); });
    };
    rill::user_event gate = rill::user_event::create();
    const rill::event held =
        rill::launch(rill::after(gate), add_one, {rill::req(root, {count.id}, rill::reduce_with<sum_op>())});
    // The same operator on the same points: it does not wait for `held`.
    rill::launch(add_one, {rill::req(root, {count.id}, rill::reduce_with<sum_op>())}).wait();
    // Another operator does, and so does a read.
    const rill::event other = rill::launch(raise_to_five, {rill::req(root, {count.id}, rill::reduce_with<max_op>())});
    rill::promise<std::vector<std::int64_t>> seen;
    const rill::event read = rill::launch(read_counts, {rill::req(root, {count.id}, rill::privilege::read_only)}, seen);
    // Something independent issued after them runs to its end meanwhile.
    const rill::region elsewhere = rill::region::create(rill::rect<1>{0, 3}, rill::field_space{count});
    rill::launch(add_one, {rill::req(elsewhere, {count.id}, rill::reduce_with<sum_op>())}).wait();
    expect(!held.has_triggered() && !other.has_triggered() && !read.has_triggered(),
           "a launch ran before the reduction it conflicts with");
    gate.trigger();
    // Both sums (2) were applied before the max (5): every point holds 5.
    expect(seen.get_future().get() == std::vector<std::int64_t>(points, 5), "the reductions applied out of order");
    // And the sums after the max apply on top of it.
    rill::launch(add_one, {rill::req(root, {count.id}, rill::reduce_with<sum_op>())});
    expect(counts_of(root) == std::vector<std::int64_t>(points, 6), "a sum after a max was not applied on top");
  });
}

TEST_P(launch_reductions, a_reduction_moves_its_results_not_the_data) {
  run_checked(GetParam(), [] {
    auto where = std::make_shared<fixed_mapper>();
    rill::set_mapper(where);
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{count});
    rill::launch(set_to, {rill::req(root, {count.id}, rill::privilege::write_discard)}, std::int64_t{7}).wait();
    // Reduced on the last rank: no data comes in for it; its values are applied to the data where
    // it is when the next read (on rank 0) needs them.
    where->rank = rill::rank_n() - 1;
    const rill::launch_counts before = rill::launch_counts_here();
    rill::launch(
        [](const rill::physical_regions& rs) {
          auto r = rs[0].reduce<sum_op, 1>(count);
          rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { r(p, p[0]); });
        },
        {rill::req(root, {count.id}, rill::reduce_with<sum_op>())})
        .wait();
    const rill::launch_counts reduced = rill::launch_counts_here();
    expect(reduced.copies == before.copies && reduced.reductions == before.reductions,
           "a reduction brought data in or was applied before anyone needed it");
    where->rank = 0;
    std::vector<std::int64_t> want;
    for (rill::coord_t p = 0; p < points; ++p) want.push_back(7 + p);
    expect(counts_of(root) == want, "the reduction's values were not applied");
    const rill::launch_counts read = rill::launch_counts_here();
    expect(read.reductions == reduced.reductions + 1 && read.copies == reduced.copies,
           "the read did not apply the reduction once, or copied the data");
    rill::set_mapper(nullptr);
  });
}

TEST_P(launch_reductions, invalid_reductions_are_refused_naming_the_cause) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, 9}, rill::field_space{count, weight});
    const auto nothing = [](const rill::physical_regions&) {};
    expect(says(misuse_of([&] { rill::launch(nothing, {rill::req(root, {count.id}, rill::privilege::reduce)}); }),
                "names no operator"),
           "a reduction without an operator");
    expect(says(misuse_of([&] {
                  rill::launch(nothing, {rill::req(root, {count.id}, rill::reduce_with<rill::reduce::sum<float>>())});
                }),
                "holds 8 bytes, but the reduction operator reduces into 4"),
           "an operator of another size than the field");
    expect(says(misuse_of([&] {
                  rill::launch(nothing, {rill::req(root, {count.id}, rill::reduce_with<sum_op>()),
                                         rill::req(root, {count.id}, rill::reduce_with<max_op>())});
                }),
                "reduce with different operators"),
           "two operators on the same points in one launch");
    // In the task: reading, writing, or reducing with another operator than the privilege's.
    const auto under_sum = [&](auto body) {
      return poison_of(rill::launch(body, {rill::req(root, {count.id}, rill::reduce_with<sum_op>())}));
    };
    expect(says(under_sum([](const rill::physical_regions& rs) { (void)rs[0].read<std::int64_t, 1>(count); }),
                "reduce-only"),
           "a read under reduce");
    expect(says(under_sum([](const rill::physical_regions& rs) { (void)rs[0].write<std::int64_t, 1>(count); }),
                "reduce-only"),
           "a write under reduce");
    expect(says(under_sum([](const rill::physical_regions& rs) { (void)rs[0].reduce<max_op, 1>(count); }),
                "without this operator"),
           "another operator than the privilege's");
    // (On a fresh region: the failed reductions above poison whoever needs root's data next.)
    const rill::region fresh = rill::region::create(rill::rect<1>{0, 9}, rill::field_space{count});
    expect(says(poison_of(rill::launch([](const rill::physical_regions& rs) { (void)rs[0].reduce<sum_op, 1>(count); },
                                       {rill::req(fresh, {count.id}, rill::privilege::read_write)})),
                "without this operator"),
           "a reduction under read_write");
  });
}

INSTANTIATE_TEST_SUITE_P(setups, launch_reductions, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
