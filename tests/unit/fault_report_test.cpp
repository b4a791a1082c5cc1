// A worker's crash is explained before the process dies (src/scheduler/fault_report.hpp): a task
// that recurses past its fiber stack, and a handler that follows a pointer made on another rank.
// Built without sanitizers only: ASan and TSan report these faults themselves.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "rill/rill.hpp"
#include "test_argv.hpp"

namespace {

template <class F>
int on_ranks(int ranks, F fn) {
  rill_test::test_argv a({"fault_report_test", "--rill:transport=local", "--rill:ranks=" + std::to_string(ranks),
                          "--rill:workers=1", "--rill:stack=64K"});
  rill::runtime rt(a.argc, a.argv());
  return rt.run([&] {
    fn();
    return 0;
  });
}

// Each level keeps a kilobyte live on the stack, so the recursion overflows 64 KiB quickly.
int deep(int n) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(n);
  return n == 0 ? frame[0] : deep(n - 1) + frame[0];
}

TEST(FaultReport, ATaskThatOverflowsItsStackIsNamedWithTheFix) {
  EXPECT_EXIT(on_ranks(1, [] { rill::proc::here().spawn([] { (void)deep(1 << 20); }).wait(); }),
              ::testing::ExitedWithCode(rill::exit_fatal),
              "task stack overflow on rank 0 in a task: it needed more than its [0-9]+-byte fiber stack; raise "
              "--rill:stack");
}

TEST(FaultReport, AHandlerThatOverflowsNamesTheHandlerAndTheSender) {
  EXPECT_EXIT(on_ranks(2,
                       [] {
                         rill::am::send(
                             1, [](int n) { (void)deep(n); }, 1 << 20);
                         rill::am::flush();
                       }),
              ::testing::ExitedWithCode(rill::exit_fatal),
              "task stack overflow on rank 1 in the handler '.*am_handler.*' of a message from rank 0");
}

// What a lambda capturing a local by reference ships under MPI: an address of the sender's, which
// means nothing on the receiver (on the local transport it would still point at live memory, so
// the test ships an address that is mapped nowhere).
TEST(FaultReport, AFaultInAHandlerBlamesAPointerFromTheSender) {
  EXPECT_EXIT(on_ranks(2,
                       [] {
                         const std::uintptr_t elsewhere = 0x10;
                         rill::am::send(
                             1, [](std::uintptr_t p) { (void)*reinterpret_cast<volatile int*>(p); }, elsewhere);
                         rill::am::flush();
                       }),
              ::testing::ExitedWithCode(rill::exit_fatal),
              "segmentation fault on rank 1 in the handler '.*' of a message from rank 0: most likely a pointer or "
              "reference captured on rank 0");
}

}  // namespace
