// Unit tests of the futex word idle threads sleep on (src/common/wake_word.hpp), and of the node
// rings' use of it (src/transport/node_rings.hpp): under mpi a node neighbour's ring write wakes a
// rank whose workers sleep, across processes.
#include "common/wake_word.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "common/sanitizers.hpp"
#include "transport/byte_ring.hpp"
#include "transport/node_rings.hpp"

namespace {

using rill::detail::wake_word;
using namespace std::chrono_literals;

// Longer than any test could take: a sleep that ends by its limit failed to be woken.
constexpr auto never = std::chrono::microseconds(30s);

// Whether thread `tid` of process `pid` is asleep in the kernel (state S): the sleeper announced
// itself and then made no other blocking call, so it is in FUTEX_WAIT. No event says when a thread
// has entered the kernel's wait (announcing comes before it), so the tests look at its state.
bool asleep(pid_t pid, pid_t tid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');  // the name in parentheses may hold spaces
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'S';
}

// False if the thread was not seen asleep within 20 s (its sleep ended early, or it is gone).
bool wait_until_asleep(pid_t pid, pid_t tid) {
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (!asleep(pid, tid))
    if (std::chrono::steady_clock::now() > give_up)
      return false;
    else
      std::this_thread::sleep_for(100us);
  return true;
}

// A thread that announces itself on a word and sleeps on it; constructed, it is asleep.
class sleeping_thread {
 public:
  explicit sleeping_thread(wake_word& w)
      : thread_([this, &w] {
          const auto seen = w.seen();
          w.announce();
          tid_.store(static_cast<pid_t>(syscall(SYS_gettid)));
          woken_ = w.sleep(seen, never);
          w.withdraw();
        }) {
    while (tid_.load() == 0) std::this_thread::yield();
    if (!wait_until_asleep(getpid(), tid_.load())) ADD_FAILURE() << "the sleeper's sleep ended before any wake-up";
  }
  // Whether the sleep ended by a wake-up (not its limit); waits for it to end.
  bool woken() {
    thread_.join();
    return woken_;
  }

 private:
  std::atomic<pid_t> tid_{0};
  bool woken_ = false;
  std::thread thread_;
};

TEST(WakeWord, ASleepEndsByItsLimitWhenNobodyWakes) {
  wake_word w;
  const auto seen = w.seen();
  w.announce();
  EXPECT_FALSE(w.sleep(seen, 1ms));
  w.withdraw();
  EXPECT_EQ(w.wakes(), 0u);
}

TEST(WakeWord, ASleepDoesNotBeginAfterAWakeSinceSeen) {
  wake_word w;
  const auto seen = w.seen();
  w.announce();
  w.notify();  // between the sleeper's look for work and its sleep
  EXPECT_TRUE(w.sleep(seen, never));
  w.withdraw();
  EXPECT_EQ(w.wakes(), 1u);
}

TEST(WakeWord, NotifyWithNobodyAsleepLeavesTheWord) {
  wake_word w;
  w.notify();
  w.notify_unfenced();
  EXPECT_EQ(w.wakes(), 0u) << "a notify with no sleeper moved the word";
  w.wake();
  EXPECT_EQ(w.wakes(), 1u) << "wake() ends every sleep announced before it, so it always moves the word";
}

// The protocol itself: a waiter that announces, looks for the work and only then sleeps, against a
// waker that publishes the work and then notifies, round after round, the publication landing at
// different points of the waiter's steps. A lost wake-up leaves the waiter asleep with the work
// published until its limit.
TEST(WakeWord, NoWakeUpIsLostBetweenTheLookAndTheSleep) {
  wake_word w;
  std::atomic<int> published{0}, taken{0};
  constexpr int rounds = 5000;
  int lost = 0;
  std::thread waiter([&] {
    for (int r = 1; r <= rounds; ++r) {
      for (;;) {
        const auto seen = w.seen();
        w.announce();
#if !RILL_TSAN  // (the scheduler's has_work does the same; under TSan the announcement's RMW orders it)
        std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
        if (published.load(std::memory_order_relaxed) >= r) break;
        const bool woken = w.sleep(seen, never);
        w.withdraw();
        if (!woken && published.load() >= r) {  // lost: stop here (the waker waits for nothing more)
          ++lost;
          taken.store(rounds);
          return;
        }
      }
      w.withdraw();
      taken.store(r);
    }
  });
  for (int r = 1; r <= rounds; ++r) {
    for (int spin = 0; spin < (r % 7) * 50; ++spin) std::atomic_signal_fence(std::memory_order_seq_cst);
    if (r % 3 == 0) std::this_thread::yield();
    published.store(r, std::memory_order_relaxed);
    w.notify();
    while (taken.load() < r) std::this_thread::yield();
  }
  waiter.join();
  EXPECT_EQ(lost, 0);
}

TEST(WakeWord, AThreadAsleepIsWoken) {
  wake_word w;
  sleeping_thread sleeper(w);
  w.notify();
  EXPECT_TRUE(sleeper.woken());
}

// The word in memory two processes share, as the MPI transport places it in a node's window.
TEST(WakeWord, AWakeFromAnotherProcessEndsTheSleep) {
  struct shared {
    wake_word word{true};
    std::atomic<int> announced{0};
  };
  void* memory = mmap(nullptr, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* s = new (memory) shared();
  const pid_t parent = getpid();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    while (s->announced.load() == 0) std::this_thread::yield();
    const bool saw_it_asleep = wait_until_asleep(parent, parent);
    s->word.notify();
    _exit(saw_it_asleep ? 0 : 1);
  }
  const auto seen = s->word.seen();
  s->word.announce();
  s->announced.store(1);
  const bool woken = s->word.sleep(seen, never);
  s->word.withdraw();
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(woken) << "the other process's wake did not reach the sleeper (a private futex?)";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the other process never saw the sleeper asleep";
  munmap(memory, sizeof(shared));
}

// A ring write, and a doorbell, wake the destination's sleeping workers; with none asleep they
// leave its word alone.
TEST(WakeWord, ANodeRingWriteWakesTheDestination) {
  using rill::detail::byte_ring;
  constexpr std::size_t capacity = 4096;
  std::vector<std::byte> to(byte_ring::bytes_for(capacity) + 64), from(byte_ring::bytes_for(capacity) + 64);
  auto aligned = [](std::vector<std::byte>& v) {
    void* p = v.data();
    std::size_t room = v.size();
    return static_cast<std::byte*>(std::align(64, byte_ring::bytes_for(capacity), p, room));
  };
  wake_word destination;
  rill::detail::node_rings rings;
  rings.add(1, 2, aligned(to), aligned(from), capacity, 1024, destination);
  const std::vector<std::byte> message(100, std::byte{7});

  ASSERT_TRUE(rings.try_write(1, message));
  EXPECT_EQ(destination.wakes(), 0u) << "a write woke a destination that was not asleep";

  for (const bool doorbell : {false, true}) {
    sleeping_thread sleeper(destination);
    if (doorbell)
      rings.ring_doorbell(1);
    else
      EXPECT_TRUE(rings.try_write(1, message));
    EXPECT_TRUE(sleeper.woken()) << (doorbell ? "the doorbell" : "the write") << " did not wake the destination";
  }
}

}  // namespace
