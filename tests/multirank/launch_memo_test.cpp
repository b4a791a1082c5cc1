// Repeated launches planned as remembered (--rill:launch-memo, regions/launch_memo.hpp): programs
// that repeat a random step of launches, now and then disturbed by a launch outside the step (on
// another region, a reduction, one placed elsewhere by a mapper), against their sequential
// execution, with the memo on and off; a repeated launch still waiting for the launch before it
// while an independent repeated one runs; a repeated launch finding its data where a disturbing
// launch moved it; and sub-launches repeated within their task's context.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "data_harness.hpp"
#include "harness.hpp"
#include "launch_harness.hpp"
#include "launch_model.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"

namespace rill_test {
namespace {

class launch_memo : public ::testing::TestWithParam<setup> {};

using namespace launch_model;

const rill::field_space ab{fa, fb};
constexpr rill::coord_t points = 48;

// One launch of a step: on a region, over a partition, or on two quarters at once (a write of one,
// a read of both fields of the other).
struct step_launch {
  enum class form : std::uint8_t { single, index, pair } f;
  kind k;
  std::uint8_t mask;
  std::size_t region;  // single: in the program's regions; index: 0 quarters, 1 aliased windows
  std::size_t a, b;    // pair: the quarters
};

struct program {
  rill::region root;
  rill::partition quarters, aliased;
  std::vector<rill::region> regions;
  model m{points};
  std::vector<std::pair<rill::future<std::uint64_t>, std::uint64_t>> reads;
  std::vector<rill::event> done;

  program() {
    root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    quarters = rill::partition_equal(root, 4);
    std::vector<rill::index_space<1>> windows;
    for (rill::coord_t c = 0; c < 3; ++c) windows.emplace_back(rill::rect<1>{c * 14, c * 14 + 19});
    aliased = rill::partition_by_subspaces(root, windows);
    const rill::partition halves = rill::partition_by_blocks(quarters.subregion(1), rill::point<1>{6});
    regions = {root};
    for (rill::partition p : {quarters, aliased, halves})
      for (std::size_t c = 0; c < p.colors(); ++c) regions.push_back(p.subregion(c));
    const op first{kind::write_discard, 0, 3};
    done.push_back(rill::launch([](const rill::physical_regions& rs, op x) { (void)apply(rs[0], x); },
                                {rill::req(root, fields_of(3), rill::privilege::write_discard)}, first));
    m.run(first, root.space<1>());
  }

  void run(const step_launch& s, std::uint64_t id) {
    const op o{s.k, id, s.mask};
    if (s.f == step_launch::form::index) {
      const rill::partition over = s.region == 0 ? quarters : aliased;
      done.push_back(
          rill::index_launch([](const rill::physical_regions& rs, std::size_t, op x) { (void)apply(rs[0], x); }, over,
                             {requirement_of(over, o)}, o));
      for (std::size_t c = 0; c < over.colors(); ++c) m.run(o, over.subregion(c).space<1>());
      return;
    }
    rill::promise<std::uint64_t> sum;
    if (s.f == step_launch::form::pair) {
      const op read{kind::read_only, id, 3};
      done.push_back(rill::launch(
          [](const rill::physical_regions& rs, op x, op y, rill::promise<std::uint64_t> out) {
            (void)apply(rs[0], x);
            out.put(apply(rs[1], y));
          },
          {requirement_of(quarters.subregion(s.a), o),
           rill::req(quarters.subregion(s.b), fields_of(3), rill::privilege::read_only)},
          o, read, sum));
      m.run(o, quarters.subregion(s.a).space<1>());
      reads.emplace_back(sum.get_future(), m.run(read, quarters.subregion(s.b).space<1>()));
      return;
    }
    const rill::region r = regions[s.region];
    done.push_back(rill::launch(
        [](const rill::physical_regions& rs, op x, rill::promise<std::uint64_t> out) { out.put(apply(rs[0], x)); },
        {requirement_of(r, o)}, o, sum));
    reads.emplace_back(sum.get_future(), m.run(o, r.space<1>()));
  }

  void check() {
    expect(read_back(root, points) == m.values(), "the final values differ from the sequential program's");
    for (auto& [f, expected] : reads) expect(f.get() == expected, "a launch saw other values than in program order");
    for (rill::event e : done) e.wait();
  }
};

constexpr std::uint64_t kinds = 5;  // launch_model's kinds but nested_write

step_launch random_launch(std::mt19937_64& rng, std::size_t regions) {
  step_launch s{step_launch::form::single,
                static_cast<kind>(rng() % kinds),
                static_cast<std::uint8_t>(1 + rng() % 3),
                rng() % regions,
                0,
                0};
  if (rng() % 4 == 0 && s.k != kind::read_only) {
    s.f = step_launch::form::index;
    s.region = reduces(s.k) && rng() % 2 == 0 ? 1 : 0;
  } else if (rng() % 6 == 0 && !reduces(s.k) && s.k != kind::read_only) {
    s.f = step_launch::form::pair;
    s.a = rng() % 4;
    s.b = (s.a + 1 + rng() % 3) % 4;
  }
  return s;
}

// A step of a few random launches, repeated; every third repetition is followed by a random
// launch outside the step, now and then placed by a random mapper. Returns the launches repeated.
std::uint64_t repeated_program(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  program p;
  std::vector<step_launch> step(2 + rng() % 4);
  for (step_launch& s : step) s = random_launch(rng, p.regions.size());
  const std::uint64_t before = rill::launch_counts_here().launches_repeated;
  std::uint64_t id = 1;
  for (int rep = 0; rep < 12; ++rep) {
    for (const step_launch& s : step) p.run(s, id++);
    if (rep % 3 != 2) continue;
    const bool placed = rng() % 2 == 0;
    if (placed) rill::set_mapper(std::make_shared<random_mapper>(seed * 100 + static_cast<std::uint64_t>(rep)));
    p.run(random_launch(rng, p.regions.size()), id++);
    if (placed) rill::set_mapper(nullptr);
  }
  p.check();
  return rill::launch_counts_here().launches_repeated - before;
}

TEST_P(launch_memo, repeated_steps_match_their_sequential_execution) {
  run_checked(GetParam(), [] {
    std::uint64_t repeated = 0;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) repeated += repeated_program(seed);
    // (Decided in program order: a step of launches that leave the data where it is repeats.)
    expect(repeated > 0, "no launch was planned as remembered");
  });
}

TEST_P(launch_memo, repeated_steps_match_their_sequential_execution_with_the_memo_off) {
  run_checked(GetParam(),
              [] {
                std::uint64_t repeated = 0;
                for (std::uint64_t seed = 1; seed <= 4; ++seed) repeated += repeated_program(seed);
                expect(repeated == 0, "a launch was planned as remembered with --rill:launch-memo=off");
              },
              {"--rill:launch-memo=off"});
}

void zero(const rill::physical_regions& rs) {
  auto acc = rs[0].write<std::uint64_t, 1>(fa);
  rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] = 0; });
}

void bump(const rill::physical_regions& rs, rill::field<std::uint64_t> f) {
  auto acc = rs[0].write<std::uint64_t, 1>(f);
  rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] += 1; });
}

std::uint64_t value_at(rill::region r, rill::field<std::uint64_t> f, rill::coord_t p) {
  rill::promise<std::uint64_t> v;
  rill::launch([](const rill::physical_regions& rs, rill::field<std::uint64_t> fld, rill::coord_t at,
                  rill::promise<std::uint64_t> out) { out.put(rs[0].read<std::uint64_t, 1>(fld)[{at}]); },
               {rill::req(r, {f.id}, rill::privilege::read_only)}, f, p, v);
  return v.get_future().get();
}

TEST_P(launch_memo, a_repeated_launch_waits_for_the_launch_before_it) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const rill::partition halves = rill::partition_equal(root, 2);
    rill::launch(zero, {rill::req(root, {fa.id}, rill::privilege::write_discard)});
    const auto on_half = [&](std::size_t h, rill::event after) {
      return rill::launch(rill::after(after), bump,
                          {rill::req(halves.subregion(h), {fa.id}, rill::privilege::read_write)}, fa);
    };
    // Each half's launch analysed, then remembered, then repeated.
    for (int k = 0; k < 3; ++k)
      for (std::size_t h : {0, 1}) on_half(h, rill::event::none()).wait();
    const std::uint64_t before = rill::launch_counts_here().launches_repeated;
    rill::user_event gate = rill::user_event::create();
    const rill::event held = on_half(0, gate);
    const rill::event next = on_half(0, rill::event::none());
    // The other half's repeated launch shares nothing with them: it runs to its end.
    on_half(1, rill::event::none()).wait();
    expect(rill::launch_counts_here().launches_repeated - before == 3, "the launches were not repeated");
    expect(!held.has_triggered() && !next.has_triggered(), "a repeated launch ran before the one it waits for");
    gate.trigger();
    next.wait();
    expect(held.has_triggered(), "a repeated launch finished before the launch it waits for");
    expect(value_at(root, fa, 0) == 5 && value_at(root, fa, points - 1) == 4, "a bump was lost");
  });
}

TEST_P(launch_memo, a_repeated_launch_finds_its_data_where_another_launch_moved_it) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const rill::partition quarters = rill::partition_equal(root, 4);
    rill::index_launch([](const rill::physical_regions& rs, std::size_t) { zero(rs); }, quarters,
                       {rill::req(quarters, {fa.id}, rill::privilege::write_discard)});
    const auto step = [&] {
      rill::index_launch([](const rill::physical_regions& rs, std::size_t) { bump(rs, fa); }, quarters,
                         {rill::req(quarters, {fa.id}, rill::privilege::read_write)});
    };
    for (int k = 0; k < 3; ++k) step();
    // The whole region written on the last rank: the quarters' data is valid there alone.
    auto last = std::make_shared<fixed_mapper>();
    last->rank = rill::rank_n() - 1;
    rill::set_mapper(last);
    rill::launch([](const rill::physical_regions& rs) { bump(rs, fa); },
                 {rill::req(root, {fa.id}, rill::privilege::read_write)});
    rill::set_mapper(nullptr);
    const rill::launch_counts moved = rill::launch_counts_here();
    for (int k = 0; k < 4; ++k) step();
    const rill::launch_counts end = rill::launch_counts_here();
    // The first step after it analysed again: its points follow the data to the last rank, into
    // the whole region's instance there. Its uses name that instance, so the second finds other
    // uses than the first did and is analysed too; the next two repeat the second.
    expect(end.launches_repeated - moved.launches_repeated == 2 * quarters.colors(),
           "the steps after the move were not analysed twice, then repeated");
    for (rill::coord_t p : {rill::coord_t{0}, points / 2, points - 1})
      expect(value_at(root, fa, p) == 8, "a step saw stale data");
  });
}

// A launched task's sub-launches are remembered in its own context: each piece's task repeats a
// step over its quarters (alternating a write of one field from the other and back, and a
// read of the piece), on its rank, and what it read and wrote matches the model.
void piece_steps(const rill::physical_regions& rs, std::size_t, rill::promise<std::uint64_t> repeated,
                 rill::promise<std::uint64_t> read) {
  const std::uint64_t before = rill::launch_counts_here().launches_repeated;
  const rill::partition quarters = rill::partition_equal(rs[0].reg, 4);
  const auto copy_into = [](const rill::physical_regions& q, std::size_t, rill::field<std::uint64_t> from,
                            rill::field<std::uint64_t> to) {
    auto in = q[0].read<std::uint64_t, 1>(from);
    auto out = q[1].write<std::uint64_t, 1>(to);
    q[1].reg.space<1>().for_each_point([&](const rill::point<1>& p) { out[p] = in[p] + 1; });
  };
  std::uint64_t sum = 0;
  for (int step = 0; step < 6; ++step) {
    const rill::field<std::uint64_t> from = step % 2 ? fb : fa, to = step % 2 ? fa : fb;
    rill::index_launch(copy_into, quarters,
                       {rill::req(quarters, {from.id}, rill::privilege::read_only),
                        rill::req(quarters, {to.id}, rill::privilege::write_discard)},
                       from, to);
    rill::promise<std::uint64_t> s;
    rill::launch(
        [](const rill::physical_regions& q, rill::promise<std::uint64_t> out) {
          auto a = q[0].read<std::uint64_t, 1>(fa);
          std::uint64_t t = 0;
          q[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { t = checksum_step(t, a[p]); });
          out.put(t);
        },
        {rill::req(rs[0].reg, {fa.id}, rill::privilege::read_only)}, s);
    sum = checksum_step(sum, s.get_future().get());
  }
  repeated.put(rill::launch_counts_here().launches_repeated - before);
  read.put(sum);
}

TEST_P(launch_memo, sub_launches_repeat_within_their_task) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const rill::partition pieces = rill::partition_equal(root, 2);
    rill::launch(zero, {rill::req(root, {fa.id}, rill::privilege::write_discard)});
    std::vector<rill::promise<std::uint64_t>> repeated(pieces.colors()), read(pieces.colors());
    for (std::size_t c = 0; c < pieces.colors(); ++c)
      rill::launch(piece_steps, {rill::req(pieces.subregion(c), {fa.id, fb.id}, rill::privilege::read_write)}, c,
                   repeated[c], read[c]);
    // The model: fa starts at 0; each pair of steps adds 2 to fa; the read after step k sees fa.
    std::uint64_t expected = 0;
    for (int step = 0; step < 6; ++step) {
      const std::uint64_t fa_now = static_cast<std::uint64_t>(step % 2 ? step + 1 : step);
      std::uint64_t t = 0;
      for (rill::coord_t p = 0; p < points / 2; ++p) t = checksum_step(t, fa_now);
      expected = checksum_step(expected, t);
    }
    std::uint64_t repeats = 0;
    for (std::size_t c = 0; c < pieces.colors(); ++c) {
      repeats += repeated[c].get_future().get();
      expect(read[c].get_future().get() == expected, "a piece read other values than its steps wrote");
    }
    // (Each piece's steps are analysed, then remembered, in its own task's context.)
    expect(repeats > 0, "no sub-launch was planned as remembered");
    expect(value_at(root, fa, 0) == 6 && value_at(root, fa, points - 1) == 6, "the pieces' last step was lost");
  });
}

INSTANTIATE_TEST_SUITE_P(setups, launch_memo, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
