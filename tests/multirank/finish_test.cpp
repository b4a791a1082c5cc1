// Distributed finish: finish returns only once every task of its scope has ended, on every rank,
// however deep the chains of async_at and however the local transport's chaos delays and reorders
// the messages. Each task reports to rank 0 with one more async_at (itself a task of the scope), so
// the count on rank 0 right after finish returns is the number of tasks that ran.
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "harness.hpp"

namespace rill_test {
namespace {

class finish_scopes : public ::testing::TestWithParam<setup> {};

std::atomic<long> g_reports{0};  // rank 0's tally of tasks that reported
per_rank g_reports_for;          // rank 0's tally by the rank that started the chain

void report(int origin = 0) {
  rill::async_at(
      0,
      [](int o) {
        g_reports.fetch_add(1);
        g_reports_for[static_cast<std::size_t>(o)].fetch_add(1);
      },
      origin);
}

// A chain of `hops` tasks, each on the next rank, each yielding a few times (so that it is in
// flight, queued or running while the others move) before it ships the next.
void chain(int hops, int origin) {
  for (int i = 0; i < 3; ++i) rill::yield();
  report(origin);
  if (hops > 1) rill::async_at((rill::rank_me() + 1) % rill::rank_n(), chain, hops - 1, origin);
}

// A binary tree of tasks of the given depth, scattered over the ranks.
void tree(int depth, std::uint64_t id) {
  report();
  if (depth == 0) return;
  for (std::uint64_t child : {2 * id, 2 * id + 1})
    rill::async_at(static_cast<int>((child * 2654435761u) % static_cast<std::uint64_t>(rill::rank_n())), tree,
                   depth - 1, child);
}

TEST_P(finish_scopes, waits_for_chains_of_async_at_across_every_rank) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          for (int round = 0; round < 3; ++round) {
                            g_reports = 0;
                            rill::finish([&] {
                              for (int r = 0; r < n; ++r) rill::async_at(r, chain, 2 * n + 1, r);
                            });
                            expect(g_reports.load() == n * (2 * n + 1), "finish returned before every chain ended");
                          }
                        }),
            0);
}

TEST_P(finish_scopes, waits_for_a_tree_scattered_over_the_ranks) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          g_reports = 0;
                          rill::finish([] { tree(9, 1); });
                          expect(g_reports.load() == (1 << 10) - 1, "finish returned before the tree ended");
                        }),
            0);
}

TEST_P(finish_scopes, nested_scopes_on_other_ranks_end_before_their_task) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          g_reports = 0;
                          reset(g_reports_for);
                          const int n = rill::rank_n();
                          rill::finish([n] {
                            for (int r = 0; r < n; ++r) {
                              rill::async_at(r, [] {
                                const int me = rill::rank_me();
                                // The inner scope covers the chain and its reports to rank 0, so
                                // all 3 have been counted there when it returns.
                                rill::finish([me] { rill::async_at((me + 1) % rill::rank_n(), chain, 3, me); });
                                rill::async_at(
                                    0,
                                    [](int origin) {
                                      expect(g_reports_for[static_cast<std::size_t>(origin)].load() == 3,
                                             "an inner finish returned before its chain ended");
                                    },
                                    me);
                              });
                            }
                          });
                          expect(g_reports.load() == n * 3, "the outer finish returned early");
                        }),
            0);
}

TEST_P(finish_scopes, local_asyncs_and_spawns_belong_to_the_scope) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          std::atomic<long> ran{0};
                          rill::finish([&] {
                            for (int i = 0; i < 1000; ++i) {
                              rill::async([&] {
                                rill::yield();
                                rill::spawn([&] { ran.fetch_add(1); });
                                ran.fetch_add(1);
                              });
                            }
                          });
                          expect(ran.load() == 2000, "finish returned before its local tasks ended");
                        }),
            0);
}

// Workers keep the counts of ended tasks to themselves for a while (worker::held_credit); a task
// of no scope that spins with yield() until the scope ended must not keep them from giving it back.
TEST_P(finish_scopes, a_task_spinning_with_yield_until_the_scope_ends_does_not_hold_it_back) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          std::atomic<bool> scope_ended{false};
                          std::atomic<long> ran{0};
                          rill::latch spinner_done(1);
                          rill::spawn([&] {
                            while (!scope_ended.load()) rill::yield();
                            spinner_done.count_down();
                          });
                          rill::finish([&] {
                            for (int i = 0; i < 200; ++i)
                              rill::async([&] {
                                rill::async([&] { ran.fetch_add(1); });
                                ran.fetch_add(1);
                              });
                          });
                          scope_ended = true;
                          spinner_done.wait();
                          expect(ran.load() == 400, "finish returned before its local tasks ended");
                        }),
            0);
}

TEST_P(finish_scopes, a_remote_task_that_throws_is_rethrown_after_every_task_ended) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          g_reports = 0;
                          const int n = rill::rank_n();
                          const int thrower = n - 1;
                          bool caught = false;
                          try {
                            rill::finish([&] {
                              for (int r = 0; r < n; ++r) rill::async_at(r, chain, 4, r);
                              rill::async_at(thrower, [] { throw std::runtime_error("boom"); });
                            });
                          } catch (const rill::task_error& e) {
                            caught = e.rank() == thrower && e.message() == "boom";
                          } catch (const std::runtime_error& e) {
                            // On a single rank the task ran here: its own exception comes back.
                            caught = n == 1 && std::string(e.what()) == "boom";
                          }
                          expect(caught, "finish did not rethrow the task's exception");
                          expect(g_reports.load() == 4 * n, "finish rethrew before every task ended");
                        }),
            0);
}

// Habanero's fib: a finish per call. Each waiting finish runs its queued child itself.
long fib(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  rill::finish([&] {
    rill::async([&a, n] { a = fib(n - 1); });
    b = fib(n - 2);
  });
  return a + b;
}

TEST_P(finish_scopes, a_finish_per_task_nests_to_any_depth) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          expect(fib(20) == 6765, "fib(20) with a finish per call is wrong");
                          // The same from every rank at once, each rank's scopes its own.
                          rill::finish([&] {
                            for (int r = 0; r < rill::rank_n(); ++r)
                              rill::async_at(r, [] {
                                if (fib(16) != 987) throw std::runtime_error("fib(16) is wrong");
                              });
                          });
                        }),
            0);
}

// The waiting finish takes its scope's queued tasks last-in first: here the waiting one, which
// needs the task queued below it. It must not hold that one back (it runs on another fiber).
TEST_P(finish_scopes, a_task_run_by_the_waiting_finish_may_wait_for_one_queued_below_it) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          for (int round = 0; round < 20; ++round) {
                            rill::latch opened(1);
                            bool waited = false;
                            rill::finish([&] {
                              rill::async([&] { opened.count_down(); });
                              rill::async([&] {
                                opened.wait();
                                waited = true;
                              });
                            });
                            expect(waited, "finish returned before its waiting task ended");
                          }
                        }),
            0);
}

// A tree whose local children are spawned with rill::may_inline (run at once on the spawner's
// fiber: --rill:inline-queue=0) and whose every node also ships a report and a hop to the next
// rank. The inline tasks belong to the scope as queued ones do: finish waits for what they start.
void inline_tree(int depth) {
  report();
  if (depth == 0) return;
  if (depth % 3 == 0) rill::async_at((rill::rank_me() + 1) % rill::rank_n(), inline_tree, depth - 1);
  rill::async(rill::may_inline, [depth] { inline_tree(depth - 1); });
  rill::async(rill::may_inline, [depth] { inline_tree(depth - 1); });
}

long inline_tree_size(int depth) {
  if (depth == 0) return 1;
  return 1 + (depth % 3 == 0 ? 3 : 2) * inline_tree_size(depth - 1);
}

TEST_P(finish_scopes, tasks_run_inline_belong_to_the_scope_and_so_does_what_they_ship) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          for (int round = 0; round < 3; ++round) {
                            g_reports = 0;
                            rill::finish([] { inline_tree(9); });
                            expect(g_reports.load() == inline_tree_size(9),
                                   "finish returned before an inline task's work ended");
                          }
                        },
                        {"--rill:inline-queue=0"}),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, finish_scopes, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
