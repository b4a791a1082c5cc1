// rill::may_inline: spawn and async run the task at once, on the spawner's fiber, when the worker
// has --rill:inline-queue tasks queued and a task's stack free; otherwise they queue it. Inline
// tasks belong to the spawner's finish scope, send it what they throw, never run as a message
// handler or with the spawner's phaser registrations, and a long run of them still polls.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "poll_probe.hpp"
#include "rill/rill.hpp"
#include "scheduler/worker.hpp"
#include "test_argv.hpp"

namespace {

std::unique_ptr<rill::runtime> make_runtime(std::initializer_list<std::string> flags) {
  rill_test::test_argv a(rill_test::command_line("inline_spawn_test", flags));
  return std::make_unique<rill::runtime>(a.argc, a.ptrs.data());
}

const void* running_fiber() { return rill::detail::current_worker()->current_fiber(); }

// On one worker nothing steals: after `queued` plain asyncs the deque holds exactly that many.
// Returns whether a may_inline task spawned then had run when async returned, and on which fiber.
struct outcome {
  bool ran_at_once = false;
  bool on_spawner_fiber = false;
  long ran = 0;
};

outcome spawn_after(int queued) {
  outcome o;
  bool ran = false;  // (outlives the finish body: a queued task runs after the body returned)
  rill::finish([&] {
    for (int i = 0; i < queued; ++i) rill::async([&] { ++o.ran; });
    const void* spawner = running_fiber();
    rill::async(rill::may_inline, [&] {
      ran = true;
      o.on_spawner_fiber = running_fiber() == spawner;
      ++o.ran;
    });
    o.ran_at_once = ran;
  });
  return o;
}

TEST(InlineSpawn, RunsAtOnceOnlyFromTheThresholdOfQueuedTasks) {
  auto rt = make_runtime({"--rill:workers=1", "--rill:inline-queue=16"});
  outcome below, at;
  rt->run([&] {
    below = spawn_after(15);
    at = spawn_after(16);
  });
  EXPECT_FALSE(below.ran_at_once) << "ran inline with fewer queued tasks than --rill:inline-queue";
  EXPECT_TRUE(at.ran_at_once) << "queued although --rill:inline-queue tasks were queued";
  EXPECT_TRUE(at.on_spawner_fiber);
  EXPECT_EQ(below.ran, 16);
  EXPECT_EQ(at.ran, 17);
}

TEST(InlineSpawn, ThresholdZeroRunsEveryOneInline) {
  auto rt = make_runtime({"--rill:workers=1", "--rill:inline-queue=0"});
  outcome o;
  rt->run([&] { o = spawn_after(0); });
  EXPECT_TRUE(o.ran_at_once);
  EXPECT_TRUE(o.on_spawner_fiber);
  EXPECT_EQ(o.ran, 1);
}

TEST(InlineSpawn, WithoutThePromiseTasksAreQueuedWhateverTheThreshold) {
  auto rt = make_runtime({"--rill:workers=1", "--rill:inline-queue=0"});
  bool ran_at_once = true;
  rt->run([&] {
    bool ran = false;
    rill::finish([&] {
      rill::async([&] { ran = true; });
      ran_at_once = ran;
    });
  });
  EXPECT_FALSE(ran_at_once);
}

// The inline task's exception goes to the finish scope, as a queued task's would; the spawner
// goes on after the call, and the scope still waits for its other tasks.
TEST(InlineSpawn, WhatItThrowsGoesToTheFinishScope) {
  auto rt = make_runtime({"--rill:workers=2", "--rill:inline-queue=0"});
  std::string caught;
  bool started = false, ran_at_once = false, spawner_went_on = false;
  std::atomic<int> others{0};
  rt->run([&] {
    try {
      rill::finish([&] {
        rill::async(rill::may_inline, [&] {
          started = true;
          throw std::runtime_error("inline boom");
        });
        ran_at_once = started;
        spawner_went_on = true;
        for (int i = 0; i < 100; ++i) rill::async([&] { others.fetch_add(1); });
      });
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
  });
  EXPECT_TRUE(ran_at_once) << "the throwing task was queued, not run inline";
  EXPECT_EQ(caught, "inline boom");
  EXPECT_TRUE(spawner_went_on);
  EXPECT_EQ(others.load(), 100);
}

// 2000 nested inline tasks with 1 KiB frames would overflow any fiber (of twice 64 KiB, times 4
// under ASan); inlining stops while a task's 64 KiB are still free below, and the rest is queued.
// (One worker: the counts need no atomics.)
struct nesting {
  int ran = 0;
  int open = 0;     // nest() calls running now, one inside the other
  int deepest = 0;  // the most at once
};

void nest(int depth, nesting& n) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  frame[sizeof frame - 1] = frame[0];
  n.ran += 1 + (frame[sizeof frame - 1] != static_cast<char>(depth));
  n.deepest = std::max(n.deepest, ++n.open);
  if (depth > 0) rill::async(rill::may_inline, [depth, &n] { nest(depth - 1, n); });
  --n.open;
}

TEST(InlineSpawn, NestingStopsWhileATasksStackIsStillFree) {
  auto rt = make_runtime({"--rill:workers=1", "--rill:stack=64K", "--rill:inline-queue=0"});
  nesting n;
  rt->run([&] { rill::finish([&] { nest(2000, n); }); });
  EXPECT_EQ(n.ran, 2001);
  EXPECT_GT(n.deepest, 1) << "no task ran inline";
  EXPECT_LT(n.deepest, 2001) << "every task ran nested in the one before";
}

// A message handler's spawn, and a spawn from a task registered on a phaser, queue the task: it
// must run neither as the handler nor with the registrations.
TEST(InlineSpawn, NotFromAMessageHandlerNorWithPhaserRegistrations) {
  auto rt = make_runtime({"--rill:ranks=2", "--rill:workers=1", "--rill:inline-queue=0"});
  static std::atomic<int> handler_saw{-1};  // 1: the task had run when the handler's spawn returned
  static std::atomic<int> sender_in_task{-2};
  static rill::latch* done;
  std::atomic<int> phased_saw{-1}, registered_in_task{-1};
  rt->run([&] {
    rill::latch handled(1);
    done = &handled;
    rill::am::send(1, [] {
      std::atomic<bool> ran{false};
      rill::finish([&] {
        rill::spawn(rill::may_inline, [&] {
          ran = true;
          sender_in_task = rill::am::sender();
        });
        handler_saw = ran.load() ? 1 : 0;
      });
      rill::am::send(0, [] { done->count_down(); });
    });
    handled.wait();

    rill::phaser ph(rill::phaser_mode::signal_wait);
    const rill::phaser_ref ref = ph.ref();
    bool ran = false;
    rill::finish([&] {
      rill::async(rill::may_inline, [&] {
        ran = true;
        registered_in_task = ref.registered() ? 1 : 0;
      });
      phased_saw = ran ? 1 : 0;
    });
  });
  EXPECT_EQ(handler_saw.load(), 0) << "a handler's may_inline task ran inside the handler";
  EXPECT_EQ(sender_in_task.load(), -1);
  EXPECT_EQ(phased_saw.load(), 0) << "a phased task's may_inline task ran with its registrations";
  EXPECT_EQ(registered_in_task.load(), 0);
}

// One task spawns 4000 inline tasks in a row and never returns to the scheduling loop in between;
// the first sends this rank a message, which must be handled while the rest still run.
TEST(InlineSpawn, ALongRunOfInlineTasksStillLetsMessagesIn) {
  auto rt = make_runtime({"--rill:workers=1", "--rill:inline-queue=0"});
  rill_test::poll_probe::reset();
  long ran = 0, inline_ran = 0;
  rt->run([&] {
    const void* spawner = running_fiber();
    rill::finish([&] {
      for (int i = 0; i < 4000; ++i)
        rill::async(rill::may_inline, [&] {
          ++ran;
          if (running_fiber() == spawner) ++inline_ran;
          rill_test::poll_probe::step();
        });
    });
  });
  EXPECT_EQ(ran, 4000);
  EXPECT_EQ(inline_ran, 4000) << "not every task ran inline";
  EXPECT_TRUE(rill_test::poll_probe::handled());
  EXPECT_GT(rill_test::poll_probe::steps_after(), 0) << "the message was handled only after every inline task";
}

// A tree spawned with may_inline on 2 workers (the default threshold, so some tasks run inline,
// others are queued and stolen): every node is visited exactly once, and inline tasks count as run.
void visit(std::vector<std::atomic<int>>& seen, std::size_t node) {
  seen[node].fetch_add(1);
  for (std::size_t child : {2 * node + 1, 2 * node + 2})
    if (child < seen.size()) rill::async(rill::may_inline, [&seen, child] { visit(seen, child); });
}

TEST(InlineSpawn, EveryTaskOfATreeRunsOnce) {
  auto rt = make_runtime({"--rill:workers=2"});
  std::vector<std::atomic<int>> seen((1u << 17) - 1);
  std::uint64_t counted = 0;
  rt->run([&] {
    const rill::rank_stats before = rill::stats();
    rill::finish([&] { visit(seen, 0); });
    counted = rill::stats().tasks_run - before.tasks_run;
  });
  std::size_t wrong = 0;
  for (auto& s : seen) wrong += s.load() != 1;
  EXPECT_EQ(wrong, 0u) << "nodes visited other than once";
  EXPECT_GE(counted, seen.size() - 1) << "tasks run inline were not counted as run";
}

// Without a finish scope, what an inline task throws ends the program, as from a queued task.
TEST(InlineSpawnDeathTest, WhatItThrowsOutsideAnyScopeIsFatal) {
  EXPECT_EXIT(
      {
        auto rt = make_runtime({"--rill:workers=1", "--rill:inline-queue=0"});
        rt->run([] { rill::spawn(rill::may_inline, [] { throw std::runtime_error("inline boom, no scope"); }); });
      },
      ::testing::ExitedWithCode(rill::exit_fatal), "inline boom, no scope");
}

}  // namespace
