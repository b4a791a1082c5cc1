// Write after read (Iris §IV-B; --rill:write-after-read): a write does not wait for an earlier
// read of its points still running -- on the same rank (the write moves to another instance) or
// on another -- and the read sees the data it started with; later launches see the write. With
// the option off, the write waits for the read.
#include <string>
#include <vector>

#include "harness.hpp"
#include "launch_harness.hpp"
#include "rill/launch.hpp"

namespace rill_test {
namespace {

class write_after_read : public ::testing::TestWithParam<setup> {};

constexpr rill::field<double> value{1};
constexpr rill::coord_t points = 48;
constexpr double first_sum = points * (points - 1) / 2.0;  // of the values i

rill::region made_region() {
  const rill::region r = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value});
  rill::launch(
      [](const rill::physical_regions& rs) {
        const auto v = rs[0].write<double, 1>(value);
        rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = static_cast<double>(p[0]); });
      },
      {rill::req(r, {value.id}, rill::privilege::write_discard)})
      .wait();
  return r;
}

// The sum of the region's values, read by a launch once `after` has triggered.
rill::future<double> sum_of(rill::region r, rill::event after = rill::event::none()) {
  rill::promise<double> sum;
  rill::launch(
      rill::after(after),
      [](const rill::physical_regions& rs, rill::promise<double> out) {
        const auto v = rs[0].read<double, 1>(value);
        double s = 0;
        rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { s += v[p]; });
        out.put(s);
      },
      {rill::req(r, {value.id}, rill::privilege::read_only)}, sum);
  return sum.get_future();
}

rill::event add_thousand(rill::region r) {
  return rill::launch(
      [](const rill::physical_regions& rs) {
        const auto v = rs[0].write<double, 1>(value);
        rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] += 1000; });
      },
      {rill::req(r, {value.id}, rill::privilege::read_write)});
}

// The read is held back by a gate only the test opens, after the write has ended.
TEST_P(write_after_read, a_write_does_not_wait_for_an_earlier_read_which_keeps_its_data) {
  run_checked(GetParam(), [] {
    auto on = std::make_shared<fixed_mapper>();
    rill::set_mapper(on);
    // Reader and writer on one rank (the write moves to another instance), then on two.
    for (int writer_rank : {0, rill::rank_n() - 1}) {
      on->rank = 0;
      const rill::region r = made_region();
      rill::user_event gate = rill::user_event::create();
      rill::future<double> read = sum_of(r, gate);
      on->rank = writer_rank;
      add_thousand(r).wait();
      expect(!read.ready(), "the held-back read ended before its gate opened");
      gate.trigger();
      const double seen = read.get();
      expect(seen == first_sum, "a read saw " + std::to_string(seen) + ", not the data before the write");
      on->rank = 0;
      const double after = sum_of(r).get();
      expect(after == first_sum + 1000 * points, "a read after the write saw " + std::to_string(after));
      // Two writes after a held-back read: the second waits for the first, not for the read.
      rill::user_event again = rill::user_event::create();
      rill::future<double> held = sum_of(r, again);
      on->rank = writer_rank;
      add_thousand(r);
      add_thousand(r).wait();
      expect(!held.ready(), "the second held-back read ended before its gate opened");
      again.trigger();
      expect(held.get() == first_sum + 1000 * points, "the second held-back read saw the writes");
      expect(sum_of(r).get() == first_sum + 3000 * points, "the writes after a read were lost");
      r.destroy().wait();
    }
  });
}

TEST_P(write_after_read, off_a_write_waits_for_the_reads_before_it) {
  run_checked(GetParam(),
              [] {
                const rill::region r = made_region();
                const rill::region other = made_region();
                rill::user_event gate = rill::user_event::create();
                rill::future<double> read = sum_of(r, gate);
                const rill::event write = add_thousand(r);
                add_thousand(other).wait();  // independent, issued after: it ran to its end
                expect(!write.has_triggered(), "a write ran before the read it follows");
                gate.trigger();
                expect(read.get() == first_sum, "the read saw the write");
                write.wait();
                expect(sum_of(r).get() == first_sum + 1000 * points, "the write was lost");
              },
              {"--rill:write-after-read=off"});
}

INSTANTIATE_TEST_SUITE_P(setups, write_after_read, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
