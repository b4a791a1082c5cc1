// Launches on logical regions (rill/launch.hpp): random programs of launches (reads, writes and
// reductions by two operators) over an aliased region tree, on ranks the default or a random
// mapper picks, against the same program run sequentially;
// independent launches running while an earlier one is held back, and dependent ones not; atomic
// and simultaneous coherence; a second read of unchanged data moving no bytes; and what is refused.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "harness.hpp"
#include "launch_harness.hpp"
#include "launch_model.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"

namespace rill_test {
namespace {

class launches : public ::testing::TestWithParam<setup> {};

using data::misuse_of;
using data::poison_of;
using data::says;

using namespace launch_model;

const rill::field_space ab{fa, fb};
constexpr rill::coord_t points = 48;

constexpr std::uint64_t kinds = 5;  // launch_model's kinds but nested_write

void random_program(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
  const rill::partition quarters = rill::partition_equal(root, 4);
  std::vector<rill::index_space<1>> windows;
  for (rill::coord_t c = 0; c < 3; ++c) windows.emplace_back(rill::rect<1>{c * 14, c * 14 + 19});
  const rill::partition aliased = rill::partition_by_subspaces(root, windows);
  const rill::partition halves = rill::partition_by_blocks(quarters.subregion(1), rill::point<1>{6});
  std::vector<rill::region> regions{root};
  for (rill::partition p : {quarters, aliased, halves})
    for (std::size_t c = 0; c < p.colors(); ++c) regions.push_back(p.subregion(c));

  model m(points);
  std::vector<std::pair<rill::future<std::uint64_t>, std::uint64_t>> reads;
  std::vector<rill::event> done;
  // Every point written first: an instance's contents are undefined until then.
  const op first{kind::write_discard, 0, 3};
  done.push_back(rill::launch([](const rill::physical_regions& rs, op x) { (void)apply(rs[0], x); },
                              {rill::req(root, fields_of(3), rill::privilege::write_discard)}, first));
  m.run(first, root.space<1>());
  for (std::uint64_t id = 1; id <= 40; ++id) {
    const op o{static_cast<kind>(rng() % kinds), id, static_cast<std::uint8_t>(1 + rng() % 3)};
    if (rng() % 4 == 0 && o.k != kind::read_only) {
      // Every quarter at once; a reduction over the overlapping windows too (the points two
      // windows share get both windows' values).
      const rill::partition over = reduces(o.k) && rng() % 2 == 0 ? aliased : quarters;
      done.push_back(
          rill::index_launch([](const rill::physical_regions& rs, std::size_t, op x) { (void)apply(rs[0], x); }, over,
                             {requirement_of(over, o)}, o));
      for (std::size_t c = 0; c < over.colors(); ++c) m.run(o, over.subregion(c).space<1>());
      continue;
    }
    if (rng() % 6 == 0 && o.k != kind::read_only) {
      // Two requirements: a write of one quarter, a read of both fields of another.
      const std::size_t a = rng() % 4, b = (a + 1 + rng() % 3) % 4;
      const op read{kind::read_only, id, 3};
      rill::promise<std::uint64_t> sum;
      done.push_back(rill::launch(
          [](const rill::physical_regions& rs, op x, op y, rill::promise<std::uint64_t> out) {
            (void)apply(rs[0], x);
            out.put(apply(rs[1], y));
          },
          {requirement_of(quarters.subregion(a), o),
           rill::req(quarters.subregion(b), fields_of(3), rill::privilege::read_only)},
          o, read, sum));
      m.run(o, quarters.subregion(a).space<1>());
      reads.emplace_back(sum.get_future(), m.run(read, quarters.subregion(b).space<1>()));
      continue;
    }
    const rill::region r = regions[rng() % regions.size()];
    rill::promise<std::uint64_t> sum;
    done.push_back(rill::launch(
        [](const rill::physical_regions& rs, op x, rill::promise<std::uint64_t> out) { out.put(apply(rs[0], x)); },
        {requirement_of(r, o)}, o, sum));
    reads.emplace_back(sum.get_future(), m.run(o, r.space<1>()));
  }
  expect(read_back(root, points) == m.values(), "the final values differ from the sequential program's");
  for (auto& [f, expected] : reads) expect(f.get() == expected, "a launch saw other values than in program order");
  for (rill::event e : done) e.wait();
}

TEST_P(launches, random_programs_match_their_sequential_execution) {
  run_checked(GetParam(), [] {
    for (std::uint64_t seed : {1, 2, 3}) random_program(seed);
    rill::set_mapper(std::make_shared<random_mapper>(9));
    for (std::uint64_t seed : {4, 5, 6}) random_program(seed);
    rill::set_mapper(nullptr);
  });
}

TEST_P(launches, random_programs_match_their_sequential_execution_under_a_tiny_instance_budget) {
  run_checked(GetParam(),
              [] {
                for (std::uint64_t seed : {7, 8}) random_program(seed);
                rill::set_mapper(std::make_shared<random_mapper>(11));
                for (std::uint64_t seed : {9, 10}) random_program(seed);
                rill::set_mapper(nullptr);
                // (Decided in program order: the same on every run of a setup.) With tasks on
                // several ranks, data is copied between them, and the copies left behind go.
                if (rill::rank_n() > 1)
                  expect(rill::launch_counts_here().instances_collected > 0, "no instance was collected");
              },
              {"--rill:instance-budget=256"});
}

TEST_P(launches, instances_valid_elsewhere_are_collected_under_the_budget) {
  run_checked(
      GetParam(),
      [] {
        rill::set_mapper(std::make_shared<fixed_mapper>());  // everything on rank 0
        const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
        const rill::partition strips = rill::partition_equal(root, 4);          // 12 points, 192 bytes each
        const rill::region half = rill::partition_equal(root, 2).subregion(0);  // strips 0 and 1
        const auto fill = [](const rill::physical_regions& rs) {
          auto a = rs[0].write<std::uint64_t, 1>(fa);
          rs[0].reg.space<1>().for_each_point(
              [&](const rill::point<1>& p) { a[p] = 7 * static_cast<std::uint64_t>(p[0]); });
        };
        const auto check = [](const rill::physical_regions& rs) {
          auto a = rs[0].read<std::uint64_t, 1>(fa);
          rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) {
            if (a[p] != 7 * static_cast<std::uint64_t>(p[0])) throw std::logic_error("a value was lost");
          });
        };
        const rill::launch_counts start = rill::launch_counts_here();
        // Strips 0 and 1 each get an instance (384 bytes); the half gets one too (384 more: over
        // the budget, but the strips hold the only valid copies of their points, so they stay).
        for (std::size_t c : {0, 1})
          rill::launch(fill, {rill::req(strips.subregion(c), {fa.id}, rill::privilege::write_discard)});
        rill::launch(check, {rill::req(half, {fa.id}, rill::privilege::read_only)});
        const rill::launch_counts three = rill::launch_counts_here();
        expect(
            three.instances_made - start.instances_made == 3 && three.instances_collected == start.instances_collected,
            "the first three instances were not made, or one was collected holding the only valid data");
        // An instance of another tree: the strips' data is in the half's instance now, so both
        // strips' instances go (the oldest first); the half's stays.
        const rill::region other = rill::region::create(rill::rect<1>{0, 7}, ab);
        rill::launch(fill, {rill::req(other, {fa.id}, rill::privilege::write_discard)});
        const rill::launch_counts four = rill::launch_counts_here();
        expect(four.instances_collected - three.instances_collected == 2, "the strips' instances were not collected");
        // What they held is still there, and a strip now maps to the half's instance.
        rill::launch(check, {rill::req(half, {fa.id}, rill::privilege::read_only)}).wait();
        rill::launch(check, {rill::req(strips.subregion(1), {fa.id}, rill::privilege::read_only)}).wait();
        const rill::launch_counts end = rill::launch_counts_here();
        expect(end.copies == four.copies && end.instances_made == four.instances_made,
               "a strip did not map to the instance that holds its data");
        rill::set_mapper(nullptr);
      },
      {"--rill:instance-budget=400"});
}

TEST_P(launches, independent_launches_run_while_a_dependent_one_waits) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const rill::partition halves = rill::partition_equal(root, 2);
    // (A task touches only the field it asked for: the instance it is given may be shared with
    // launches on the other field, whose copies land while it runs.)
    const auto bump = [](const rill::physical_regions& rs, rill::field<std::uint64_t> f) {
      auto acc = rs[0].write<std::uint64_t, 1>(f);
      rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] += 1; });
    };
    rill::user_event gate = rill::user_event::create();
    const rill::event held = rill::launch(rill::after(gate), bump,
                                          {rill::req(halves.subregion(0), {fa.id}, rill::privilege::read_write)}, fa);
    // The other half, and the same half's other field: neither shares anything with `held`.
    rill::launch(bump, {rill::req(halves.subregion(1), {fa.id}, rill::privilege::read_write)}, fa).wait();
    rill::launch([](const rill::physical_regions&) {},
                 {rill::req(halves.subregion(0), {fb.id}, rill::privilege::read_write)})
        .wait();
    // The whole region's fa waits for `held`, which waits for the gate.
    const rill::event after_held =
        rill::launch([](const rill::physical_regions&) {}, {rill::req(root, {fa.id}, rill::privilege::read_only)});
    // Something independent issued after it runs to its end: had after_held not waited, it could
    // have run by then too.
    rill::launch(bump, {rill::req(halves.subregion(1), {fb.id}, rill::privilege::read_write)}, fb).wait();
    expect(!held.has_triggered() && !after_held.has_triggered(), "a launch ran before the one it depends on");
    gate.trigger();
    after_held.wait();
    expect(held.has_triggered(), "a dependent launch finished before the launch it waits for");
  });
}

// A copy out of an instance, for a reduction that commutes with a pending one (same operator),
// and the application of the pending one into that instance, which a later read asks for: the
// application writes points the copy reads, so it must wait for the copy though neither launch
// waits for the other. Both are held by gates opened together. Without that order they race,
// which ThreadSanitizer reports when the two run close enough (the values stay right either way:
// the copied points are stale where they were copied to once the application lands), so the
// scenario runs a few times.
TEST_P(launches, a_reduction_applied_into_an_instance_waits_for_copies_out_of_it) {
  run_checked(GetParam(), [] {
    auto on = std::make_shared<fixed_mapper>();
    rill::set_mapper(on);
    const auto body = [](const rill::physical_regions& rs, op x) { (void)apply(rs[0], x); };
    for (int round = 0; round < 4; ++round) {
      const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
      const rill::partition windows = rill::partition_by_subspaces(
          root, std::vector<rill::index_space<1>>{rill::rect<1>{0, 9}, rill::rect<1>{6, 15}});
      const rill::region w0 = windows.subregion(0), w1 = windows.subregion(1);
      model m(points);
      const auto run = [&](rill::region r, op o, rill::event after) {
        m.run(o, r.space<1>());
        rill::launch(rill::after(after), body, {requirement_of(r, o)}, o);
      };
      rill::user_event copy_gate = rill::user_event::create(), max_gate = rill::user_event::create();
      // The root's instance on rank 0 holds everything; a sum pending over w0, then a max over
      // w1 (the sum's points 6-9 applied first, into the root's instance).
      on->rank = 0;
      run(root, {kind::write_discard, 1, 3}, rill::event::none());
      run(w0, {kind::reduce_sum, 2, 1}, rill::event::none());
      run(w1, {kind::reduce_max, 3, 1}, max_gate);
      // A max over w0 on the last rank: the sum's points 0-5 are applied into an instance there,
      // after a copy of w0 out of the root's instance.
      on->rank = rill::rank_n() - 1;
      const rill::launch_counts before = rill::launch_counts_here();
      run(w0, {kind::reduce_max, 4, 1}, copy_gate);
      const bool copied = rill::launch_counts_here().copies - before.copies == 1;
      expect(copied || rill::rank_n() == 1, "the max over w0 on another rank copied nothing: no scenario");
      // A read of w1 on rank 0 applies the pending max over w1 into the root's instance.
      on->rank = 0;
      const op read{kind::read_only, 5, 1};
      rill::promise<std::uint64_t> sum;
      rill::launch(
          [](const rill::physical_regions& rs, op x, rill::promise<std::uint64_t> out) { out.put(apply(rs[0], x)); },
          {requirement_of(w1, read)}, read, sum);
      const std::uint64_t expected = m.run(read, w1.space<1>());
      copy_gate.trigger();
      max_gate.trigger();
      expect(sum.get_future().get() == expected, "a read saw other values than in program order");
      expect(read_back(root, points) == m.values(), "the final values differ from the sequential program's");
    }
    rill::set_mapper(nullptr);
  });
}

// Writes 0 to fa, then sums it: the ends of the coherence tests.
void zero_fa(const rill::physical_regions& rs) {
  auto acc = rs[0].write<std::uint64_t, 1>(fa);
  rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] = 0; });
}
void sum_fa(const rill::physical_regions& rs, rill::promise<std::uint64_t> out) {
  auto acc = rs[0].read<std::uint64_t, 1>(fa);
  std::uint64_t s = 0;
  rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { s += acc[p]; });
  out.put(s);
}

// Atomic uses of one instance: launched later, they may run first; never two at once.
TEST_P(launches, atomic_uses_run_out_of_order_but_one_at_a_time) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    rill::launch(zero_fa, {rill::req(root, {fa.id}, rill::privilege::write_discard)}).wait();
    const auto add = [](const rill::physical_regions& rs, std::uint64_t k) {
      static std::atomic<int> inside{0};  // tasks on one instance run in one process
      if (inside.fetch_add(1) != 0) throw std::logic_error("two atomic uses of one instance ran at once");
      auto acc = rs[0].write<std::uint64_t, 1>(fa);
      rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] += k; });
      inside.fetch_sub(1);
    };
    const auto atomically = [&] {
      return std::vector<rill::requirement>{
          rill::req(root, {fa.id}, rill::privilege::read_write, rill::coherence::atomic)};
    };
    rill::user_event gate = rill::user_event::create();
    const rill::event first = rill::launch(rill::after(gate), add, atomically(), std::uint64_t{1});
    std::vector<rill::event> later;
    for (std::uint64_t k = 2; k <= 6; ++k) later.push_back(rill::launch(add, atomically(), k));
    for (rill::event e : later) e.wait();  // in program order these would wait for the gate
    expect(!first.has_triggered(), "an atomic use ran before the gate it waits for");
    gate.trigger();
    // An exclusive read waits for every one of them.
    rill::promise<std::uint64_t> sum;
    rill::launch(sum_fa, {rill::req(root, {fa.id}, rill::privilege::read_only)}, sum);
    expect(sum.get_future().get() == static_cast<std::uint64_t>(points) * 21, "atomic updates were lost");
  });
}

// Simultaneous uses of one instance run at the same time: the first waits for an event only the
// second triggers.
TEST_P(launches, simultaneous_uses_of_one_instance_run_together) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    rill::launch(zero_fa, {rill::req(root, {fa.id}, rill::privilege::write_discard)}).wait();
    const auto together = [&] {
      return std::vector<rill::requirement>{
          rill::req(root, {fa.id}, rill::privilege::read_write, rill::coherence::simultaneous)};
    };
    rill::user_event go = rill::user_event::create();
    const rill::event waiter = rill::launch(
        [](const rill::physical_regions& rs, rill::user_event g) {
          g.wait();
          rs[0].write<std::uint64_t, 1>(fa)[{0}] += 1;
        },
        together(), go);
    const rill::event signaller = rill::launch(
        [](const rill::physical_regions& rs, rill::user_event g) {
          rs[0].write<std::uint64_t, 1>(fa)[{1}] += 2;
          g.trigger();
        },
        together(), go);
    waiter.wait();
    signaller.wait();
    rill::promise<std::uint64_t> sum;
    rill::launch(sum_fa, {rill::req(root, {fa.id}, rill::privilege::read_only)}, sum);
    expect(sum.get_future().get() == 3, "an exclusive read after simultaneous writes saw other values");
  });
}

TEST_P(launches, a_second_read_of_unchanged_data_moves_no_bytes) {
  run_checked(GetParam(), [] {
    auto where = std::make_shared<fixed_mapper>();
    rill::set_mapper(where);
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const auto fill = [](const rill::physical_regions& rs) {
      auto acc = rs[0].write<std::uint64_t, 1>(fa);
      rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] = static_cast<std::uint64_t>(p[0]); });
    };
    const auto check = [](const rill::physical_regions& rs) {
      auto acc = rs[0].read<std::uint64_t, 1>(fa);
      rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) {
        if (acc[p] != static_cast<std::uint64_t>(p[0])) throw std::logic_error("a read saw a value not written");
      });
    };
    rill::launch(fill, {rill::req(root, {fa.id}, rill::privilege::write_discard)}).wait();
    where->rank = rill::rank_n() - 1;
    const rill::launch_counts before = rill::launch_counts_here();
    rill::launch(check, {rill::req(root, {fa.id}, rill::privilege::read_only)}).wait();
    const rill::launch_counts first = rill::launch_counts_here();
    rill::launch(check, {rill::req(root, {fa.id}, rill::privilege::read_only)}).wait();
    const rill::launch_counts second = rill::launch_counts_here();
    const std::uint64_t moved = rill::rank_n() > 1 ? points * sizeof(std::uint64_t) : 0;
    expect(first.bytes_copied - before.bytes_copied == moved, "the first read moved other than the region's bytes");
    expect(second.bytes_copied == first.bytes_copied && second.copies == first.copies &&
               second.instances_made == first.instances_made,
           "a second read of unchanged data moved bytes or made an instance");
    rill::set_mapper(nullptr);
  });
}

// A 1D stencil: each strip reads its ghost region (itself and one point either side) of one field
// and writes its own points of the other. The strip and its ghost region share one instance, so a
// step copies only the halo points, never a strip's own.
void stencil_step(const rill::physical_regions& rs, std::size_t, rill::field_id in, rill::field_id out) {
  const auto from = rs[0].read<std::uint64_t, 1>(rill::field<std::uint64_t>{in});
  const auto to = rs[1].write<std::uint64_t, 1>(rill::field<std::uint64_t>{out});
  const rill::index_space<1> around = rs[0].reg.space<1>();
  rs[1].reg.space<1>().for_each_point([&](const rill::point<1>& p) {
    std::uint64_t x = from[p] * 3;
    for (rill::coord_t d : {-1, 1})
      if (around.contains(rill::point<1>{p[0] + d})) x += from[{p[0] + d}] * static_cast<std::uint64_t>(5 + d);
    to[p] = x;
  });
}

TEST_P(launches, a_stencil_step_copies_only_the_halo) {
  run_checked(GetParam(), [] {
    constexpr std::size_t strips_n = 4;
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const rill::partition strips = rill::partition_equal(root, strips_n);
    std::vector<rill::index_space<1>> around;
    for (std::size_t c = 0; c < strips_n; ++c) {
      const rill::rect<1> b = strips.subregion(c).space<1>().bounds();
      around.emplace_back(rill::rect<1>{std::max<rill::coord_t>(b.lo[0] - 1, 0), std::min(b.hi[0] + 1, points - 1)});
    }
    const rill::partition ghosts = rill::partition_by_subspaces(root, around);
    rill::index_launch(
        [](const rill::physical_regions& rs, std::size_t) {
          auto a = rs[0].write<std::uint64_t, 1>(fa);
          rs[0].reg.space<1>().for_each_point(
              [&](const rill::point<1>& p) { a[p] = static_cast<std::uint64_t>(p[0]); });
        },
        strips, {rill::req(strips, {fa.id}, rill::privilege::write_discard)});
    std::vector<std::uint64_t> model(points);
    for (rill::coord_t p = 0; p < points; ++p) model[static_cast<std::size_t>(p)] = static_cast<std::uint64_t>(p);
    const auto step = [&](int k) {
      const rill::field_id in = k % 2 ? fb.id : fa.id, out = k % 2 ? fa.id : fb.id;
      rill::index_launch(stencil_step, strips,
                         {rill::req(ghosts, {in}, rill::privilege::read_only),
                          rill::req(strips, {out}, rill::privilege::write_discard)},
                         in, out);
      std::vector<std::uint64_t> next(points);
      for (std::size_t c = 0; c < strips_n; ++c)
        strips.subregion(c).space<1>().for_each_point([&](const rill::point<1>& p) {
          const auto i = static_cast<std::size_t>(p[0]);
          next[i] = model[i] * 3;
          for (rill::coord_t d : {-1, 1})
            if (around[c].contains(rill::point<1>{p[0] + d}))
              next[i] += model[i + d] * static_cast<std::uint64_t>(5 + d);
        });
      model = next;
    };
    // The first step brings each strip's own points into its ghost region's instance.
    step(0);
    const rill::launch_counts before = rill::launch_counts_here();
    constexpr int steps = 5;
    for (int k = 1; k <= steps; ++k) step(k);
    // (Counted when the launches are issued.) Strip c's halo: the last point of strip c - 1 and
    // the first of strip c + 1, one copy each.
    const rill::launch_counts after = rill::launch_counts_here();
    constexpr std::uint64_t halo_points = 2 * (strips_n - 1);
    expect(after.copies - before.copies == steps * halo_points &&
               after.bytes_copied - before.bytes_copied == steps * halo_points * sizeof(std::uint64_t),
           "a step copied more than the halos");
    expect(after.instances_made == before.instances_made, "a step made an instance");
    rill::promise<std::vector<std::uint64_t>> result;
    const rill::field<std::uint64_t> last = steps % 2 ? fa : fb;
    rill::launch(
        [](const rill::physical_regions& rs, rill::field<std::uint64_t> f,
           rill::promise<std::vector<std::uint64_t>> out) {
          auto acc = rs[0].read<std::uint64_t, 1>(f);
          std::vector<std::uint64_t> vals;
          for (rill::coord_t p = 0; p < points; ++p) vals.push_back(acc[{p}]);
          out.put(std::move(vals));
        },
        {rill::req(root, {last.id}, rill::privilege::read_only)}, last, result);
    expect(result.get_future().get() == model, "the stencil's values differ from the sequential model's");
  });
}

TEST_P(launches, invalid_requirements_are_refused_naming_the_cause) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, 9}, rill::field_space{fa});
    const auto nothing = [](const rill::physical_regions&) {};
    expect(says(misuse_of([&] { rill::launch(nothing, {rill::req(root, {fb.id}, rill::privilege::read_only)}); }),
                "field 2 is not in region"),
           "a field not in the region");
    expect(says(misuse_of([&] { rill::launch(nothing, {rill::req(root, {}, rill::privilege::read_only)}); }),
                "names no field"),
           "a requirement without fields");
    expect(says(misuse_of([&] {
                  rill::launch(nothing,
                               {rill::req(rill::partition_equal(root, 2), {fa.id}, rill::privilege::read_only)});
                }),
                "belongs in an index launch"),
           "a partition in a single launch");
    // Writing under read_only: the task's event is poisoned naming the privilege.
    const rill::event wrote =
        rill::launch([](const rill::physical_regions& rs) { (void)rs[0].write<std::uint64_t, 1>(fa); },
                     {rill::req(root, {fa.id}, rill::privilege::read_only)});
    expect(says(poison_of(wrote), "read-only"), "a write under read_only was not refused");
    // A task mapped to a rank its callable cannot travel to (captures that are not trivially
    // copyable): refused.
    if (rill::rank_n() > 1) {
      auto elsewhere = std::make_shared<fixed_mapper>();
      elsewhere->rank = 1;
      rill::set_mapper(elsewhere);
      const std::string text = "not trivially copyable";
      expect(says(misuse_of([&] {
                    rill::launch([text](const rill::physical_regions&) { (void)text.size(); },
                                 {rill::req(root, {fa.id}, rill::privilege::read_write)});
                  }),
                  "can run only on the calling rank"),
             "a callable that cannot travel");
      // Refused before anything was recorded: a later launch of the same data runs.
      const rill::event later = rill::launch(nothing, {rill::req(root, {fa.id}, rill::privilege::read_only)});
      expect(poison_of(later) == "no error", "a launch after a refused one did not run");
      rill::set_mapper(nullptr);
    }
    class bad_mapper : public rill::mapper {
      int map_task(const rill::mapping_query&) override { return -3; }
    };
    // Two requirements of one launch on the same points, one writing, in two instances: refused.
    // (A fresh tree, so that the half gets an instance of its own before the whole does.)
    const rill::region fresh = rill::region::create(rill::rect<1>{0, 9}, rill::field_space{fa});
    const rill::partition halves = rill::partition_equal(fresh, 2);
    rill::launch(nothing, {rill::req(halves.subregion(0), {fa.id}, rill::privilege::write_discard)}).wait();
    expect(says(misuse_of([&] {
                  rill::launch(nothing, {rill::req(halves.subregion(0), {fa.id}, rill::privilege::read_write),
                                         rill::req(fresh, {fa.id}, rill::privilege::read_only)});
                }),
                "map to different instances"),
           "overlapping requirements in two instances");
    // An index launch over more colors than a requirement's partition has.
    expect(says(misuse_of([&] {
                  rill::index_launch([](const rill::physical_regions&, std::size_t) {}, rill::partition_equal(fresh, 3),
                                     {rill::req(halves, {fa.id}, rill::privilege::read_only)});
                }),
                "names a partition of 2 colors for a launch over 3"),
           "an index launch over more colors than its requirement's partition");
    rill::set_mapper(std::make_shared<bad_mapper>());
    expect(says(misuse_of([&] { rill::launch(nothing, {rill::req(root, {fa.id}, rill::privilege::read_only)}); }),
                "the mapper chose rank -3"),
           "a mapper's impossible rank");
    rill::set_mapper(nullptr);
  });
}

INSTANTIATE_TEST_SUITE_P(setups, launches, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
