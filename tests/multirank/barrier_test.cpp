// Phase barriers between ranks: arrivals from every rank before anyone waits, phase after phase
// with reductions checked on every rank against the sequential answer, arrivals at later phases
// before the earlier ones complete, remote waiters for later phases, deferred arrivals on remote
// preconditions, and poisoned arrivals. Rank 0's top-level task drives each test; a check that
// fails on any rank throws there, which poisons that task's event and reaches rank 0's wait().
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace rill_test {
namespace {

class barriers : public ::testing::TestWithParam<setup> {};

// A barrier of `expected` arrivals per phase, summing longs, created on (so owned by) `owner`.
rill::barrier sum_barrier_owned_by(int owner, std::uint32_t expected) {
  rill::barrier out;
  rill::latch got(1);
  rill::am::send(
      owner,
      [](rill::barrier* slot, rill::latch* done, std::uint32_t n) {
        rill::am::send(
            rill::am::sender(),
            [](rill::barrier* s, rill::latch* d, rill::barrier b) {
              *s = b;
              d->count_down();
            },
            slot, done, rill::barrier::create<rill::reduce::sum<long>>(n));
      },
      &out, &got, expected);
  got.wait();
  EXPECT_EQ(out.owner(), owner);
  return out;
}

long triangle(int n) { return static_cast<long>(n) * (n + 1) / 2; }

TEST_P(barriers, arrivals_from_every_rank_before_the_waiters) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    const int n = rill::rank_n();
                    for (int owner = 0; owner < n; ++owner) {
                      rill::barrier b = sum_barrier_owned_by(owner, static_cast<std::uint32_t>(n));
                      std::vector<rill::event> arrived;
                      for (int r = 0; r < n; ++r)
                        arrived.push_back(rill::proc(r).spawn(
                            [](rill::barrier bb) { bb.arrive(1, rill::event::none(), long{rill::rank_me() + 1}); }, b));
                      rill::merge(arrived).wait();
                      // Only now does anyone wait, on every rank, and read the sum.
                      std::vector<rill::event> checked;
                      for (int r = 0; r < n; ++r)
                        checked.push_back(rill::proc(r).spawn(
                            [](rill::barrier bb, long want) {
                              bb.wait();
                              expect(bb.result<long>() == want, "wrong sum");
                              expect(!bb.advance().has_triggered(), "the next phase triggered");
                            },
                            b, triangle(n)));
                      rill::merge(checked).wait();
                    }
                  }),
      0);
}

TEST_P(barriers, every_rank_steps_through_phases_and_reads_every_sum) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          constexpr int phases = 30;
                          rill::barrier b = sum_barrier_owned_by(n - 1, static_cast<std::uint32_t>(2 * n));
                          std::vector<rill::event> done;
                          for (int r = 0; r < n; ++r) {
                            // Two arrivals per rank and phase: one now, one from a task spawned elsewhere.
                            done.push_back(rill::proc(r).spawn(
                                [](rill::barrier bb, int ranks) {
                                  const int me = rill::rank_me();
                                  for (int p = 0; p < phases; ++p) {
                                    bb.arrive(1, rill::event::none(), long{me * p});
                                    rill::proc((me + 1) % ranks)
                                        .spawn([](rill::barrier x, long v) { x.arrive(1, rill::event::none(), v); }, bb,
                                               long{p});
                                    bb.wait();
                                    // Sequentially: sum over ranks of (r * p) + n * p.
                                    const long want = static_cast<long>(p) * (triangle(ranks - 1) + ranks);
                                    expect(bb.result<long>() == want, "wrong sum in phase " + std::to_string(p));
                                    bb = bb.advance();
                                  }
                                },
                                b, n));
                          }
                          rill::merge(done).wait();
                        }),
            0);
}

TEST_P(barriers, arrivals_at_later_phases_before_earlier_ones_complete) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          constexpr int phases = 12;
                          // A max barrier owned by rank 0 (this task's rank).
                          rill::barrier first =
                              rill::barrier::create<rill::reduce::max<int>>(static_cast<std::uint32_t>(n));
                          std::vector<rill::event> arrived;
                          for (int r = 0; r < n; ++r) {
                            // Every rank arrives at every phase, the last phase first.
                            arrived.push_back(rill::proc(r).spawn(
                                [](rill::barrier b0) {
                                  for (int p = phases - 1; p >= 0; --p) {
                                    rill::barrier bp = b0;
                                    for (int k = 0; k < p; ++k) bp = bp.advance();
                                    bp.arrive(1, rill::event::none(), rill::rank_me() * 100 + p);
                                  }
                                },
                                first));
                          }
                          rill::merge(arrived).wait();
                          rill::barrier b = first;
                          for (int p = 0; p < phases; ++p) {
                            EXPECT_EQ(b.result<int>(), (n - 1) * 100 + p);
                            b = b.advance();
                          }
                          EXPECT_FALSE(b.has_triggered());
                        }),
            0);
}

TEST_P(barriers, remote_waiters_for_a_later_phase_still_see_the_earlier_ones) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          rill::barrier b0 = sum_barrier_owned_by(0, static_cast<std::uint32_t>(n));
                          std::vector<rill::event> done;
                          for (int r = 0; r < n; ++r) {
                            done.push_back(rill::proc(r).spawn(
                                [](rill::barrier p0) {
                                  rill::barrier p1 = p0.advance(), p2 = p1.advance(), p3 = p2.advance();
                                  // Wait for phase 3 first (this rank subscribes to it), then for phase 1:
                                  // arrivals at phases 2 and 3 come only after phase 1 is seen here, so
                                  // the owner must tell this rank about phase 1 although its
                                  // subscription names phase 3.
                                  rill::event saw3 = rill::proc::here().spawn([](rill::barrier x) { x.wait(); }, p3);
                                  rill::yield();
                                  p0.arrive(1, rill::event::none(), 1L);
                                  p1.arrive(1, rill::event::none(), 2L);
                                  p1.wait();
                                  expect(p0.has_triggered(), "phase 0 not triggered after phase 1");
                                  p2.arrive(1, rill::event::none(), 3L);
                                  p3.arrive(1, rill::event::none(), 4L);
                                  saw3.wait();
                                  expect(p3.result<long>() == 4L * rill::rank_n(), "wrong sum in phase 3");
                                },
                                b0));
                          }
                          rill::merge(done).wait();
                        }),
            0);
}

TEST_P(barriers, deferred_and_poisoned_arrivals_from_remote_ranks) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          rill::barrier b = sum_barrier_owned_by(n - 1, static_cast<std::uint32_t>(n));
                          // Every rank arrives once a user event owned by rank 0 triggers.
                          rill::user_event go = rill::user_event::create();
                          std::vector<rill::event> issued;
                          for (int r = 0; r < n; ++r)
                            issued.push_back(rill::proc(r).spawn(
                                [](rill::barrier bb, rill::event after) { bb.arrive(1, after, 10L); }, b,
                                static_cast<rill::event>(go)));
                          rill::merge(issued).wait();
                          EXPECT_FALSE(b.has_triggered());
                          go.trigger();
                          EXPECT_EQ(b.result<long>(), 10L * n);

                          // The next phase: one rank's arrival follows a task that throws.
                          rill::barrier next = b.advance();
                          const int bad_rank = n > 1 ? 1 : 0;
                          issued.clear();
                          for (int r = 0; r < n; ++r) {
                            issued.push_back(rill::proc(r).spawn(
                                [](rill::barrier bb, int bad) {
                                  rill::event pre = rill::event::none();
                                  if (rill::rank_me() == bad)
                                    pre = rill::proc::here().spawn([] { throw std::runtime_error("stage failed"); });
                                  bb.arrive(1, pre, 1L);
                                },
                                next, bad_rank));
                          }
                          rill::merge(issued).wait();
                          std::vector<rill::event> seen;
                          for (int r = 0; r < n; ++r)
                            seen.push_back(rill::proc(r).spawn(
                                [](rill::barrier bb, int bad) {
                                  try {
                                    bb.wait();
                                  } catch (const rill::poisoned_error& e) {
                                    expect(e.rank() == bad, "wrong rank in the cause");
                                    expect(e.reason().find("stage failed") != std::string::npos, "wrong cause");
                                    return;
                                  }
                                  expect(false, "a poisoned phase did not throw");
                                },
                                next, bad_rank));
                          rill::merge(seen).wait();
                          // The phase after it is clean.
                          rill::barrier third = next.advance();
                          for (int r = 0; r < n; ++r)
                            rill::proc(r).spawn([](rill::barrier bb) { bb.arrive(1, rill::event::none(), 2L); }, third);
                          EXPECT_EQ(third.result<long>(), 2L * n);
                        }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, barriers, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
