// worker_pool's sleep groups: what wakes a sleeping channel, I/O thread or progress thread and what
// does not. The
// pool's threads are not started; a test thread sleeps as its channel would, and the test counts
// the wake-ups.
#include "scheduler/worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "scheduler/rank_services.hpp"

namespace rill::detail {
namespace {

// A rank with no network; `input` says whether received data waits to be polled.
class quiet_rank final : public rank_services {
 public:
  bool progress(worker&) override { return false; }
  void on_out_of_work(worker&) override {}
  void on_idle(worker&) override {}
  bool must_poll() const override { return false; }
  bool has_input(const worker&) const override { return input.load(); }
  std::atomic<bool> input{false};
};

// Sleeps as the pool's thread `index` (a channel, an I/O thread) until told to stop, sleep after
// sleep.
class sleeping_channel {
 public:
  explicit sleeping_channel(worker_pool& pool, int index = 1)
      : thread_([this, &pool, index] {
          int backoff = 0;
          while (!stop_.load()) pool.sleep(pool.at(index), false, backoff);
        }) {}
  ~sleeping_channel() {
    stop_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(WorkerPool, WhatWakesTheWorkersLeavesASleepingChannelAsleep) {
  quiet_rank rank;
  worker_pool pool(rank, 1, 1, 1, false, 64 * 1024, 50, 4);
  ASSERT_TRUE(pool.at(1).channel());
  {
    const sleeping_channel channel(pool);
    for (int i = 0; i < 1000; ++i) {
      pool.notify_spawned();  // a worker pushed a task
      pool.notify();          // data arrived
      pool.notify_all();      // a task was injected, a worker's fiber made ready
    }
  }
  EXPECT_EQ(pool.wakes(thread_role::channel), 0u) << "a worker's wake-up woke the channel";
  EXPECT_EQ(pool.wakes(thread_role::io), 0u) << "a worker's wake-up woke the I/O thread";
  EXPECT_GE(pool.wakes(thread_role::worker), 1000u);  // (notify_all wakes the workers' group whether or not one sleeps)
}

TEST(WorkerPool, ChannelWorkLeavesTheWorkersAsleepAndTheStopWakesBoth) {
  quiet_rank rank;
  worker_pool pool(rank, 1, 1, 1, false, 64 * 1024, 50, 4);
  task_record work;
  pool.submit_to_channel(&work);
  EXPECT_EQ(pool.wakes(thread_role::worker), 0u) << "channel work woke the workers";
  EXPECT_EQ(pool.take_channel_work(), &work);
  pool.wake_everyone();
  EXPECT_EQ(pool.wakes(thread_role::channel), 1u);
  EXPECT_EQ(pool.wakes(thread_role::worker), 1u);
  EXPECT_EQ(pool.wakes(thread_role::io), 1u);
}

TEST(WorkerPool, IoWorkGoesToTheIoThreadsOnly) {
  quiet_rank rank;
  worker_pool pool(rank, 1, 1, 1, false, 64 * 1024, 50, 4);
  ASSERT_EQ(pool.at(2).role(), thread_role::io);
  ASSERT_EQ(pool.io_threads(), 1);
  task_record work;
  {
    const sleeping_channel channel(pool);
    pool.submit_to_io(&work);
    EXPECT_FALSE(pool.has_work(pool.at(1))) << "I/O work woke the channel";
    EXPECT_TRUE(pool.has_work(pool.at(2)));
  }
  EXPECT_EQ(pool.wakes(thread_role::worker), 0u) << "I/O work woke the workers";
  EXPECT_EQ(pool.wakes(thread_role::channel), 0u) << "I/O work woke the channels";
  EXPECT_EQ(pool.take_channel_work(), nullptr) << "I/O work reached the channels' queue";
  EXPECT_EQ(pool.take_io_work(), &work);
}

// Only a thread that polls sleeps briefly (20 us doubling to 1 ms) on a rank that learns of
// arrivals by polling; an I/O thread or an idle channel sleeps until work is signalled, or it would
// take a worker's core about a thousand times a second under MPI.
TEST(WorkerPool, OnlyPollingThreadsSleepBrieflyOnARankThatMustPoll) {
  quiet_rank rank;
  worker_pool pool(rank, 1, 1, 1, false, 64 * 1024, 50, 4);
  ASSERT_EQ(pool.at(0).role(), thread_role::worker);
  ASSERT_EQ(pool.at(2).role(), thread_role::io);
  EXPECT_TRUE(pool.at(0).sleeps_briefly(true));
  EXPECT_FALSE(pool.at(0).sleeps_briefly(false));
  EXPECT_FALSE(pool.at(1).sleeps_briefly(true)) << "a channel with no fiber waiting for a poll";
  EXPECT_FALSE(pool.at(2).sleeps_briefly(true)) << "the I/O thread";
}

// Sleeps as thread `index` until woken, waking it with arrivals.
void wake_with_arrivals(worker_pool& pool, int index, thread_role role) {
  const std::uint64_t before = pool.wakes(role);
  const sleeping_channel asleep(pool, index);
  while (pool.wakes(role) == before) {
    pool.notify_arrival();
    std::this_thread::yield();
  }
}

TEST(WorkerPool, ArrivalsWakeTheProgressThreadOnlyWhenEveryWorkerIsBusy) {
  quiet_rank rank;
  worker_pool pool(rank, 1, 0, 1, true, 64 * 1024, 50, 4);
  worker* progress = pool.progress_thread();
  ASSERT_NE(progress, nullptr);
  ASSERT_EQ(progress->role(), thread_role::progress);
  ASSERT_EQ(progress->index(), 2);
  ASSERT_EQ(pool.io_threads(), 1);
  rank.input = true;
  EXPECT_TRUE(pool.has_work(*progress)) << "received data does not wake the progress thread";
  EXPECT_TRUE(pool.has_work(pool.at(0))) << "received data does not wake a worker";
  rank.input = false;
  // An idle worker polls: arrivals wake it, and leave the progress thread asleep.
  wake_with_arrivals(pool, 0, thread_role::worker);
  EXPECT_EQ(pool.wakes(thread_role::progress), 0u) << "an arrival woke the progress thread beside an idle worker";
  // With every worker busy, only the progress thread answers: arrivals wake it.
  ASSERT_FALSE(pool.all_workers_busy());
  pool.busy_workers = 1;
  ASSERT_TRUE(pool.all_workers_busy());
  wake_with_arrivals(pool, 2, thread_role::progress);
  pool.busy_workers = 0;
}

TEST(WorkerPool, WithoutAProgressThreadArrivalsWakeTheWorkers) {
  quiet_rank rank;
  worker_pool pool(rank, 1, 0, 1, false, 64 * 1024, 50, 4);
  EXPECT_EQ(pool.progress_thread(), nullptr);
  pool.busy_workers = 1;
  wake_with_arrivals(pool, 0, thread_role::worker);
  EXPECT_EQ(pool.wakes(thread_role::progress), 0u);
  pool.busy_workers = 0;
}

}  // namespace
}  // namespace rill::detail
