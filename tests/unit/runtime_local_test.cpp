// Single-process tests of the whole runtime on the local transport: tasks, latches, yield, the
// top-level task's result, SPMD runs, active-message misuse and stats. Every test builds its own
// rill::runtime, so one process also runs many runtimes one after another.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rill/rill.hpp"
#include "scheduler/fiber.hpp"  // RILL_TSAN
#include "test_argv.hpp"

namespace {

// Tasks suspended at once in the 10^5-waiter tests. ThreadSanitizer tracks every fiber like a thread
// and dies beyond its thread limit (8128), so under TSan the count stays below that.
#if defined(RILL_TSAN)
constexpr int many_waiters = 2000;
#else
constexpr int many_waiters = 100000;
#endif

struct argv_holder : rill_test::test_argv {
  explicit argv_holder(std::initializer_list<std::string> flags)
      : test_argv(rill_test::command_line("runtime_local_test", flags)) {}
};

std::unique_ptr<rill::runtime> make_runtime(std::initializer_list<std::string> flags) {
  argv_holder a(flags);
  return std::make_unique<rill::runtime>(a.argc, a.ptrs.data());
}

// ---- spawn + latch -------------------------------------------------------------------------

void spawn_and_count(int workers) {
  constexpr int n = 100000;
  auto rt = make_runtime({"--rill:workers=" + std::to_string(workers)});
  ASSERT_EQ(rt->options().workers, workers);
  std::vector<std::atomic<int>> runs(n);
  std::atomic<int> top_runs{0};
  const int code = rt->run([&] {
    top_runs.fetch_add(1);
    rill::latch done(n);
    for (int i = 0; i < n; ++i) {
      rill::spawn([&runs, &done, i] {
        runs[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_relaxed);
        done.count_down();
      });
    }
    done.wait();
    // Everything counted down before the latch opened.
    for (int i = 0; i < n; ++i)
      if (runs[static_cast<std::size_t>(i)].load(std::memory_order_relaxed) != 1) return 100 + i % 100;
    return 0;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(top_runs.load(), 1);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    const int r = runs[static_cast<std::size_t>(i)].load();
    if (r != 1 && ++wrong <= 10) ADD_FAILURE() << "task " << i << " ran " << r << " times";
  }
  EXPECT_EQ(wrong, 0);
}

TEST(RuntimeLocal, SpawnLatch100kTasksOneWorker) { spawn_and_count(1); }
TEST(RuntimeLocal, SpawnLatch100kTasksTwoWorkers) { spawn_and_count(2); }

// One latch, re-armed with add() after each wait, counts round after round of tasks: every round's
// wait returns only once that round's tasks have all run, and parks its fiber again if they have not.
TEST(RuntimeLocal, LatchReArmedRoundAfterRound) {
  constexpr int rounds = 200, per_round = 64;
  auto rt = make_runtime({"--rill:workers=2"});
  std::atomic<int> ran{0};
  const int code = rt->run([&] {
    rill::latch round_done(per_round);
    for (int r = 1; r <= rounds; ++r) {
      for (int i = 0; i < per_round; ++i)
        rill::spawn([&ran, &round_done] {
          ran.fetch_add(1, std::memory_order_relaxed);
          round_done.count_down();
        });
      round_done.wait();
      if (ran.load() != r * per_round) return r;  // opened before its round ended
      if (r < rounds) round_done.add(per_round);
    }
    return 0;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(ran.load(), rounds * per_round);
}

TEST(RuntimeLocal, NestedSpawnsFromTasks) {
  // Tasks spawning tasks, 2 workers: a tree of 1 + 100 + 100*100 tasks.
  auto rt = make_runtime({"--rill:workers=2"});
  std::atomic<int> leaves{0};
  std::atomic<int> inner{0};
  rt->run([&] {
    rill::latch all(100);
    for (int i = 0; i < 100; ++i) {
      rill::spawn([&] {
        inner.fetch_add(1);
        rill::latch mine(100);
        for (int j = 0; j < 100; ++j) {
          rill::spawn([&] {
            leaves.fetch_add(1);
            mine.count_down();
          });
        }
        mine.wait();
        all.count_down();
      });
    }
    all.wait();
  });
  EXPECT_EQ(inner.load(), 100);
  EXPECT_EQ(leaves.load(), 10000);
}

// 10^5 tasks suspended at once on one worker, each on a latch that opens only after all started.
TEST(RuntimeLocal, HundredThousandWaitingFibersOnOneWorker) {
  constexpr int n = many_waiters;
  auto rt = make_runtime({"--rill:workers=1", "--rill:stack=16K"});
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  const int code = rt->run([&] {
    rill::latch gate(1);
    rill::latch done(n);
    for (int i = 0; i < n; ++i) {
      rill::spawn([&] {
        started.fetch_add(1);
        gate.wait();
        finished.fetch_add(1);
        done.count_down();
      });
    }
    while (started.load() < n) rill::yield();
    const int early = finished.load();  // nobody passes a closed gate
    gate.count_down();
    done.wait();
    return early == 0 ? 0 : 1;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(started.load(), n);
  EXPECT_EQ(finished.load(), n);
}

// The same 10^5 suspended tasks on 16K stacks, but the gate is opened by the last task to start
// rather than by the top-level task.
TEST(RuntimeLocal, HundredThousandWaitingTasksGateOpenedByLastOne) {
  constexpr int n = many_waiters;
  auto rt = make_runtime({"--rill:workers=1", "--rill:stack=16K"});
  std::atomic<int> started{0};
  std::atomic<int> passed_closed_gate{0};
  std::atomic<int> finished{0};
  const int code = rt->run([&] {
    rill::latch gate(1);
    rill::latch done(n);
    for (int i = 0; i < n; ++i) {
      rill::spawn([&] {
        if (started.fetch_add(1) + 1 == n) {
          gate.count_down();
        } else {
          gate.wait();
          if (started.load() != n) passed_closed_gate.fetch_add(1);
        }
        finished.fetch_add(1);
        done.count_down();
      });
    }
    done.wait();
    return finished.load() == n ? 0 : 1;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(passed_closed_gate.load(), 0);
  EXPECT_EQ(finished.load(), n);
}

// ---- latch ---------------------------------------------------------------------------------

TEST(Latch, OpenStatesOutsideTheRuntime) {
  rill::latch open(0);
  EXPECT_TRUE(open.try_wait());
  open.wait();  // returns at once
  rill::latch two(2);
  EXPECT_FALSE(two.try_wait());
  two.count_down();
  EXPECT_FALSE(two.try_wait());
  two.count_down();
  EXPECT_TRUE(two.try_wait());
  two.add(1);  // re-armed
  EXPECT_FALSE(two.try_wait());
  two.count_down();
  EXPECT_TRUE(two.try_wait());
  rill::latch batch(5);
  batch.count_down(5);
  EXPECT_TRUE(batch.try_wait());
  EXPECT_THROW(batch.count_down(), rill::misuse_error);
}

TEST(Latch, PlainThreadsWaitAndWake) {
  rill::latch ready(3);
  rill::latch go(1);
  std::atomic<int> passed{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i) {
    ts.emplace_back([&] {
      ready.count_down();
      go.wait();
      passed.fetch_add(1);
    });
  }
  ready.wait();
  EXPECT_EQ(passed.load(), 0);
  go.count_down();
  for (auto& t : ts) t.join();
  EXPECT_EQ(passed.load(), 3);
}

// Waits on `l` from `depth` extra stack frames down, so that successive waits of one fiber suspend
// at different stack depths.
[[gnu::noinline]] void wait_at_depth(rill::latch& l, int depth) {
  volatile char pad[200];
  pad[0] = static_cast<char>(depth);
  if (depth > 0)
    wait_at_depth(l, depth - 1);
  else
    l.wait();
  pad[1] = pad[0];
}

// A task parks on a latch that a plain thread opens the moment the task announces it is about to
// wait: the wake often lands while the task is still parking (after it registered as a waiter,
// before it switched away). Successive waits happen at different stack depths.
TEST(RuntimeLocal, LatchOpenedByAnotherThreadWhileTaskParks) {
  constexpr int rounds = 100000;
  auto rt = make_runtime({"--rill:workers=1"});
  std::vector<std::unique_ptr<rill::latch>> announce, open;
  for (int i = 0; i < rounds; ++i) {
    announce.push_back(std::make_unique<rill::latch>(1));
    open.push_back(std::make_unique<rill::latch>(1));
  }
  std::thread opener([&] {
    for (int i = 0; i < rounds; ++i) {
      while (!announce[static_cast<std::size_t>(i)]->try_wait()) {
      }
      open[static_cast<std::size_t>(i)]->count_down();
    }
  });
  int passed = -1;
  const int code = rt->run([&] {
    passed = 0;
    for (int i = 0; i < rounds; ++i) {
      announce[static_cast<std::size_t>(i)]->count_down();
      wait_at_depth(*open[static_cast<std::size_t>(i)], i % 5);
      ++passed;
    }
    return 5;
  });
  opener.join();
  EXPECT_EQ(code, 5);
  EXPECT_EQ(passed, rounds);
}

// Two workers: latches opened by tasks that another worker may have stolen.
TEST(RuntimeLocal, ParentsWaitForChildrenOnOtherWorkers) {
  constexpr int rounds = 20000;
  auto rt = make_runtime({"--rill:workers=2"});
  std::atomic<long> sum{0};
  rt->run([&] {
    rill::latch all(rounds);
    for (int i = 0; i < rounds; ++i) {
      rill::spawn([&, i] {
        rill::latch child(1);
        long value = 0;
        rill::spawn([&] {
          value = i;
          child.count_down();
        });
        child.wait();
        sum.fetch_add(value);
        all.count_down();
      });
    }
    all.wait();
  });
  EXPECT_EQ(sum.load(), static_cast<long>(rounds) * (rounds - 1) / 2);
}

// run() returns only once the program is quiescent, also when the top-level task returns while
// tasks it never joined are still running, waiting and waking each other.
TEST(RuntimeLocal, RunWaitsForTasksTheTopLevelTaskDidNotJoin) {
  constexpr int parents = 300;
  constexpr int children = 40;
  auto rt = make_runtime({"--rill:workers=2"});
  std::atomic<int> done_parents{0};
  std::atomic<int> done_children{0};
  const int code = rt->run([&] {
    for (int p = 0; p < parents; ++p) {
      rill::spawn([&] {
        rill::latch l(children);
        for (int c = 0; c < children; ++c) {
          rill::spawn([&] {
            rill::yield();
            done_children.fetch_add(1);
            l.count_down();
          });
        }
        l.wait();
        done_parents.fetch_add(1);
      });
    }
    return 8;  // without waiting for any of them
  });
  EXPECT_EQ(code, 8);
  EXPECT_EQ(done_parents.load(), parents);
  EXPECT_EQ(done_children.load(), parents * children);
}

// ---- yield ---------------------------------------------------------------------------------

TEST(RuntimeLocal, YieldLetsQueuedTasksRun) {
  auto rt = make_runtime({"--rill:workers=1"});
  const int code = rt->run([] {
    std::atomic<bool> flag{false};
    rill::latch done(1);
    rill::spawn([&] {
      flag.store(true);
      done.count_down();
    });
    long yields = 0;
    while (!flag.load()) {
      rill::yield();
      if (++yields > 1000000) return 1;  // yield never ran the queued task
    }
    done.wait();
    return 0;
  });
  EXPECT_EQ(code, 0);
}

// Two fibers that poll a flag with rill::yield() must not hand the worker back and forth forever:
// the reply that sets the flag only arrives if the worker polls the network now and then.
std::atomic<bool> reply_seen{false};

TEST(RuntimeLocal, FibersPollingWithYieldStillLetTheNetworkProgress) {
  reply_seen.store(false);
  auto rt = make_runtime({"--rill:ranks=2", "--rill:workers=1"});
  const int code = rt->run([] {
    rill::latch pollers_done(2);
    for (int i = 0; i < 2; ++i) {
      rill::spawn([&pollers_done] {
        long yields = 0;
        while (!reply_seen.load()) {
          rill::yield();
          if (++yields > 10'000'000) break;  // livelocked: the check below fails
        }
        pollers_done.count_down();
      });
    }
    rill::am::send(1, [] { rill::am::send(0, [] { reply_seen.store(true); }); });
    pollers_done.wait();
    return reply_seen.load() ? 0 : 1;
  });
  EXPECT_EQ(code, 0);
}

// Likewise two fibers that wake each other through latches, parking in turn.
std::atomic<bool> reply_arrived{false};

// --rill:agg-idle-flush=off: a worker that runs out of work no longer sends what its rank buffered,
// so a lone request and its reply each leave when their buffer is old enough -- round trips still
// complete, each reply once.
rill::latch* g_aged_reply = nullptr;
std::atomic<int> g_aged_replies{0};
TEST(RuntimeLocal, WithoutFlushOnIdleALoneMessageLeavesByAge) {
  g_aged_replies = 0;
  auto rt = make_runtime({"--rill:ranks=2", "--rill:workers=1", "--rill:agg-idle-flush=off", "--rill:agg-age-us=100"});
  rt->run([] {
    for (int i = 0; i < 20; ++i) {
      rill::latch reply(1);
      g_aged_reply = &reply;
      rill::am::send(1, [] {
        rill::am::send(0, [] {
          g_aged_replies.fetch_add(1);
          g_aged_reply->count_down();
        });
      });
      reply.wait();
    }
  });
  EXPECT_EQ(g_aged_replies.load(), 20);
}

TEST(RuntimeLocal, FibersWakingEachOtherStillLetTheNetworkProgress) {
  reply_arrived.store(false);
  auto rt = make_runtime({"--rill:ranks=2", "--rill:workers=1"});
  const int code = rt->run([] {
    std::unique_ptr<rill::latch> turn[2] = {std::make_unique<rill::latch>(1), std::make_unique<rill::latch>(1)};
    bool stop = false;
    long rounds = 0;
    rill::latch finished(2);
    for (int i = 0; i < 2; ++i) {
      rill::spawn([&, i] {
        for (;;) {
          turn[i]->wait();
          turn[i] = std::make_unique<rill::latch>(1);
          if (reply_arrived.load() || ++rounds > 2'000'000) stop = true;  // the bound: livelocked
          turn[1 - i]->count_down();
          if (stop) break;
        }
        finished.count_down();
      });
    }
    rill::am::send(1, [] { rill::am::send(0, [] { reply_arrived.store(true); }); });
    turn[0]->count_down();
    finished.wait();
    return reply_arrived.load() ? 0 : 1;
  });
  EXPECT_EQ(code, 0);
}

// The top-level task and a second fiber alternate strictly, each handing over with rill::yield().
// To be on separate fibers (rather than one nested in the other), the second task is spawned by a
// message handler, which runs from the worker's scheduling loop after the top-level task parked.
struct pingpong {
  static inline std::atomic<int> turn{0};
  static inline std::vector<int> trace;
  static inline std::atomic<bool> stuck{false};
  static inline rill::latch* resume_top = nullptr;
  static inline rill::latch* partner_done = nullptr;
  static constexpr int rounds = 1000;

  static void take_turns(int me) {
    for (int i = 0; i < rounds && !stuck.load(); ++i) {
      long spins = 0;
      while (turn.load() != me) {
        rill::yield();
        if (++spins > 100000) {  // the other fiber never got to run
          stuck.store(true);
          return;
        }
      }
      trace.push_back(me);
      turn.store(1 - me);
    }
  }
};

TEST(RuntimeLocal, YieldPingPongBetweenFibers) {
  pingpong::turn = 0;
  pingpong::trace.clear();
  pingpong::stuck = false;
  auto rt = make_runtime({"--rill:workers=1"});
  const int code = rt->run([] {
    rill::latch resume(1);
    rill::latch done(1);
    pingpong::resume_top = &resume;
    pingpong::partner_done = &done;
    rill::am::send(rill::rank_me(), [] {
      rill::spawn([] {
        pingpong::resume_top->count_down();  // the top-level fiber becomes ready
        pingpong::take_turns(1);
        pingpong::partner_done->count_down();
      });
    });
    rill::am::flush();
    resume.wait();
    pingpong::take_turns(0);
    done.wait();
    return 0;
  });
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(pingpong::stuck.load());
  ASSERT_EQ(pingpong::trace.size(), 2u * pingpong::rounds);
  for (std::size_t i = 0; i < pingpong::trace.size(); ++i) ASSERT_EQ(pingpong::trace[i], static_cast<int>(i % 2)) << i;
}

// Many fibers (more than the ready queue first holds) take turns with yield while each keeps
// integer and floating-point values live across the switches; each ends with what the same
// arithmetic gives without switching. A switch that lost a register, or handed a fiber another's
// frame, shows as a wrong sum.
std::uint64_t mix_step(std::uint64_t x, std::uint64_t i) { return (x ^ (x >> 29)) * 0x9E3779B97F4A7C15ULL + i; }

TEST(RuntimeLocal, ManyYieldingFibersKeepTheirValuesAcrossSwitches) {
  constexpr int fibers = 300;
  constexpr int steps = 200;
  std::vector<std::uint64_t> ints(fibers);
  std::vector<double> reals(fibers);
  auto rt = make_runtime({"--rill:workers=1"});
  rt->run([&] {
    rill::latch gate(1), done(fibers);
    for (int f = 0; f < fibers; ++f) {
      rill::spawn([&, f] {
        gate.wait();  // every task suspends on a fiber of its own first
        std::uint64_t x = static_cast<std::uint64_t>(f) + 1;
        double y = 1.0 + f;
        for (int i = 0; i < steps; ++i) {
          x = mix_step(x, static_cast<std::uint64_t>(i));
          y = y * 1.0001 + static_cast<double>(x % 7);
          rill::yield();
        }
        ints[static_cast<std::size_t>(f)] = x;
        reals[static_cast<std::size_t>(f)] = y;
        done.count_down();
      });
    }
    gate.count_down();
    done.wait();
  });
  for (int f = 0; f < fibers; ++f) {
    std::uint64_t x = static_cast<std::uint64_t>(f) + 1;
    double y = 1.0 + f;
    for (int i = 0; i < steps; ++i) {
      x = mix_step(x, static_cast<std::uint64_t>(i));
      y = y * 1.0001 + static_cast<double>(x % 7);
    }
    ASSERT_EQ(ints[static_cast<std::size_t>(f)], x) << f;
    ASSERT_EQ(reals[static_cast<std::size_t>(f)], y) << f;
  }
}

// ---- fib -----------------------------------------------------------------------------------

long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

long fib_tasks(int n) {
  if (n < 2) return n;
  long a = 0;
  long b = 0;
  rill::latch join(2);
  rill::spawn([&] {
    a = fib_tasks(n - 1);
    join.count_down();
  });
  rill::spawn([&] {
    b = fib_tasks(n - 2);
    join.count_down();
  });
  join.wait();
  return a + b;
}

TEST(RuntimeLocal, FibWithSpawnPerCallOneWorker) {
  auto rt = make_runtime({"--rill:workers=1"});
  long result = -1;
  rt->run([&] { result = fib_tasks(20); });
  EXPECT_EQ(result, fib_seq(20));
}

TEST(RuntimeLocal, FibWithSpawnPerCallTwoWorkers) {
  auto rt = make_runtime({"--rill:workers=2"});
  long result = -1;
  rt->run([&] { result = fib_tasks(20); });
  EXPECT_EQ(result, fib_seq(20));
}

// ---- run / run_spmd ------------------------------------------------------------------------

TEST(RuntimeLocal, RunReturnsTopLevelValue) {
  auto rt = make_runtime({"--rill:workers=1"});
  EXPECT_EQ(rt->run([] { return 42; }), 42);
}

TEST(RuntimeLocal, RunReturnsValueComputedByTasks) {
  auto rt = make_runtime({"--rill:workers=2", "--rill:ranks=2"});
  std::atomic<int> where{-1};
  std::atomic<int> top_runs{0};
  const int code = rt->run([&] {
    top_runs.fetch_add(1);
    where = rill::rank_me();
    std::atomic<int> x{0};
    rill::latch l(10);
    for (int i = 1; i <= 10; ++i) {
      rill::spawn([&, i] {
        x.fetch_add(i);
        l.count_down();
      });
    }
    l.wait();
    return x.load() + rill::rank_n();
  });
  EXPECT_EQ(code, 55 + 2);
  EXPECT_EQ(top_runs.load(), 1);  // run(): rank 0 only
  EXPECT_EQ(where.load(), 0);
}

TEST(RuntimeLocal, RunVoidReturnsZero) {
  auto rt = make_runtime({"--rill:workers=1"});
  bool ran = false;
  EXPECT_EQ(rt->run([&] { ran = true; }), 0);
  EXPECT_TRUE(ran);
}

TEST(RuntimeLocal, RunTwiceIsMisuse) {
  auto rt = make_runtime({"--rill:workers=1"});
  EXPECT_EQ(rt->run([] { return 3; }), 3);
  EXPECT_THROW(rt->run([] { return 4; }), rill::misuse_error);
}

TEST(RuntimeLocal, RunSpmdRunsOnEveryRankAndReturnsLowestRankedNonZero) {
  auto rt = make_runtime({"--rill:ranks=4", "--rill:workers=1"});
  EXPECT_EQ(rt->ranks(), 4);
  EXPECT_EQ(rt->local_ranks(), 4);
  std::vector<std::atomic<int>> ran(4);
  std::atomic<int> bad_n{0};
  const int code = rt->run_spmd([&] {
    const int me = rill::rank_me();
    ran[static_cast<std::size_t>(me)].fetch_add(1);
    if (rill::rank_n() != 4) bad_n.fetch_add(1);
    return me == 1 ? 0 : 10 + me;  // ranks 0, 2, 3 fail; 0 is the lowest
  });
  EXPECT_EQ(code, 10);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(ran[static_cast<std::size_t>(r)].load(), 1) << "rank " << r;
  EXPECT_EQ(bad_n.load(), 0);
}

TEST(RuntimeLocal, RunSpmdLowestNonZeroIsNotRankZero) {
  auto rt = make_runtime({"--rill:ranks=4", "--rill:workers=1"});
  const int code = rt->run_spmd([] {
    const int me = rill::rank_me();
    return (me == 2 || me == 3) ? 20 + me : 0;
  });
  EXPECT_EQ(code, 22);
}

TEST(RuntimeLocal, RunSpmdAllZeroReturnsZero) {
  auto rt = make_runtime({"--rill:ranks=4", "--rill:workers=1"});
  std::atomic<int> count{0};
  EXPECT_EQ(rt->run_spmd([&] { count.fetch_add(1); }), 0);
  EXPECT_EQ(count.load(), 4);
}

TEST(RuntimeLocal, RuntimeConsumesItsFlags) {
  argv_holder a({"--rill:workers=1", "user-arg", "--rill:ranks=3", "--user-flag"});
  rill::runtime rt(a.argc, a.ptrs.data());
  ASSERT_EQ(a.argc, 3);
  EXPECT_EQ(std::string(a.ptrs[1]), "user-arg");
  EXPECT_EQ(std::string(a.ptrs[2]), "--user-flag");
  EXPECT_EQ(a.ptrs[3], nullptr);
  EXPECT_EQ(rt.ranks(), 3);
  EXPECT_EQ(rt.options().workers, 1);
  EXPECT_EQ(rt.options().transport, rill::transport_kind::local);
}

TEST(RuntimeLocal, SeveralRuntimesOneAfterAnother) {
  for (int i = 0; i < 4; ++i) {
    auto rt =
        make_runtime({"--rill:ranks=" + std::to_string(1 + i % 3), "--rill:workers=" + std::to_string(1 + i % 2)});
    std::atomic<int> hits{0};
    const int code = rt->run([&] {
      rill::latch l(100);
      for (int k = 0; k < 100; ++k) {
        rill::spawn([&] {
          hits.fetch_add(1);
          l.count_down();
        });
      }
      l.wait();
      return i + 1;
    });
    EXPECT_EQ(code, i + 1);
    EXPECT_EQ(hits.load(), 100);
  }
}

TEST(RuntimeLocal, TwoRuntimesAlive) {
  // Constructed together, run one after the other.
  auto a = make_runtime({"--rill:workers=1"});
  auto b = make_runtime({"--rill:workers=2", "--rill:ranks=2"});
  EXPECT_EQ(a->run([] { return rill::rank_n(); }), 1);
  EXPECT_EQ(b->run([] { return rill::rank_n(); }), 2);
}

// ---- active messages -----------------------------------------------------------------------

struct am_state {
  static inline std::atomic<int> handled{0};
  static inline std::atomic<int> handled_text{0};
  static inline std::atomic<int> wrong_sender{0};
};

TEST(RuntimeLocal, AmSendToOutOfRangeRankIsMisuse) {
  am_state::handled = 0;
  am_state::handled_text = 0;
  auto rt = make_runtime({"--rill:ranks=2", "--rill:workers=1"});
  const int code = rt->run([] {
    int caught = 0;
    const int n = rill::rank_n();
    for (int dest : {-1, n, n + 5}) {
      try {
        rill::am::send(
            dest, [](int) { am_state::handled.fetch_add(1000); }, 7);
      } catch (const rill::misuse_error& e) {
        ++caught;
        if (std::string(e.what()).find(std::to_string(dest)) == std::string::npos) return 100;
      }
      try {
        rill::am::send(
            dest, [](const std::string&) { am_state::handled_text.fetch_add(1000); }, std::string("x"));
      } catch (const rill::misuse_error&) {
        ++caught;
      }
    }
    // Valid sends still work afterwards (and termination is not confused by the failed ones).
    rill::am::send(
        n - 1,
        [](int v) {
          am_state::handled.fetch_add(v);
          if (rill::am::sender() != 0) am_state::wrong_sender.fetch_add(1);
        },
        1);
    rill::am::send(
        0, [](const std::string& s) { am_state::handled_text.fetch_add(static_cast<int>(s.size())); },
        std::string("hello"));
    return caught;
  });
  EXPECT_EQ(code, 6);
  EXPECT_EQ(am_state::handled.load(), 1);
  EXPECT_EQ(am_state::handled_text.load(), 5);
  EXPECT_EQ(am_state::wrong_sender.load(), 0);
}

TEST(RuntimeLocal, SpawnOutsideATaskIsMisuse) {
  std::atomic<int> ran{0};
  EXPECT_THROW(rill::spawn([&] { ran.fetch_add(1); }), rill::misuse_error);
  // Also while a runtime exists: the test's thread is not one of its workers.
  auto rt = make_runtime({"--rill:workers=1"});
  EXPECT_THROW(rill::spawn([&] { ran.fetch_add(1); }), rill::misuse_error);
  rt->run([] {});
  EXPECT_THROW(rill::spawn([&] { ran.fetch_add(1); }), rill::misuse_error);
  EXPECT_EQ(ran.load(), 0);
}

TEST(RuntimeLocal, RejectedSpawnDestroysItsCallable) {
  auto token = std::make_shared<int>(7);
  EXPECT_THROW(rill::spawn([token] { (void)*token; }), rill::misuse_error);
  EXPECT_EQ(token.use_count(), 1) << "the rejected task's captures were never destroyed";
  // A callable too large for a task record's inline storage.
  struct big {
    std::shared_ptr<int> t;
    char pad[128] = {};
    void operator()() const {}
  };
  EXPECT_THROW(rill::spawn(big{token}), rill::misuse_error);
  EXPECT_EQ(token.use_count(), 1) << "the rejected large task's callable was never destroyed";
}

TEST(RuntimeLocal, AmSendOutsideATaskIsMisuse) {
  EXPECT_THROW(rill::am::send(
                   0, [](int) {}, 1),
               rill::misuse_error);
  EXPECT_THROW(rill::am::send(
                   0, [](const std::string&) {}, std::string("s")),
               rill::misuse_error);
  EXPECT_THROW(rill::am::flush(), rill::misuse_error);
  EXPECT_THROW(rill::rank_me(), rill::misuse_error);
  EXPECT_THROW(rill::rank_n(), rill::misuse_error);
  EXPECT_THROW(rill::stats(), rill::misuse_error);
  EXPECT_EQ(rill::am::sender(), -1);
  auto rt = make_runtime({"--rill:workers=1"});
  EXPECT_THROW(rill::am::send(
                   0, [](int) {}, 1),
               rill::misuse_error);
  EXPECT_THROW(rill::am::send(
                   0, [](const std::string&) {}, std::string("s")),
               rill::misuse_error);
  EXPECT_EQ(rt->run([] { return 9; }), 9);
}

TEST(RuntimeLocal, AmSendBetweenRanksDeliversEveryMessage) {
  static std::atomic<long> total{0};
  static std::atomic<int> count{0};
  total = 0;
  count = 0;
  auto rt = make_runtime({"--rill:ranks=3", "--rill:workers=1", "--rill:agg-bytes=256"});
  const int code = rt->run_spmd([] {
    const int me = rill::rank_me();
    for (int i = 0; i < 3000; ++i) {
      rill::am::send((me + i) % rill::rank_n(),
                     [](int v, long w) {
                       total.fetch_add(v + w);
                       count.fetch_add(1);
                     },
                     i, static_cast<long>(me));
    }
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(count.load(), 3 * 3000);
  EXPECT_EQ(total.load(), 3L * (2999L * 3000L / 2) + 3000L * (0 + 1 + 2));
}

// ---- stats ---------------------------------------------------------------------------------

TEST(RuntimeLocal, StatsCountTasksRun) {
  constexpr int n = 5000;
  auto rt = make_runtime({"--rill:workers=1"});
  std::uint64_t before = 0;
  std::uint64_t after = 0;
  rt->run([&] {
    before = rill::stats().tasks_run;
    rill::latch l(n);
    for (int i = 0; i < n; ++i) rill::spawn([&] { l.count_down(); });
    l.wait();
    after = rill::stats().tasks_run;
  });
  // One worker: every spawned task (but not the still running top-level one) has been counted.
  EXPECT_EQ(after - before, static_cast<std::uint64_t>(n));
}

TEST(RuntimeLocal, StatsCountMessages) {
  static std::atomic<int> got{0};
  got = 0;
  auto rt = make_runtime({"--rill:ranks=2", "--rill:workers=1"});
  std::atomic<std::uint64_t> sent{0};
  std::atomic<std::uint64_t> buffers{0};
  rt->run([&] {
    for (int i = 0; i < 100; ++i) rill::am::send(1, [] { got.fetch_add(1); });
    rill::am::flush();
    const rill::rank_stats s = rill::stats();
    sent = s.messages_sent;
    buffers = s.buffers_sent;
  });
  EXPECT_EQ(got.load(), 100);
  EXPECT_EQ(sent.load(), 100u);
  EXPECT_GE(buffers.load(), 1u);
}

// Back-pressure on the local transport waits for room: a sender refused by a full queue sleeps
// until the receiver takes a buffer of its out (or a retry interval passes), instead of trying
// again after every poll of its worker -- which, with more ranks than cores, kept the core from
// the receiver that had to drain (the demo's tree at 256 ranks took minutes). Rank 1's handler
// holds its only worker with a few million steps of arithmetic a message (about a millisecond;
// work, not a sleep, so the hold is the same on any machine in steps, just slower under the
// sanitizers); rank 0 sends 40 messages, each in a buffer of its own, through a queue of one
// buffer: about one refused try a buffer, where retrying at every poll made hundreds of thousands.
TEST(RuntimeLocal, ARefusedSendWaitsForRoomInsteadOfRetryingAtEveryPoll) {
  static std::atomic<int> got{0};
  got = 0;
  constexpr int sends = 40;
  auto rt = make_runtime({"--rill:ranks=2", "--rill:workers=1", "--rill:queue-buffers=1"});
  std::uint64_t refused = 0;
  rt->run([&] {
    for (int i = 0; i < sends; ++i) {
      rill::am::send(1, [] {
        volatile std::uint64_t x = 0;
        for (std::uint64_t k = 0; k < 2'000'000; ++k) x = x + k;
        got.fetch_add(1);
      });
      rill::am::flush();
    }
    for (const rill::counter& c : rill::counters())
      if (c.layer == "messages" && c.name == "sends_refused") refused = c.value;
  });
  EXPECT_EQ(got.load(), sends);
  EXPECT_GE(refused, 1u);  // (the queue of one was full: the test tests what it says)
  EXPECT_LE(refused, 4u * sends + 8) << "a refused send tried again without waiting for room";
}

// ---- fatal paths ---------------------------------------------------------------------------

TEST(RuntimeLocalDeathTest, BadFlagExitsWithUsageCode) {
  EXPECT_EXIT(make_runtime({"--rill:bogus=1"}), ::testing::ExitedWithCode(rill::exit_usage), "bogus");
}

TEST(RuntimeLocalDeathTest, TaskExceptionIsFatal) {
  EXPECT_EXIT(
      {
        auto rt = make_runtime({"--rill:workers=1"});
        rt->run([] {
          rill::latch l(1);
          rill::spawn([&] {
            l.count_down();
            throw std::runtime_error("boom in a task");
          });
          l.wait();
        });
      },
      ::testing::ExitedWithCode(rill::exit_fatal), "boom in a task");
}

// The rule of the progress thread (rill::am::send_inline): its handlers must not wait. Rank 1's
// one worker is kept busy first (an idle worker would run the handler itself).
rill::latch* g_rank1_busy = nullptr;
TEST(RuntimeLocalDeathTest, AnInlineHandlerThatWaitsIsFatalNamingTheRule) {
  EXPECT_EXIT(
      {
        auto rt = make_runtime({"--rill:ranks=2", "--rill:workers=1", "--rill:progress=thread"});
        rt->run([] {
          rill::latch busy(1), answered(1);
          g_rank1_busy = &busy;
          rill::am::send(1, [] {
            rill::am::send_inline(0, [] { g_rank1_busy->count_down(); });
            rill::am::flush();
            for (;;) std::this_thread::yield();  // until the program ends
          });
          rill::am::flush();
          busy.wait();
          rill::am::send_inline(1, [] { rill::yield(); });
          rill::am::flush();
          answered.wait();  // never: rank 1's progress thread ends the program
        });
      },
      ::testing::ExitedWithCode(rill::exit_fatal), "rank 0 yielded on the progress thread.*must not wait");
}

}  // namespace
