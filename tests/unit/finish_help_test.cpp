// The end of rill::finish runs the scope's tasks still queued on its worker on the waiting fiber
// itself (worker::help_scope): nested in the waiter, while a task's stack is free below, polling
// the network on the way, and as tasks of their own (no phaser registrations or message of the
// waiter's).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "poll_probe.hpp"
#include "rill/rill.hpp"
#include "scheduler/worker.hpp"
#include "test_argv.hpp"

namespace {

std::unique_ptr<rill::runtime> make_runtime(std::initializer_list<std::string> flags) {
  rill_test::test_argv a(rill_test::command_line("finish_help_test", flags));
  return std::make_unique<rill::runtime>(a.argc, a.ptrs.data());
}

const void* running_fiber() { return rill::detail::current_worker()->current_fiber(); }

TEST(FinishHelp, QueuedTasksOfTheScopeRunOnTheWaitingFiber) {
  auto rt = make_runtime({"--rill:workers=1"});
  int ran = 0, nested = 0;
  rt->run([&] {
    const void* waiter = running_fiber();
    rill::finish([&] {
      for (int i = 0; i < 20; ++i)
        rill::async([&] {
          ++ran;
          if (running_fiber() == waiter) ++nested;
        });
    });
  });
  EXPECT_EQ(ran, 20);
  EXPECT_GT(nested, 0) << "no task of the scope ran on the waiting fiber";
}

// A chain of 400 nested scopes, each task with a 1 KiB frame: 400 KiB nested on one fiber (of
// twice 64 KiB) would overflow it. Helping stops while a task's 64 KiB are still free below; the
// rest runs on other fibers.
void nest(int depth, std::atomic<int>& deepest) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  frame[sizeof frame - 1] = frame[0];
  if (depth == 0) {
    deepest.store(frame[sizeof frame - 1] + 1);
    return;
  }
  rill::finish([&] { rill::async([&] { nest(depth - 1, deepest); }); });
}

TEST(FinishHelp, NestingStopsWhileATasksStackIsStillFree) {
  auto rt = make_runtime({"--rill:workers=1", "--rill:stack=64K"});
  std::atomic<int> deepest{0};
  rt->run([&] { nest(400, deepest); });
  EXPECT_EQ(deepest.load(), 1);
}

// fib with a finish per call; each leaf is a step of the poll probe.
long fib(int n) {
  if (n < 2) {
    rill_test::poll_probe::step();
    return n;
  }
  long a = 0, b = 0;
  rill::finish([&] {
    rill::async([&a, n] { a = fib(n - 1); });
    b = fib(n - 2);
  });
  return a + b;
}

// On one worker every task of a fork-join recursion runs nested in a waiting finish; the network
// must still be polled (every 32 tasks), or the message waits for the whole computation.
TEST(FinishHelp, ARecursionRunNestedStillLetsMessagesIn) {
  auto rt = make_runtime({"--rill:workers=1"});
  rill_test::poll_probe::reset();
  long value = 0;
  rt->run([&] { value = fib(20); });
  EXPECT_EQ(value, 6765);
  EXPECT_TRUE(rill_test::poll_probe::handled());
  EXPECT_GT(rill_test::poll_probe::steps_after(), 0) << "the message was handled only after the recursion";
}

TEST(FinishHelp, NestedTasksSeeNeitherTheWaitersPhasersNorItsMessage) {
  auto rt = make_runtime({"--rill:ranks=2", "--rill:workers=1"});
  std::atomic<int> registered_inside{-1}, registered_after{-1};
  std::atomic<int> sender_inside{-2}, sender_after{-2};
  rt->run([&] {
    rill::phaser ph(rill::phaser_mode::signal_wait);
    const rill::phaser_ref ref = ph.ref();
    rill::finish([&] {
      for (int i = 0; i < 4; ++i) rill::async([&] { registered_inside = ref.registered() ? 1 : 0; });
    });
    registered_after = ref.registered() ? 1 : 0;

    // A handler on rank 1 waits for a scope of its own; its tasks are not handlers.
    static std::atomic<int>* inside;
    static std::atomic<int>* after;
    static rill::latch* done;
    rill::latch handled(1);
    inside = &sender_inside;
    after = &sender_after;
    done = &handled;
    rill::am::send(1, [] {
      rill::finish([] {
        for (int i = 0; i < 4; ++i) rill::async([] { *inside = rill::am::sender(); });
      });
      *after = rill::am::sender();
      rill::am::send(0, [] { done->count_down(); });
    });
    handled.wait();
  });
  EXPECT_EQ(registered_inside.load(), 0) << "a task of the scope saw the waiter's phaser registration";
  EXPECT_EQ(registered_after.load(), 1) << "the waiter lost its phaser registration";
  EXPECT_EQ(sender_inside.load(), -1) << "a task of the scope ran as if it were the waiter's message handler";
  EXPECT_EQ(sender_after.load(), 0) << "the handler lost its sender";
}

}  // namespace
