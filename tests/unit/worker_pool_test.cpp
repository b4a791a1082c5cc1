// worker_pool's sleep groups: what wakes a sleeping channel or I/O thread and what does not. The
// pool's threads are not started; a test thread sleeps as its channel would, and the test counts
// the wake-ups.
#include "scheduler/worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "scheduler/rank_services.hpp"

namespace rill::detail {
namespace {

// A rank with no network and nothing to poll.
class quiet_rank final : public rank_services {
 public:
  bool progress(worker&) override { return false; }
  void on_out_of_work(worker&) override {}
  void on_idle(worker&) override {}
  bool must_poll() const override { return false; }
  bool has_input() const override { return false; }
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
  worker_pool pool(rank, 1, 1, 1, 64 * 1024, 50, 4);
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
  worker_pool pool(rank, 1, 1, 1, 64 * 1024, 50, 4);
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
  worker_pool pool(rank, 1, 1, 1, 64 * 1024, 50, 4);
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

}  // namespace
}  // namespace rill::detail
