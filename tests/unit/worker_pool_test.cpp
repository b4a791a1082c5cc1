// worker_pool's sleep groups: what wakes a sleeping channel and what does not. The pool's threads
// are not started; a test thread sleeps as its channel would, and the test counts the wake-ups.
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

// Sleeps as the pool's channel (index 1) until told to stop, sleep after sleep.
class sleeping_channel {
 public:
  explicit sleeping_channel(worker_pool& pool)
      : thread_([this, &pool] {
          int backoff = 0;
          while (!stop_.load()) pool.sleep(pool.at(1), false, backoff);
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
  worker_pool pool(rank, 1, 1, 64 * 1024, 50, 4);
  ASSERT_TRUE(pool.at(1).channel());
  {
    const sleeping_channel channel(pool);
    for (int i = 0; i < 1000; ++i) {
      pool.notify_spawned();  // a worker pushed a task
      pool.notify();          // data arrived
      pool.notify_all();      // a task was injected, a worker's fiber made ready
    }
  }
  EXPECT_EQ(pool.wakes(true), 0u) << "a worker's wake-up woke the channel";
  EXPECT_GE(pool.wakes(false), 1000u);  // (notify_all wakes the workers' group whether or not one sleeps)
}

TEST(WorkerPool, ChannelWorkLeavesTheWorkersAsleepAndTheStopWakesBoth) {
  quiet_rank rank;
  worker_pool pool(rank, 1, 1, 64 * 1024, 50, 4);
  task_record work;
  pool.submit_to_channel(&work);
  EXPECT_EQ(pool.wakes(false), 0u) << "channel work woke the workers";
  EXPECT_EQ(pool.take_channel_work(), &work);
  pool.wake_everyone();
  EXPECT_EQ(pool.wakes(true), 1u);
  EXPECT_EQ(pool.wakes(false), 1u);
}

}  // namespace
}  // namespace rill::detail
