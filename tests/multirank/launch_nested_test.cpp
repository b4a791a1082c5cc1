// Sub-launches (docs/regions.md): launches made by a launched task's body, analysed on its rank
// within its regions. Random sub-programs in every piece of a partition (reads, writes,
// reductions, index launches over aliased windows, a second level of nesting), on ranks a random
// mapper picks on every rank, against the same programs run sequentially; reductions under
// reducing pieces, folded into theirs; each rank analysing the sub-launches of the pieces it runs;
// a parent ending only after its sub-launches; what is refused; and a sub-launch's failure
// failing its parent.
#include <algorithm>
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

class sub_launches : public ::testing::TestWithParam<setup> {};

using data::misuse_of;
using data::poison_of;
using data::says;

using namespace launch_model;

const rill::field_space ab{fa, fb};
constexpr rill::coord_t points = 64;
constexpr std::size_t pieces = 4;
constexpr std::uint64_t kinds = 6;

// One step of a piece's sub-program: an op, on one of the piece's regions (0: the piece, 1-2: its
// halves, 3-4: two overlapping windows); `windows`: an index launch over both windows instead
// (reductions only).
struct step {
  op o;
  std::uint8_t where;
  bool windows;
};

// The sub-program of piece `color` in program `seed`: the same in the piece's task and in the model.
std::vector<step> sub_program(std::uint64_t seed, std::size_t color) {
  std::mt19937_64 rng(seed * 1000 + color);
  std::vector<step> out;
  for (std::uint64_t id = 1; id <= 12; ++id) {
    const auto k = static_cast<kind>(rng() % kinds);
    const auto mask = static_cast<std::uint8_t>(1 + rng() % 3);
    const auto where = static_cast<std::uint8_t>(rng() % 5);
    out.push_back({{k, seed * 100 + id, mask}, where, reduces(k) && rng() % 3 == 0});
  }
  return out;
}

// The piece's regions, made in its task (any rank may partition a region it has).
struct piece_regions {
  rill::partition halves, windows;
  std::vector<rill::region> all;
  explicit piece_regions(rill::region piece) {
    halves = rill::partition_equal(piece, 2);
    const rill::coord_t lo = piece.space<1>().bounds().lo[0];
    windows = rill::partition_by_subspaces(
        piece, std::vector<rill::index_space<1>>{rill::rect<1>{lo, lo + 9}, rill::rect<1>{lo + 6, lo + 15}});
    all = {piece, halves.subregion(0), halves.subregion(1), windows.subregion(0), windows.subregion(1)};
  }
};

// A piece's task: reads what its piece holds, then runs its sub-program as sub-launches and,
// beside them, on a model of the piece; a read that sees other values than the model fails it.
void run_piece(const rill::physical_regions& rs, std::size_t color, std::uint64_t seed) {
  const piece_regions mine(rs[0].reg);
  model m(points);
  for (rill::field<std::uint64_t> f : {fa, fb}) {
    auto acc = rs[0].read<std::uint64_t, 1>(f);
    rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { m.v[f.id][std::size_t(p[0])] = acc[p]; });
  }
  const auto run_op = [](const rill::physical_regions& sub, op x) { (void)apply(sub[0], x); };
  std::vector<std::pair<rill::future<std::uint64_t>, std::uint64_t>> reads;
  for (const auto& [o, where, windows] : sub_program(seed, color)) {
    if (windows) {
      rill::index_launch([](const rill::physical_regions& sub, std::size_t, op x) { (void)apply(sub[0], x); },
                         mine.windows, {requirement_of(mine.windows, o)}, o);
      for (std::size_t c = 0; c < 2; ++c) m.run(o, mine.windows.subregion(c).space<1>());
      continue;
    }
    const rill::region r = mine.all[where];
    if (o.k == kind::nested_write) {
      // A second level: the sub-launch's task launches the write on its own region.
      rill::launch(
          [](const rill::physical_regions& sub, op x) {
            rill::launch(
                +[](const rill::physical_regions& inner, op y) { (void)apply(inner[0], y); },
                {rill::req(sub[0].reg, fields_of(x.mask), rill::privilege::read_write)}, x);
          },
          {requirement_of(r, o)}, o);
      m.run(o, r.space<1>());
      continue;
    }
    if (o.k != kind::read_only) {
      rill::launch(run_op, {requirement_of(r, o)}, o);
      m.run(o, r.space<1>());
      continue;
    }
    rill::promise<std::uint64_t> sum;
    rill::launch(
        [](const rill::physical_regions& sub, op x, rill::promise<std::uint64_t> out) { out.put(apply(sub[0], x)); },
        {requirement_of(r, o)}, o, sum);
    reads.emplace_back(sum.get_future(), m.run(o, r.space<1>()));
  }
  for (auto& [f, expected] : reads)
    if (f.get() != expected) throw std::logic_error("a sub-launch saw other values than in program order");
}

// Sets the mapper of every rank's launches (a random one, or the default for seed 0).
void map_everywhere(std::uint64_t seed) {
  std::vector<rill::event> set;
  for (int r = 0; r < rill::rank_n(); ++r)
    set.push_back(rill::proc(r).spawn(
        [](std::uint64_t s) {
          rill::set_mapper(s ? std::make_shared<random_mapper>(s + std::uint64_t(rill::rank_me())) : nullptr);
        },
        seed));
  for (rill::event e : set) e.wait();
}

void random_program(std::uint64_t seed) {
  const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
  const rill::partition by_piece = rill::partition_equal(root, pieces);
  model m(points);
  rill::launch(
      [](const rill::physical_regions& rs) {
        for (rill::field<std::uint64_t> f : {fa, fb}) {
          auto acc = rs[0].write<std::uint64_t, 1>(f);
          rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] = 0; });
        }
      },
      {rill::req(root, {fa.id, fb.id}, rill::privilege::write_discard)});
  // Every piece at once, each running its sub-program; then the whole read back.
  const rill::event ran =
      rill::index_launch(run_piece, by_piece, {rill::req(by_piece, {fa.id, fb.id}, rill::privilege::read_write)}, seed);
  for (std::size_t c = 0; c < pieces; ++c) {
    const piece_regions mine(by_piece.subregion(c));
    for (const auto& [o, where, windows] : sub_program(seed, c)) {
      if (windows)
        for (std::size_t w = 0; w < 2; ++w) m.run(o, mine.windows.subregion(w).space<1>());
      else
        m.run(o, mine.all[where].space<1>());
    }
  }
  expect(poison_of(ran) == "no error", "a piece's sub-program failed: " + poison_of(ran));
  expect(read_back(root, points) == m.values(), "the final values differ from the sequential program's");
}

TEST_P(sub_launches, random_sub_programs_match_their_sequential_execution) {
  run_checked(GetParam(), [] {
    for (std::uint64_t seed : {1, 2}) random_program(seed);
    map_everywhere(17);
    for (std::uint64_t seed : {3, 4}) random_program(seed);
    map_everywhere(0);
  });
}

// A piece's task reducing into its piece: its body reduces too, and its sub-launches reduce into
// the halves, both windows (an index launch) and, one level further down, the first half again.
void reduce_piece(const rill::physical_regions& rs, std::size_t, op o) {
  const piece_regions mine(rs[0].reg);
  const auto run_op = [](const rill::physical_regions& sub, op x) { (void)apply(sub[0], x); };
  (void)apply(rs[0], o);
  for (std::size_t h = 1; h <= 2; ++h) rill::launch(run_op, {requirement_of(mine.all[h], o)}, o);
  rill::index_launch([](const rill::physical_regions& sub, std::size_t, op x) { (void)apply(sub[0], x); }, mine.windows,
                     {requirement_of(mine.windows, o)}, o);
  rill::launch(
      [](const rill::physical_regions& sub, op x) {
        const rill::region first = rill::partition_equal(sub[0].reg, 2).subregion(0);
        rill::launch(
            +[](const rill::physical_regions& inner, op y) { (void)apply(inner[0], y); }, {requirement_of(first, x)},
            x);
      },
      {requirement_of(mine.all[0], o)}, o);
}

// What reduce_piece does to the model, for every piece.
void model_reduce_pieces(model& m, rill::partition by_piece, op o) {
  for (std::size_t c = 0; c < pieces; ++c) {
    const piece_regions mine(by_piece.subregion(c));
    for (std::size_t r : {0, 1, 2, 3, 4}) m.run(o, mine.all[r].space<1>());
    m.run(o, rill::partition_equal(mine.all[0], 2).subregion(0).space<1>());
  }
}

// Sub-launches under a reduction reduce by the same operator; what they reduce is folded into the
// parent's reduction, which reaches the region after the parent, on top of what was there.
TEST_P(sub_launches, reductions_under_a_reducing_parent_reach_its_region) {
  run_checked(GetParam(), [] {
    map_everywhere(29);
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const rill::partition by_piece = rill::partition_equal(root, pieces);
    model m(points);
    const op first{kind::write_discard, 1, 3};
    rill::launch([](const rill::physical_regions& rs, op x) { (void)apply(rs[0], x); }, {requirement_of(root, first)},
                 first);
    m.run(first, root.space<1>());
    for (const op o : {op{kind::reduce_sum, 2, 1}, op{kind::reduce_max, 3, 3}, op{kind::reduce_sum, 4, 2}}) {
      rill::index_launch(reduce_piece, by_piece, {requirement_of(by_piece, o)}, o);
      model_reduce_pieces(m, by_piece, o);
    }
    expect(read_back(root, points) == m.values(), "the final values differ from the sequential program's");
    map_everywhere(0);
  });
}

// Piece c on rank c % ranks: each rank analyses the sub-launches of its pieces, rank 0 only the
// pieces themselves (and what it runs).
TEST_P(sub_launches, each_rank_analyses_the_sub_launches_of_the_pieces_it_runs) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const rill::partition by_piece = rill::partition_equal(root, pieces);
    const auto count_everywhere = [] {
      std::vector<rill::future<std::uint64_t>> counts;
      for (int r = 0; r < rill::rank_n(); ++r) {
        rill::promise<std::uint64_t> p;
        counts.push_back(p.get_future());
        rill::proc(r).spawn([](rill::promise<std::uint64_t> out) { out.put(rill::launch_counts_here().launches); }, p);
      }
      std::vector<std::uint64_t> out;
      for (auto& f : counts) out.push_back(f.get());
      return out;
    };
    const std::vector<std::uint64_t> before = count_everywhere();
    constexpr std::uint64_t subs = 5;
    rill::index_launch(
        [](const rill::physical_regions& rs, std::size_t) {
          const rill::partition quarters = rill::partition_equal(rs[0].reg, 4);
          for (std::uint64_t i = 0; i < subs; ++i)
            rill::launch([](const rill::physical_regions&) {},
                         {rill::req(quarters.subregion(i % 4), {fa.id}, rill::privilege::read_write)});
        },
        by_piece, {rill::req(by_piece, {fa.id}, rill::privilege::write_discard)})
        .wait();
    const std::vector<std::uint64_t> after = count_everywhere();
    const auto n = static_cast<std::size_t>(rill::rank_n());
    for (std::size_t r = 0; r < n; ++r) {
      std::uint64_t want = 0;
      for (std::size_t c = 0; c < pieces; ++c)
        if (c % n == r) want += subs;
      if (r == 0) want += pieces;
      expect(after[r] - before[r] == want, "rank " + std::to_string(r) + " analysed " +
                                               std::to_string(after[r] - before[r]) + " launches, not " +
                                               std::to_string(want));
    }
  });
}

// The parent's event waits for its sub-launches; what they wrote is in the region afterwards.
// The sum of field fa over region r, read by a launch.
std::uint64_t sum_of_fa(rill::region r) {
  rill::promise<std::uint64_t> sum;
  rill::launch(
      [](const rill::physical_regions& rs, rill::promise<std::uint64_t> out) {
        auto acc = rs[0].read<std::uint64_t, 1>(fa);
        std::uint64_t s = 0;
        rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { s += acc[p]; });
        out.put(s);
      },
      {rill::req(r, {fa.id}, rill::privilege::read_only)}, sum);
  return sum.get_future().get();
}

TEST_P(sub_launches, a_parent_ends_after_its_sub_launches_with_their_writes) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    rill::user_event gate = rill::user_event::create();
    rill::promise<int> body_returned;
    auto elsewhere = std::make_shared<fixed_mapper>();
    elsewhere->rank = rill::rank_n() - 1;
    rill::set_mapper(elsewhere);
    const rill::event parent = rill::launch(
        [](const rill::physical_regions& rs, rill::event g, rill::promise<int> returned) {
          const rill::partition halves = rill::partition_equal(rs[0].reg, 2);
          for (std::size_t h = 0; h < 2; ++h)
            rill::launch(
                rill::after(g),
                [](const rill::physical_regions& sub, std::uint64_t v) {
                  auto acc = sub[0].write<std::uint64_t, 1>(fa);
                  sub[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] = v; });
                },
                {rill::req(halves.subregion(h), {fa.id}, rill::privilege::write_discard)}, 10 + h);
          returned.put(1);
        },
        {rill::req(root, {fa.id}, rill::privilege::write_discard)}, rill::event(gate), body_returned);
    rill::set_mapper(nullptr);
    expect(body_returned.get_future().get() == 1, "the parent's body did not return");
    // Its sub-launches wait for the gate, so it has not ended.
    expect(!parent.has_triggered(), "a parent ended before its sub-launches");
    gate.trigger();
    expect(sum_of_fa(root) == (points / 2) * 10 + (points / 2) * 11, "the sub-launches' writes were lost");
    expect(poison_of(parent) == "no error", "the parent failed");
  });
}

TEST_P(sub_launches, requirements_beyond_the_parents_are_refused_and_failures_reach_the_parent) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const rill::partition halves = rill::partition_equal(root, 2);
    rill::launch([](const rill::physical_regions&) {},
                 {rill::req(root, {fa.id, fb.id}, rill::privilege::write_discard)});
    // What a parent with half 0, fa read-only, may not launch: each refusal's text.
    rill::promise<std::vector<std::string>> refusals;
    rill::launch(
        [](const rill::physical_regions& rs, rill::region other, rill::promise<std::vector<std::string>> out) {
          const auto nothing = [](const rill::physical_regions&) {};
          std::vector<std::string> said;
          said.push_back(
              misuse_of([&] { rill::launch(nothing, {rill::req(rs[0].reg, {fa.id}, rill::privilege::read_write)}); }));
          said.push_back(
              misuse_of([&] { rill::launch(nothing, {rill::req(rs[0].reg, {fb.id}, rill::privilege::read_only)}); }));
          said.push_back(
              misuse_of([&] { rill::launch(nothing, {rill::req(other, {fa.id}, rill::privilege::read_only)}); }));
          said.push_back(misuse_of(
              [&] { rill::launch(nothing, {rill::req(rs[0].reg, {fa.id}, rill::privilege::read_only)}).wait(); }));
          out.put(std::move(said));
        },
        {rill::req(halves.subregion(0), {fa.id}, rill::privilege::read_only)}, halves.subregion(1), refusals);
    const std::vector<std::string> said = refusals.get_future().get();
    for (std::size_t i = 0; i < 3; ++i)
      expect(says(said[i], "not within the launching task's regions"), "refusal " + std::to_string(i) + ": " + said[i]);
    expect(said[3] == "no error", "a read within the parent's read was refused: " + said[3]);
    // Under a reduction (of fa over the root, beside reading half 0): only reductions by the same
    // operator, and none on points the parent reads.
    rill::promise<std::vector<std::string>> under_reduce;
    rill::launch(
        [](const rill::physical_regions& rs, rill::region half, rill::promise<std::vector<std::string>> out) {
          const auto nothing = [](const rill::physical_regions&) {};
          const rill::region all = rs[1].reg;
          std::vector<std::string> said;
          said.push_back(
              misuse_of([&] { rill::launch(nothing, {rill::req(half, {fa.id}, rill::reduce_with<max_op>())}); }));
          said.push_back(
              misuse_of([&] { rill::launch(nothing, {rill::req(half, {fa.id}, rill::privilege::read_only)}); }));
          said.push_back(
              misuse_of([&] { rill::launch(nothing, {rill::req(all, {fa.id}, rill::reduce_with<sum_op>())}); }));
          said.push_back(
              misuse_of([&] { rill::launch(nothing, {rill::req(half, {fa.id}, rill::reduce_with<sum_op>())}); }));
          out.put(std::move(said));
        },
        {rill::req(halves.subregion(0), {fa.id}, rill::privilege::read_only),
         rill::req(root, {fa.id}, rill::reduce_with<sum_op>())},
        halves.subregion(1), under_reduce);
    const std::vector<std::string> reduce_said = under_reduce.get_future().get();
    for (std::size_t i = 0; i < 2; ++i)
      expect(says(reduce_said[i], "not within the launching task's regions"),
             "under a reduction, refusal " + std::to_string(i) + ": " + reduce_said[i]);
    expect(says(reduce_said[2], "shares points and fields with the launching task's read_only region"),
           "a reduction over points the parent reads: " + reduce_said[2]);
    expect(reduce_said[3] == "no error", "a reduction under the parent's was refused: " + reduce_said[3]);
    // A sub-launch that throws fails its parent, and a later launch of the same data.
    const rill::event failed = rill::launch(
        [](const rill::physical_regions& rs) {
          rill::launch([](const rill::physical_regions&) { throw std::runtime_error("the inner task broke"); },
                       {rill::req(rs[0].reg, {fb.id}, rill::privilege::read_write)});
        },
        {rill::req(halves.subregion(1), {fb.id}, rill::privilege::read_write)});
    expect(says(poison_of(failed), "the inner task broke"), "a sub-launch's failure did not reach its parent");
    // The instances made for a failed parent's sub-launches are gone when it ends: here the fold
    // instance of a reduction that failed.
    rill::promise<rill::instance> fold;
    const rill::event failed_reduction = rill::launch(
        [](const rill::physical_regions& rs, rill::promise<rill::instance> out) {
          rill::launch(
              [](const rill::physical_regions& sub, rill::promise<rill::instance> mine) {
                mine.put(sub[0].inst);
                throw std::runtime_error("the reduction broke");
              },
              {rill::req(rs[0].reg, {fa.id}, rill::reduce_with<sum_op>())}, out);
        },
        {rill::req(halves.subregion(1), {fa.id}, rill::privilege::read_write)}, fold);
    expect(says(poison_of(failed_reduction), "the reduction broke"), "the failed reduction did not fail its parent");
    const rill::instance made = fold.get_future().get();
    rill::promise<std::string> lookup;
    rill::proc(made.owner())
        .spawn(
            [](rill::instance i, rill::promise<std::string> out) {
              out.put(misuse_of([&] { (void)rill::accessor<std::uint64_t, 1>(i, fa); }));
            },
            made, lookup)
        .wait();
    expect(says(lookup.get_future().get(), "does not exist"), "a failed parent's fold instance outlived it");
    const rill::event later =
        rill::launch([](const rill::physical_regions&) {}, {rill::req(root, {fb.id}, rill::privilege::read_only)});
    expect(says(poison_of(later), "the inner task broke"), "a launch after a failed parent did not fail");
  });
}

// An index sub-launch whose later points lie outside the parent's region is refused before any
// point runs: a parent holding half of a region launches over its quarters, of which the last two
// are the other half's; the first two must not have written.
TEST_P(sub_launches, an_index_sub_launch_refused_at_a_later_point_runs_no_point) {
  run_checked(GetParam(), [] {
    const rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, ab);
    const rill::partition halves = rill::partition_equal(root, 2);
    const rill::partition quarters = rill::partition_equal(root, 4);
    const auto set_to = [](const rill::physical_regions& rs, std::uint64_t v) {
      auto acc = rs[0].write<std::uint64_t, 1>(fa);
      rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] = v; });
    };
    rill::launch(set_to, {rill::req(root, {fa.id}, rill::privilege::write_discard)}, std::uint64_t{1});
    rill::promise<std::string> refusal;
    rill::launch(
        [](const rill::physical_regions&, rill::partition over, rill::promise<std::string> out) {
          out.put(misuse_of([&] {
            rill::index_launch(
                [](const rill::physical_regions& rs, std::size_t) {
                  auto acc = rs[0].write<std::uint64_t, 1>(fa);
                  rs[0].reg.space<1>().for_each_point([&](const rill::point<1>& p) { acc[p] = 5; });
                },
                over, {rill::req(over, {fa.id}, rill::privilege::read_write)});
          }));
        },
        {rill::req(halves.subregion(0), {fa.id}, rill::privilege::read_write)}, quarters, refusal);
    const std::string said = refusal.get_future().get();
    expect(says(said, "requirement 0 of a sub-launch") && says(said, "not within the launching task's regions"),
           "an index sub-launch beyond the parent: " + said);
    const std::uint64_t got = sum_of_fa(root);
    expect(got == static_cast<std::uint64_t>(points), "points of the refused launch ran: sum " + std::to_string(got));
  });
}

INSTANTIATE_TEST_SUITE_P(setups, sub_launches, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
