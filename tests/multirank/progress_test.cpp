// The progress thread (--rill:progress=thread): while every worker of every other rank runs a task
// that never returns to Rill, rank 0 still gets answers from those ranks -- rill::am::send_inline
// round trips, an event's trigger and wait, a reservation's grant -- because their progress threads
// run those handlers. Plain messages wait for a worker, and run there.
#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace rill_test {
namespace {

class progress_thread : public ::testing::TestWithParam<setup> {};

// Per rank: the long tasks of this run and earlier ones may end. A run counts, not a flag: under
// mpi a rank's process keeps it from the test before, and only rank 0 knows a new one began.
std::array<std::atomic<int>, max_ranks> g_stopped_run{};
int g_run = 0;                              // rank 0: the run in progress
thread_local bool t_ran_long_task = false;  // this thread ran a long task: it is a worker

// Rank 0's view of the busy ranks.
struct busy_ranks {
  std::mutex lock;
  std::vector<std::pair<rill::user_event, rill::reservation>> owned;  // one of each per long task
  std::atomic<int> started{0};
  std::atomic<int> inline_answers{0};
  std::atomic<int> inline_answers_from_workers{0};
  std::atomic<int> plain_answers{0};
  std::atomic<int> plain_answers_elsewhere{0};
  void reset() {
    owned.clear();
    started = inline_answers = inline_answers_from_workers = plain_answers = plain_answers_elsewhere = 0;
  }
} g_rank0;

// Runs on a worker of a busy rank until rank 0 says stop, without ever returning to Rill (an OS
// yield only, so that the machine's few cores still run the other ranks' threads).
void long_task(int run) {
  t_ran_long_task = true;
  const rill::user_event e = rill::user_event::create();
  const rill::reservation r = rill::reservation::create();
  rill::am::send_inline(
      0,
      [](rill::user_event ev, rill::reservation res) {
        std::lock_guard g(g_rank0.lock);
        g_rank0.owned.emplace_back(ev, res);
        g_rank0.started.fetch_add(1);
      },
      e, r);
  rill::am::flush();
  const int me = rill::rank_me();
  while (g_stopped_run[static_cast<std::size_t>(me)].load(std::memory_order_acquire) < run) std::this_thread::yield();
}

void wait_until(const std::atomic<int>& count, int target) {
  while (count.load() < target) rill::yield();
}

// Rank 0 keeps every worker of every other rank in a long task, then gets answers from them.
void answers_while_every_worker_is_busy(const setup& s, std::vector<std::string> flags) {
  const int rc = run_checked(
      s,
      [&] {
        const int n = rill::rank_n(), workers = s.workers;
        const int busy = (n - 1) * workers;
        g_rank0.reset();
        const int run = ++g_run;
        rill::finish([&] {
          for (int r = 1; r < n; ++r)
            for (int w = 0; w < workers; ++w) rill::async_at(r, long_task, run);
          wait_until(g_rank0.started, busy);

          // Every worker of ranks 1..n-1 is in a long task now.
          constexpr int round_trips = 20;
          for (int r = 1; r < n; ++r)
            for (int i = 0; i < round_trips; ++i)
              rill::am::send_inline(r, [] {
                rill::am::send_inline(
                    0,
                    [](bool from_worker) {
                      g_rank0.inline_answers.fetch_add(1);
                      if (from_worker) g_rank0.inline_answers_from_workers.fetch_add(1);
                    },
                    t_ran_long_task);
              });
          for (int r = 1; r < n; ++r)
            rill::am::send(r, [] {
              rill::am::send_inline(
                  0,
                  [](bool from_worker) {
                    g_rank0.plain_answers.fetch_add(1);
                    if (!from_worker) g_rank0.plain_answers_elsewhere.fetch_add(1);
                  },
                  t_ran_long_task);
            });
          rill::am::flush();
          wait_until(g_rank0.inline_answers, round_trips * (n - 1));

          // The protocols of events and reservations owned by the busy ranks.
          std::vector<std::pair<rill::user_event, rill::reservation>> owned;
          {
            std::lock_guard g(g_rank0.lock);
            owned = g_rank0.owned;
          }
          expect(static_cast<int>(owned.size()) == busy, "one event and reservation per long task");
          for (auto& [e, res] : owned) {
            e.trigger();
            e.wait();
            res.acquire().wait();
            res.release();
          }

          for (int r = 1; r < n; ++r)
            rill::am::send_inline(
                r, [](int ended) { g_stopped_run[static_cast<std::size_t>(rill::rank_me())].store(ended); }, run);
          rill::am::flush();
        });
        wait_until(g_rank0.plain_answers, n - 1);
        expect(g_rank0.inline_answers_from_workers.load() == 0, "an inline handler ran on a worker");
        expect(g_rank0.plain_answers_elsewhere.load() == 0, "a plain handler ran off the workers");
      },
      std::move(flags));
  EXPECT_EQ(rc, 0);
}

TEST_P(progress_thread, a_rank_whose_workers_all_run_long_tasks_still_answers) {
  answers_while_every_worker_is_busy(GetParam(), {"--rill:progress=thread"});
}

// In nodes of two ranks, rank 0's messages to ranks 2 and 3 share a routed buffer, which rank 2's
// progress thread splits and forwards while rank 2's workers are busy, and rank 3's runs.
TEST_P(progress_thread, routed_buffers_are_split_and_forwarded_while_every_worker_is_busy) {
  answers_while_every_worker_is_busy(GetParam(), {"--rill:progress=thread", "--rill:ranks-per-node=2"});
}

// Setups with ranks to keep busy (under mpi, the launcher's).
std::vector<setup> busy_setups() {
  std::vector<setup> out;
  for (const setup& s : setups())
    if (under_mpi() || s.ranks >= 2) out.push_back(s);
  return out;
}

INSTANTIATE_TEST_SUITE_P(setups, progress_thread, ::testing::ValuesIn(busy_setups()), name_of);

}  // namespace
}  // namespace rill_test
