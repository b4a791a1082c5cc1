// Bulk reductions (rill/reduction.hpp): tasks on every rank fold into fold instances without
// locks, which are reduced into one instance on another rank -- checked against a sequential
// model (exactly for integers, within a tolerance for floating point), with an operator whose fold
// is not its apply (exponentiation), hierarchically (fold into fold), and refused whole when sizes
// do not match. Each test runs with instances reachable across ranks and with messages only.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "data_harness.hpp"
#include "global_harness.hpp"
#include "harness.hpp"
#include "rill/reduction.hpp"

namespace rill_test {
namespace {

using data::poison_of;
using data::says;

class reductions : public ::testing::TestWithParam<setup> {};

constexpr rill::field_id partial = 5;
constexpr rill::field_id total = 6;
constexpr rill::coord_t buckets = 97;
constexpr int tasks_per_rank = 4;
constexpr int updates_per_task = 500;

// The bucket and the value of update u of task t on rank r.
rill::coord_t bucket_of(int r, int t, int u) { return (r * 7919 + t * 104729 + u * 31) % buckets; }
long value_of(int r, int t, int u) { return (r + 1) * 1000 + t * 10 + u % 7; }
double real_value_of(int r, int t, int u) { return 1.0 / (1 + r + t + u % 13); }

// Every rank folds its tasks' updates (value_of, or real_value_of for floating point operators)
// into a fold instance of its own; returns those instances.
template <class Op>
std::vector<rill::instance> fold_everywhere() {
  const int n = rill::rank_n();
  std::vector<rill::instance> parts;
  std::vector<rill::event> folded;
  for (int r = 0; r < n; ++r) {
    auto [inst, ready] =
        rill::create_fold_instance<Op>(rill::memory::system(r), rill::rect<1>{0, buckets - 1}, partial);
    parts.push_back(inst);
    folded.push_back(rill::proc(r).spawn(
        rill::after(ready),
        [](rill::instance i) {
          rill::finish([&] {
            for (int t = 0; t < tasks_per_rank; ++t)
              rill::async([=] {
                const rill::reducer<Op, 1> fold(i, partial);  // no lock: atomic folds
                for (int u = 0; u < updates_per_task; ++u) {
                  const int me = rill::rank_me();
                  if constexpr (std::is_floating_point_v<typename Op::rhs>)
                    fold({bucket_of(me, t, u)}, real_value_of(me, t, u));
                  else
                    fold({bucket_of(me, t, u)}, value_of(me, t, u));
                }
              });
          });
        },
        inst));
  }
  for (rill::event e : folded) e.wait();
  return parts;
}

// Elements 0 .. count - 1 of field f of a 1-D instance.
template <class T>
std::vector<T> read_field(rill::instance inst, rill::field_id f, rill::coord_t count = buckets) {
  return rill::rpc(
             inst.owner(),
             [](rill::instance i, rill::field_id id, rill::coord_t n) {
               rill::accessor<T, 1> a(i, id);
               std::vector<T> out;
               for (rill::coord_t b = 0; b < n; ++b) out.push_back(a[{b}]);
               return out;
             },
             inst, f, count)
      .get();
}

TEST_P(reductions, fold_instances_reduce_into_another_rank_exactly) {
  both_ways(GetParam(), [](bool) {
    using op = rill::reduce::sum<long>;
    const int n = rill::rank_n();
    const std::vector<rill::instance> parts = fold_everywhere<op>();
    auto [totals, ready] = rill::instance::create(rill::memory::registered(n - 1), rill::rect<1>{0, buckets - 1},
                                                  rill::field_space{}.add(total, sizeof(long)));
    rill::fill(totals, rill::field<long>{total}, 100L, ready).wait();
    std::vector<rill::event> reduced;
    for (rill::instance p : parts) reduced.push_back(rill::reduce_into<op>(p, partial, totals, total));
    rill::merge(reduced).wait();
    std::vector<long> model(buckets, 100);
    for (int r = 0; r < n; ++r)
      for (int t = 0; t < tasks_per_rank; ++t)
        for (int u = 0; u < updates_per_task; ++u)
          model[static_cast<std::size_t>(bucket_of(r, t, u))] += value_of(r, t, u);
    expect(read_field<long>(totals, total) == model, "reduced totals differ from the sequential model");
    for (rill::instance p : parts) p.destroy().wait();
    totals.destroy().wait();
  });
}

TEST_P(reductions, floating_point_within_tolerance_and_hierarchically) {
  both_ways(GetParam(), [](bool) {
    using op = rill::reduce::sum<double>;
    const int n = rill::rank_n();
    const std::vector<rill::instance> parts = fold_everywhere<op>();
    // Fold every rank's part into one fold instance on rank 0, then apply that one.
    auto [gathered, g_ready] =
        rill::create_fold_instance<op>(rill::memory::registered(0), rill::rect<1>{0, buckets - 1}, partial);
    std::vector<rill::event> folded;
    for (rill::instance p : parts) folded.push_back(rill::fold_into<op>(p, partial, gathered, partial, g_ready));
    auto [totals, ready] = rill::instance::create(rill::memory::system(n - 1), rill::rect<1>{0, buckets - 1},
                                                  rill::field_space{}.add(total, sizeof(double)));
    const rill::event zeroed = rill::fill(totals, rill::field<double>{total}, 0.0, ready);
    rill::reduce_into<op>(gathered, partial, totals, total,
                          rill::merge(std::vector<rill::event>{rill::merge(folded), zeroed}),
                          /*exclusive=*/true)
        .wait();
    std::vector<double> model(buckets, 0.0);
    for (int r = 0; r < n; ++r)
      for (int t = 0; t < tasks_per_rank; ++t)
        for (int u = 0; u < updates_per_task; ++u)
          model[static_cast<std::size_t>(bucket_of(r, t, u))] += real_value_of(r, t, u);
    const std::vector<double> got = read_field<double>(totals, total);
    for (std::size_t b = 0; b < model.size(); ++b)
      expect(std::abs(got[b] - model[b]) <= 1e-9 * std::abs(model[b]),
             "bucket " + std::to_string(b) + ": " + std::to_string(got[b]) + " against " + std::to_string(model[b]));
    for (rill::instance p : parts) p.destroy().wait();
    gathered.destroy().wait();
    totals.destroy().wait();
  });
}

// Raising to a power: reductions fold by multiplying their exponents, which apply does not do.
struct power {
  using lhs = std::uint64_t;
  using rhs = std::uint64_t;
  static constexpr rhs identity = 1;
  static std::uint64_t raise(std::uint64_t base, std::uint64_t e) {
    std::uint64_t out = 1;
    for (; e; e >>= 1, base *= base)
      if (e & 1) out *= base;
    return out;
  }
  template <bool exclusive>
  static void apply(lhs& l, rhs r) {
    if constexpr (exclusive)
      l = raise(l, r);
    else
      rill::detail::atomically(l, r, [](std::uint64_t x, std::uint64_t y) { return raise(x, y); });
  }
  template <bool exclusive>
  static void fold(rhs& a, rhs b) {
    rill::reduce::product<std::uint64_t>::fold<exclusive>(a, b);
  }
};
static_assert(rill::bulk_reduction_op<power>);

TEST_P(reductions, a_fold_that_is_not_the_apply) {
  both_ways(GetParam(), [](bool) {
    const int last = rill::rank_n() - 1;
    // Exponents 2, 3 and 5 folded into one instance, applied to bases 3 + b: (3+b)^30.
    auto [exps, e_ready] =
        rill::create_fold_instance<power>(rill::memory::system(0), rill::rect<1>{0, buckets - 1}, partial);
    rill::proc(0)
        .spawn(
            rill::after(e_ready),
            [](rill::instance i) {
              const rill::reducer<power, 1> fold(i, partial);
              for (rill::coord_t b = 0; b < buckets; ++b)
                for (std::uint64_t e : {2, 3, 5}) fold({b}, e);
            },
            exps)
        .wait();
    auto [bases, ready] = rill::instance::create(rill::memory::registered(last), rill::rect<1>{0, buckets - 1},
                                                 rill::field_space{}.add(total, sizeof(std::uint64_t)));
    ready.wait();
    rill::rpc(
        last,
        [](rill::instance i) {
          rill::accessor<std::uint64_t, 1> a(i, total);
          for (rill::coord_t b = 0; b < buckets; ++b) a[{b}] = static_cast<std::uint64_t>(3 + b);
        },
        bases)
        .get();
    rill::reduce_into<power>(exps, partial, bases, total).wait();
    std::vector<std::uint64_t> model;
    for (rill::coord_t b = 0; b < buckets; ++b)
      model.push_back(power::raise(power::raise(power::raise(3 + b, 2), 3), 5));
    expect(read_field<std::uint64_t>(bases, total) == model, "exponentiation folded wrong");
    exps.destroy().wait();
    bases.destroy().wait();
  });
}

// Lists from every rank folded into one fold instance (with fold, which for exponents
// multiplies), which is then applied to the bases: hierarchical, list into fold into an instance.
TEST_P(reductions, lists_fold_into_a_fold_instance_that_then_reduces) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n(), last = n - 1;
    auto [exps, e_ready] =
        rill::create_fold_instance<power>(rill::memory::system(last), rill::rect<1>{0, buckets - 1}, partial);
    std::vector<rill::instance> logs;
    std::vector<rill::event> folded;
    for (int r = 0; r < n; ++r) {
      auto [log, ready] = rill::create_list_instance<power, 1>(rill::memory::system(r), 2 * buckets, partial);
      logs.push_back(log);
      const rill::event logged = rill::proc(r).spawn(
          rill::after(ready),
          [](rill::instance l) {
            const rill::list_reducer<power, 1> log_it(l, partial);
            const std::uint64_t e = 2 + static_cast<std::uint64_t>(rill::rank_me() % 2);
            for (rill::coord_t b = 0; b < buckets; ++b) {
              log_it({b}, e);
              log_it({b}, e);
            }
          },
          log);
      folded.push_back(rill::replay_fold_into<power, 1>(log, partial, exps, partial, rill::merge(logged, e_ready)));
    }
    auto [bases, ready] = rill::instance::create(rill::memory::registered(0), rill::rect<1>{0, buckets - 1},
                                                 rill::field_space{}.add(total, sizeof(std::uint64_t)));
    ready.wait();
    rill::rpc(
        0,
        [](rill::instance i) {
          rill::accessor<std::uint64_t, 1> a(i, total);
          for (rill::coord_t b = 0; b < buckets; ++b) a[{b}] = static_cast<std::uint64_t>(3 + b);
        },
        bases)
        .get();
    rill::reduce_into<power>(exps, partial, bases, total, rill::merge(folded)).wait();
    std::uint64_t exponent = 1;
    for (int r = 0; r < n; ++r)
      exponent *= (2 + static_cast<std::uint64_t>(r % 2)) * (2 + static_cast<std::uint64_t>(r % 2));
    std::vector<std::uint64_t> model;
    for (rill::coord_t b = 0; b < buckets; ++b)
      model.push_back(power::raise(static_cast<std::uint64_t>(3 + b), exponent));
    expect(read_field<std::uint64_t>(bases, total) == model, "lists folded into a fold instance reduced wrong");
    for (rill::instance l : logs) l.destroy().wait();
    exps.destroy().wait();
    bases.destroy().wait();
  });
}

TEST_P(reductions, sizes_that_do_not_fit_the_operator_are_refused_whole) {
  both_ways(GetParam(), [](bool) {
    const int last = rill::rank_n() - 1;
    using op = rill::reduce::sum<double>;
    auto [src, s_ready] = rill::create_fold_instance<op>(rill::memory::system(0), rill::rect<1>{0, 9}, partial);
    auto [dst, d_ready] = rill::instance::create(rill::memory::system(last), rill::rect<1>{0, 9},
                                                 rill::field_space{}.add(total, sizeof(float)));
    const rill::event filled = rill::fill(dst, rill::field<float>{total}, 2.5f, d_ready);
    const std::string why = poison_of(
        rill::reduce_into<op>(src, partial, dst, total, rill::merge(std::vector<rill::event>{s_ready, filled})));
    expect(says(why,
                "reduces 8-byte values into 8-byte elements, but field 5 of the source has 8 bytes and field 6 "
                "of the destination 4"),
           "a size mismatch said: " + why);
    for (float v : read_field<float>(dst, total, 10))
      expect(v == 2.5f, "a refused reduction wrote into its destination");
    src.destroy().wait();
    dst.destroy().wait();
  });
}

TEST_P(reductions, list_instances_replay_exactly_what_was_logged) {
  both_ways(GetParam(), [](bool) {
    using op = rill::reduce::sum<long>;
    const int n = rill::rank_n();
    constexpr rill::coord_t sparse = 100000;  // buckets; the reductions touch few of them
    std::vector<rill::instance> logs;
    std::vector<rill::event> logged;
    for (int r = 0; r < n; ++r) {
      auto [log, ready] =
          rill::create_list_instance<op, 1>(rill::memory::system(r), tasks_per_rank * updates_per_task, partial);
      logs.push_back(log);
      logged.push_back(rill::proc(r).spawn(
          rill::after(ready),
          [](rill::instance l) {
            rill::finish([&] {
              for (int t = 0; t < tasks_per_rank; ++t)
                rill::async([=] {
                  const rill::list_reducer<op, 1> log_it(l, partial);
                  const int me = rill::rank_me();
                  for (int u = 0; u < updates_per_task; ++u)
                    log_it({bucket_of(me, t, u) * 1000 + u}, value_of(me, t, u));
                });
            });
          },
          log));
    }
    auto [totals, ready] = rill::instance::create(rill::memory::registered(n - 1), rill::rect<1>{0, sparse - 1},
                                                  rill::field_space{}.add(total, sizeof(long)));
    const rill::event zeroed = rill::fill(totals, rill::field<long>{total}, 0L, ready);
    std::vector<rill::event> replayed;
    for (int r = 0; r < n; ++r)
      replayed.push_back(
          rill::replay_into<op, 1>(logs[static_cast<std::size_t>(r)], partial, totals, total,
                                   rill::merge(std::vector<rill::event>{logged[static_cast<std::size_t>(r)], zeroed})));
    rill::merge(replayed).wait();
    std::vector<long> model(sparse, 0);
    for (int r = 0; r < n; ++r)
      for (int t = 0; t < tasks_per_rank; ++t)
        for (int u = 0; u < updates_per_task; ++u)
          model[static_cast<std::size_t>(bucket_of(r, t, u) * 1000 + u)] += value_of(r, t, u);
    expect(read_field<long>(totals, total, sparse) == model, "a replayed list differs from the sequential model");
    for (rill::instance l : logs) l.destroy().wait();
    totals.destroy().wait();
  });
}

TEST_P(reductions, a_full_list_and_an_entry_outside_are_loud) {
  both_ways(GetParam(), [](bool) {
    using op = rill::reduce::sum<long>;
    const int last = rill::rank_n() - 1;
    auto [log, ready] = rill::create_list_instance<op, 2>(rill::memory::system(last), 3, partial);
    ready.wait();
    const std::string full = rill::rpc(
                                 last,
                                 [](rill::instance l) {
                                   const rill::list_reducer<op, 2> log_it(l, partial);
                                   log_it({0, 0}, 1);
                                   log_it({1, 1}, 2);
                                   log_it({9, 9}, 3);  // outside the destination below
                                   return data::misuse_of([&] { log_it({2, 2}, 4); });
                                 },
                                 log)
                                 .get();
    expect(says(full, "the list instance is full (3 entries)"), "a full list said: " + full);
    auto [dst, d_ready] = rill::instance::create(rill::memory::system(0), rill::rect<2>{{0, 0}, {4, 4}},
                                                 rill::field_space{}.add(total, sizeof(long)));
    const rill::event zeroed = rill::fill(dst, rill::field<long>{total}, 5L, d_ready);
    const std::string outside = poison_of(rill::replay_into<op, 2>(log, partial, dst, total, zeroed));
    expect(says(outside, "entry 2 of the list reduces into a point outside the destination"),
           "an entry outside said: " + outside);
    const long untouched = rill::rpc(
                               0,
                               [](rill::instance d) {
                                 rill::accessor<long, 2> a(d, total);
                                 return a[{0, 0}] + a[{1, 1}];
                               },
                               dst)
                               .get();
    expect(untouched == 10, "a refused replay wrote into its destination");
    log.destroy().wait();
    dst.destroy().wait();
  });
}

INSTANTIATE_TEST_SUITE_P(setups, reductions, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
