// Distributed work stealing: every async_any task runs exactly once wherever it is stolen to,
// finish covers stolen tasks and their descendants, idle ranks do steal from a rank that holds all
// the work, and --rill:steal=off keeps every task where it was queued.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.hpp"

namespace rill_test {
namespace {

class stealing : public ::testing::TestWithParam<setup> {};

constexpr int tree_depth = 11;                                          // 2^12 - 1 tasks
std::vector<std::atomic<std::uint8_t>> g_runs(1u << (tree_depth + 1));  // rank 0: runs per task id
per_rank g_ran_on;                                                      // rank 0: tasks per executing rank

void node(int depth, std::uint32_t id) {
  rill::async_at(
      0,
      [](std::uint32_t i, int where) {
        g_runs[i].fetch_add(1);
        g_ran_on[static_cast<std::size_t>(where)].fetch_add(1);
      },
      id, rill::rank_me());
  if (depth == 0) return;
  rill::async_any(node, depth - 1, 2 * id);
  rill::async_any(node, depth - 1, 2 * id + 1);
}

void reset_tree() {
  for (auto& r : g_runs) r = 0;
  reset(g_ran_on);
}

bool each_task_ran_once() {
  for (std::uint32_t id = 1; id < (1u << (tree_depth + 1)); ++id)
    if (g_runs[id].load() != 1) return false;
  return true;
}

TEST_P(stealing, every_task_runs_exactly_once_and_finish_covers_stolen_ones) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          reset_tree();
                          rill::finish([] { rill::async_any(node, tree_depth, 1u); });
                          expect(each_task_ran_once(), "a task ran twice, or never, or after finish returned");
                        }),
            0);
}

std::vector<std::atomic<std::uint8_t>> g_local_runs(1u << (tree_depth + 1));  // rank 0: local task runs per id
std::atomic<long> g_local_moved{0};  // rank 0: local tasks that ran on another rank than their spawner's

// As node(), and each task also spawns a local task (not stealable) that must stay on its rank.
// Steals take records from the oldest ends of the deques, which hold both kinds.
void mixed_node(int depth, std::uint32_t id) {
  rill::spawn([id, where = rill::rank_me()] {
    rill::async_at(
        0,
        [](std::uint32_t i, bool moved) {
          g_local_runs[i].fetch_add(1);
          if (moved) g_local_moved.fetch_add(1);
        },
        id, rill::rank_me() != where);
  });
  node(0, id);
  if (depth == 0) return;
  rill::async_any(mixed_node, depth - 1, 2 * id);
  rill::async_any(mixed_node, depth - 1, 2 * id + 1);
}

TEST_P(stealing, steals_take_only_stealable_tasks_from_deques_that_also_hold_local_ones) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          reset_tree();
                          for (auto& r : g_local_runs) r = 0;
                          g_local_moved = 0;
                          rill::finish([] { rill::async_any(mixed_node, tree_depth, 1u); });
                          expect(each_task_ran_once(), "a stealable task ran twice, or never");
                          bool local_once = true;
                          for (std::uint32_t id = 1; id < (1u << (tree_depth + 1)); ++id)
                            local_once = local_once && g_local_runs[id].load() == 1;
                          expect(local_once, "a local task ran twice, or never, or after finish returned");
                          expect(g_local_moved.load() == 0, "a local task was shipped to another rank");
                        }),
            0);
}

std::atomic<bool> g_stolen{false};  // rank 0: a task ran on another rank

// Queues itself again on rank 0 until one copy has run on another rank: ends only if a steal
// happened.
void until_stolen() {
  if (rill::rank_me() != 0) {
    rill::async_at(0, [] { g_stolen = true; });
    return;
  }
  if (!g_stolen.load()) rill::async_any(until_stolen);
}

TEST_P(stealing, idle_ranks_steal_from_the_rank_that_holds_the_work) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          if (rill::rank_n() == 1) {  // no thief: the queue runs here
                            reset_tree();
                            rill::finish([] { rill::async_any(node, tree_depth, 1u); });
                            expect(g_ran_on[0].load() == (1u << (tree_depth + 1)) - 1, "a task did not run");
                            return;
                          }
                          g_stolen = false;
                          rill::finish([] { rill::async_any(until_stolen); });
                          expect(g_stolen.load(), "finish returned before a task was stolen");
                          expect(rill::steal_stats().tasks_given >= 1, "rank 0 counted no task given to a thief");
                        }),
            0);
}

TEST_P(stealing, off_keeps_every_task_where_it_was_queued) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          reset_tree();
                          rill::finish([] { rill::async_any(node, tree_depth, 1u); });
                          expect(each_task_ran_once(), "a task ran twice or never");
                          expect(g_ran_on[0].load() == (1u << (tree_depth + 1)) - 1,
                                 "a task left rank 0 with stealing off");
                        },
                        {"--rill:steal=off"}),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, stealing, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
