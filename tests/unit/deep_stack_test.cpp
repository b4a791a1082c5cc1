// Deep calls (src/scheduler/deep_stack.hpp): work that needs more stack than a fiber has runs on
// the thread's deep-stack fiber when called from a task, and where it is called otherwise.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "rill/rill.hpp"
#include "scheduler/deep_stack.hpp"
#include "scheduler/fiber.hpp"
#include "scheduler/worker.hpp"
#include "test_argv.hpp"

namespace {

std::unique_ptr<rill::runtime> make_runtime(std::initializer_list<std::string> flags) {
  rill_test::test_argv a(rill_test::command_line("deep_stack_test", flags));
  return std::make_unique<rill::runtime>(a.argc, a.ptrs.data());
}

// More stack than a 64 KiB fiber has: a 256 KiB array, written whole and summed.
constexpr std::size_t big_frame = 256 * 1024;

struct big_work {
  std::uint32_t seed = 0;
  std::uint64_t sum = 0;
  std::uintptr_t local = 0;  // where the work's frame was (an address, not a pointer to use)

  static void run(void* p) {
    auto* w = static_cast<big_work*>(p);
    volatile unsigned char frame[big_frame];
    for (std::size_t i = 0; i < big_frame; ++i) frame[i] = static_cast<unsigned char>(i * 7 + w->seed);
    std::uint64_t s = 0;
    for (std::size_t i = 0; i < big_frame; ++i) s += frame[i];
    w->sum = s;
    w->local = reinterpret_cast<std::uintptr_t>(&frame[0]);
  }
  std::uint64_t expected() const {
    std::uint64_t s = 0;
    for (std::size_t i = 0; i < big_frame; ++i) s += static_cast<unsigned char>(i * 7 + seed);
    return s;
  }
};

// Whether `p` lies on the stack of the fiber running the calling task.
bool on_running_fiber_stack(std::uintptr_t p) {
  const rill::detail::fiber_rec* f = rill::detail::current_worker()->current_fiber();
  const auto bottom = reinterpret_cast<std::uintptr_t>(f->stack_bottom);
  return p >= bottom && p < bottom + f->stack_size;
}

TEST(DeepStack, TasksOnSmallStacksRunBigFramesOffTheirFibers) {
  constexpr int tasks = 200;
  auto rt = make_runtime({"--rill:workers=2", "--rill:stack=64K"});
  std::atomic<int> right{0};
  std::atomic<int> off_fiber{0};
  const int code = rt->run([&] {
    rill::latch done(tasks);
    for (int t = 0; t < tasks; ++t) {
      rill::spawn([&, t] {
        for (int k = 0; k < 3; ++k) {
          big_work w{static_cast<std::uint32_t>(t * 3 + k)};
          rill::detail::deep_call(&big_work::run, &w);
          if (w.sum == w.expected()) right.fetch_add(1);
          if (!on_running_fiber_stack(w.local)) off_fiber.fetch_add(1);
          rill::yield();  // other tasks' deep calls come between this task's
        }
        done.count_down();
      });
    }
    done.wait();
    return 0;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(right.load(), tasks * 3);
  EXPECT_EQ(off_fiber.load(), tasks * 3);
}

TEST(DeepStack, AnExceptionOfTheWorkReachesTheCallerAndTheNextCallStillRuns) {
  auto rt = make_runtime({"--rill:workers=1", "--rill:stack=64K"});
  std::string caught;
  big_work after{5};
  const int code = rt->run([&] {
    try {
      rill::detail::deep_call([](void*) { throw std::runtime_error("from the deep stack"); }, nullptr);
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
    rill::detail::deep_call(&big_work::run, &after);
    return 0;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(caught, "from the deep stack");
  EXPECT_EQ(after.sum, after.expected());
}

TEST(DeepStack, NestedCallsAndCallsOutsideTasksRunWhereTheyAre) {
  auto rt = make_runtime({"--rill:workers=1", "--rill:stack=64K"});
  struct nested {
    big_work inner{9};
    std::uintptr_t outer_local = 0;
    static void run(void* p) {
      auto* n = static_cast<nested*>(p);
      int here = 0;
      n->outer_local = reinterpret_cast<std::uintptr_t>(&here);
      rill::detail::deep_call(&big_work::run, &n->inner);  // already deep: runs inline
    }
  } n;
  const int code = rt->run([&] {
    rill::detail::deep_call(&nested::run, &n);
    return 0;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(n.inner.sum, n.inner.expected());
  // The inner frame lay below the outer one on the same (deep) stack.
  const auto gap = static_cast<std::ptrdiff_t>(n.outer_local - n.inner.local);
  EXPECT_GT(gap, 0);
  EXPECT_LT(gap, static_cast<std::ptrdiff_t>(rill::detail::deep_stack_bytes * rill::detail::sanitizer_stack_factor));

  // A thread that is no worker runs the work on its own stack.
  big_work outside{11};
  int marker = 0;
  rill::detail::deep_call(&big_work::run, &outside);
  EXPECT_EQ(outside.sum, outside.expected());
  const auto distance = static_cast<std::ptrdiff_t>(reinterpret_cast<std::uintptr_t>(&marker) - outside.local);
  EXPECT_GT(distance, 0);
  EXPECT_LT(distance, static_cast<std::ptrdiff_t>(2 * big_frame));
}

}  // namespace
