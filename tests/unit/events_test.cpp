// Events, merges, poisoning and deferred spawns on one rank (local transport): triggering and
// waiting from tasks, deferred triggers, generation reuse under load, and the failure paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "one_rank.hpp"
#include "rill/rill.hpp"
#include "scheduler/fiber.hpp"  // RILL_TSAN

namespace {

#if defined(RILL_TSAN)
constexpr int many_waiters = 1000;
constexpr int reuse_events = 100000;
#else
constexpr int many_waiters = 20000;
constexpr int reuse_events = 1000000;
#endif

using rill_test::run_on_one_rank;

TEST(Event, HandlesAreSmallValues) {
  static_assert(std::is_trivially_copyable_v<rill::event>);
  static_assert(sizeof(rill::event) == 16);
  static_assert(std::is_trivially_copyable_v<rill::proc>);
  EXPECT_TRUE(rill::event::none().is_none());
  EXPECT_EQ(rill::event(), rill::event::none());
}

TEST(Event, NoneHasAlwaysTriggered) {
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              rill::event none = rill::event::none();
                              EXPECT_TRUE(none.has_triggered());
                              EXPECT_FALSE(none.poisoned());
                              none.wait();
                              EXPECT_EQ(rill::merge(), rill::event::none());
                              return 0;
                            }),
            0);
}

TEST(Event, OperationsWithoutARunningRuntimeAreMisuse) {
  try {
    (void)rill::user_event::create();
    ADD_FAILURE() << "create() without a runtime returned";
  } catch (const rill::misuse_error& e) {
    EXPECT_NE(std::string(e.what()).find("no Rill runtime runs"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)rill::event_stats(), rill::misuse_error);
  // An event kept past the end of its runtime cannot be waited on from outside.
  rill::user_event kept;
  EXPECT_EQ(run_on_one_rank(1,
                            [&] {
                              kept = rill::user_event::create();
                              return 0;
                            }),
            0);
  EXPECT_THROW(kept.wait(), rill::misuse_error);
  EXPECT_THROW(kept.trigger(), rill::misuse_error);
}

TEST(Event, TriggerWakesWaitersOnAllWorkers) {
  for (int workers : {1, 2}) {
    std::atomic<int> woke{0};
    const int code = run_on_one_rank(workers, [&] {
      rill::user_event go = rill::user_event::create();
      EXPECT_FALSE(go.has_triggered());
      rill::latch done(many_waiters);
      for (int i = 0; i < many_waiters; ++i) {
        rill::spawn([&, go] {
          go.wait();
          woke.fetch_add(1);
          done.count_down();
        });
      }
      rill::yield();
      EXPECT_EQ(woke.load(), 0);  // nobody passes an untriggered event
      go.trigger();
      EXPECT_TRUE(go.has_triggered());
      done.wait();
      return woke.load() == many_waiters ? 0 : 1;
    });
    EXPECT_EQ(code, 0) << workers << " worker(s)";
  }
}

TEST(Event, TriggerTwiceIsMisuse) {
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              rill::user_event e = rill::user_event::create();
                              e.trigger();
                              EXPECT_THROW(e.trigger(), rill::misuse_error);
                              EXPECT_THROW(e.poison("late"), rill::misuse_error);
                              EXPECT_THROW(rill::user_event().trigger(), rill::misuse_error);
                              return 0;
                            }),
            0);
}

TEST(Event, LongDeferredChainTriggersWithoutRecursion) {
  // Each event triggers when the previous one has: a chain far deeper than a fiber stack could
  // hold if triggers recursed.
  constexpr int length = 200000;
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              rill::user_event first = rill::user_event::create();
                              rill::event prev = first;
                              std::vector<rill::event> chain;
                              for (int i = 0; i < length; ++i) {
                                rill::user_event next = rill::user_event::create();
                                next.trigger(prev);
                                chain.push_back(next);
                                prev = next;
                              }
                              EXPECT_FALSE(prev.has_triggered());
                              EXPECT_FALSE(chain.front().has_triggered());
                              first.trigger();
                              prev.wait();
                              for (const auto& e : chain) EXPECT_TRUE(e.has_triggered());
                              return 0;
                            }),
            0);
}

TEST(Event, TriggersFromWaitersRunTheirListsInTheOrderOfTheTriggers) {
  // One waiter triggers many events; each of their waiter lists is queued on this thread and runs
  // after the current list, oldest first: more lists than the thread's ring of queued lists holds,
  // so the order has to survive the spill into the overflow queue and back.
  constexpr int count = 1000;
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              rill::user_event root = rill::user_event::create();
                              std::vector<rill::user_event> fanned;
                              for (int i = 0; i < count; ++i) fanned.push_back(rill::user_event::create());
                              std::vector<int> order;
                              for (int i = 0; i < count; ++i) {
                                // Two waiters per event: both run, in their list, before the next list.
                                rill::detail::when_triggered(fanned[static_cast<std::size_t>(i)],
                                                             [&order, i](const auto&) { order.push_back(2 * i); });
                                rill::detail::when_triggered(fanned[static_cast<std::size_t>(i)],
                                                             [&order, i](const auto&) { order.push_back(2 * i + 1); });
                              }
                              rill::detail::when_triggered(root, [&](const auto&) {
                                for (int i = 0; i < count; ++i) {
                                  fanned[static_cast<std::size_t>(i)].trigger();
                                  if (i == count / 2) order.push_back(-1);  // no list ran inside this one
                                }
                              });
                              root.trigger();
                              rill::merge(std::vector<rill::event>(fanned.begin(), fanned.end())).wait();
                              EXPECT_EQ(order.size(), std::size_t{2 * count + 1});
                              EXPECT_EQ(order.front(), -1);
                              std::vector<int> lists(order.begin() + 1, order.end());
                              // Within a list the waiters run in some fixed order; across lists, oldest first.
                              for (int i = 0; i < count; ++i) {
                                const int a = lists[static_cast<std::size_t>(2 * i)];
                                const int b = lists[static_cast<std::size_t>(2 * i + 1)];
                                EXPECT_EQ(std::min(a, b), 2 * i);
                                EXPECT_EQ(std::max(a, b), 2 * i + 1);
                              }
                              return 0;
                            }),
            0);
}

TEST(Merge, WaitsForEveryInput) {
  EXPECT_EQ(run_on_one_rank(2,
                            [] {
                              std::vector<rill::user_event> inputs;
                              for (int i = 0; i < 5; ++i) inputs.push_back(rill::user_event::create());
                              rill::event all = rill::merge(inputs);
                              rill::event three = rill::merge(inputs[0], inputs[1], inputs[2]);
                              for (int i = 0; i < 4; ++i) {
                                inputs[static_cast<std::size_t>(i)].trigger();
                                EXPECT_FALSE(all.has_triggered()) << "after " << i + 1 << " of 5";
                              }
                              EXPECT_TRUE(three.has_triggered());
                              inputs[4].trigger();
                              all.wait();
                              EXPECT_TRUE(all.has_triggered());
                              return 0;
                            }),
            0);
}

TEST(Merge, TriggeredInputsAndDuplicatesCostNothing) {
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              rill::user_event a = rill::user_event::create();
                              rill::user_event done = rill::user_event::create();
                              done.trigger();
                              const auto before = rill::event_stats().created;
                              // Only triggered inputs: none(), and no event is created.
                              EXPECT_EQ(rill::merge(done, rill::event::none(), done), rill::event::none());
                              // One untriggered input, repeated: that input itself.
                              EXPECT_EQ(rill::merge(a, done, a, rill::event::none(), a), static_cast<rill::event>(a));
                              std::vector<rill::event> many(100, a);
                              EXPECT_EQ(rill::merge(many), static_cast<rill::event>(a));
                              EXPECT_EQ(rill::event_stats().created, before);
                              a.trigger();
                              return 0;
                            }),
            0);
}

TEST(Merge, OfMergesAndFromTasks) {
  EXPECT_EQ(run_on_one_rank(2,
                            [] {
                              constexpr int n = 64;
                              std::vector<rill::user_event> leaves;
                              for (int i = 0; i < n; ++i) leaves.push_back(rill::user_event::create());
                              std::vector<rill::event> pairs;
                              for (int i = 0; i < n; i += 2)
                                pairs.push_back(rill::merge(leaves[static_cast<std::size_t>(i)],
                                                            leaves[static_cast<std::size_t>(i + 1)]));
                              rill::event root = rill::merge(pairs);
                              // Trigger the leaves from tasks on any worker.
                              for (auto& l : leaves) rill::spawn([l] { l.trigger(); });
                              root.wait();
                              for (auto& p : pairs) EXPECT_TRUE(p.has_triggered());
                              return 0;
                            }),
            0);
}

TEST(Generations, MillionEventsThroughASmallPool) {
  // At most `window` events are untriggered at once, so the table never needs more slots than
  // that, however many events are created; old generations still answer "triggered".
  constexpr int window = 16;
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              const auto start = rill::event_stats();
                              std::vector<rill::user_event> ring(window);
                              rill::event oldest = rill::event::none();
                              for (int i = 0; i < reuse_events; ++i) {
                                auto& slot = ring[static_cast<std::size_t>(i % window)];
                                if (i >= window) slot.trigger();
                                slot = rill::user_event::create();
                                if (i == 0) oldest = slot;
                              }
                              for (auto& e : ring) e.trigger();
                              const auto end = rill::event_stats();
                              EXPECT_EQ(end.created - start.created, static_cast<std::uint64_t>(reuse_events));
                              EXPECT_LE(end.slots, static_cast<std::uint64_t>(window) + start.slots);
                              EXPECT_LE(end.peak_untriggered, static_cast<std::uint64_t>(window) + 1);
                              EXPECT_EQ(end.untriggered, 0u);
                              EXPECT_TRUE(oldest.has_triggered());
                              EXPECT_GT(ring[0].generation(), 1000u);  // slots really were reused
                              oldest.wait();
                              return 0;
                            }),
            0);
}

TEST(Generations, ManyWorkersCreateAndTriggerConcurrently) {
  constexpr int tasks = 64;
  constexpr int per_task = 5000;
  EXPECT_EQ(run_on_one_rank(2,
                            [] {
                              rill::latch done(tasks);
                              for (int t = 0; t < tasks; ++t) {
                                rill::spawn([&done] {
                                  for (int i = 0; i < per_task; ++i) {
                                    rill::user_event e = rill::user_event::create();
                                    rill::user_event f = rill::user_event::create();
                                    f.trigger(e);
                                    e.trigger();
                                    if (!f.has_triggered()) ADD_FAILURE() << "deferred trigger lost";
                                  }
                                  done.count_down();
                                });
                              }
                              done.wait();
                              const auto s = rill::event_stats();
                              EXPECT_EQ(s.untriggered, 0u);
                              // A slot is between "triggered" and "free" for a moment, so each
                              // worker may add one slot beyond the peak of untriggered events.
                              EXPECT_LE(s.slots, s.peak_untriggered + 2);
                              return 0;
                            }),
            0);
}

TEST(Poison, WaitThrowsTheOriginalCause) {
  EXPECT_EQ(
      run_on_one_rank(2,
                      [] {
                        rill::user_event e = rill::user_event::create();
                        rill::user_event later = rill::user_event::create();
                        later.trigger(e);  // inherits the poison
                        rill::event merged = rill::merge(e, rill::user_event::create());
                        std::atomic<int> caught{0};
                        rill::latch waited(8);
                        for (int i = 0; i < 8; ++i) {
                          rill::spawn([&, e] {
                            try {
                              e.wait();
                            } catch (const rill::poisoned_error& err) {
                              if (err.reason() == "disk on fire") caught++;
                            }
                            waited.count_down();
                          });
                        }
                        e.poison("disk on fire");
                        waited.wait();
                        EXPECT_EQ(caught.load(), 8);
                        for (rill::event x : {static_cast<rill::event>(e), static_cast<rill::event>(later), merged}) {
                          EXPECT_TRUE(x.has_triggered());
                          EXPECT_TRUE(x.poisoned());
                          try {
                            x.wait();
                            ADD_FAILURE() << "wait on a poisoned event returned";
                          } catch (const rill::poisoned_error& err) {
                            EXPECT_EQ(err.reason(), "disk on fire");
                            EXPECT_EQ(err.rank(), 0);
                            EXPECT_EQ(err.operation(), "user_event::poison");
                            const std::string what = err.what();
                            EXPECT_NE(what.find("disk on fire"), std::string::npos) << what;
                            EXPECT_NE(what.find("rank 0"), std::string::npos) << what;
                            EXPECT_NE(what.find("user_event::poison"), std::string::npos) << what;
                          }
                        }
                        // A merge with an input already known poisoned is poisoned at once.
                        rill::event m2 = rill::merge(rill::user_event::create(), e);
                        EXPECT_TRUE(m2.poisoned());
                        return 0;
                      }),
      0);
}

TEST(Poison, OldGenerationsStayPoisonedAfterReuseAndSlotsRetire) {
  constexpr int rounds = 20;
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              std::vector<rill::user_event> poisoned, fine;
                              for (int i = 0; i < rounds; ++i) {
                                rill::user_event p = rill::user_event::create();
                                p.poison("round " + std::to_string(i));
                                poisoned.push_back(p);
                                rill::user_event f = rill::user_event::create();
                                f.trigger();
                                fine.push_back(f);
                              }
                              // Slots were reused (the free list is last-in first-out) ...
                              std::set<std::uint32_t> slots;
                              for (auto& e : poisoned) slots.insert(e.slot());
                              EXPECT_LT(slots.size(), static_cast<std::size_t>(rounds));
                              // ... yet every poisoned generation still says so, with its own reason.
                              for (int i = 0; i < rounds; ++i) {
                                auto& p = poisoned[static_cast<std::size_t>(i)];
                                EXPECT_TRUE(p.poisoned()) << i;
                                EXPECT_FALSE(fine[static_cast<std::size_t>(i)].poisoned()) << i;
                                fine[static_cast<std::size_t>(i)].wait();
                                try {
                                  p.wait();
                                  ADD_FAILURE() << "round " << i << " not poisoned";
                                } catch (const rill::poisoned_error& err) {
                                  EXPECT_EQ(err.reason(), "round " + std::to_string(i));
                                }
                              }
                              EXPECT_GE(rill::event_stats().retired_slots, 1u);
                              return 0;
                            }),
            0);
}

int add_to(std::atomic<int>* target, int amount) {
  target->fetch_add(amount);
  return amount;
}

TEST(Spawn, RunsAfterItsPreconditionAndTriggersItsEvent) {
  std::atomic<int> sum{0};
  EXPECT_EQ(run_on_one_rank(2,
                            [&] {
                              rill::proc here = rill::proc::here();
                              EXPECT_EQ(here.rank(), 0);
                              rill::user_event go = rill::user_event::create();
                              rill::event a = here.spawn(rill::after(go), add_to, &sum, 5);
                              rill::event b = here.spawn(
                                  rill::after(a),
                                  [&sum](int x) {
                                    EXPECT_EQ(sum.load(), 5);  // a has run
                                    sum += x;
                                  },
                                  10);
                              for (int i = 0; i < 10; ++i) rill::yield();
                              EXPECT_EQ(sum.load(), 0);  // the precondition has not triggered
                              EXPECT_FALSE(a.has_triggered());
                              go.trigger();
                              b.wait();
                              EXPECT_TRUE(a.has_triggered());
                              EXPECT_EQ(sum.load(), 15);
                              // Without a precondition; a task's argument may itself be an event.
                              rill::event c = here.spawn([](rill::event e) { e.wait(); }, b);
                              c.wait();
                              return 0;
                            }),
            0);
}

TEST(Spawn, ManyTasksJoinedByAMerge) {
  constexpr int n = 10000;
  std::atomic<int> ran{0};
  EXPECT_EQ(run_on_one_rank(2,
                            [&] {
                              std::vector<rill::event> done;
                              for (int i = 0; i < n; ++i) done.push_back(rill::proc::here().spawn([&ran] { ran++; }));
                              rill::merge(done).wait();
                              return ran.load() == n ? 0 : 1;
                            }),
            0);
}

TEST(Spawn, ThrowingTaskPoisonsItsEventAndDependentsDoNotRun) {
  std::atomic<int> dependents_ran{0};
  EXPECT_EQ(run_on_one_rank(2,
                            [&] {
                              rill::proc p = rill::proc::here();
                              rill::event bad = p.spawn([] { throw std::out_of_range("index 7 of 3"); });
                              rill::event next = p.spawn(rill::after(bad), [&] { dependents_ran++; });
                              rill::event after_next = p.spawn(rill::after(next), [&] { dependents_ran++; });
                              for (rill::event e : {bad, next, after_next}) {
                                try {
                                  e.wait();
                                  ADD_FAILURE() << "a task after a failure completed normally";
                                } catch (const rill::poisoned_error& err) {
                                  EXPECT_EQ(err.operation(), "task");
                                  EXPECT_EQ(err.rank(), 0);
                                  const std::string what = err.what();
                                  EXPECT_NE(what.find("index 7 of 3"), std::string::npos) << what;
                                  EXPECT_NE(what.find("std::out_of_range"), std::string::npos) << what;
                                  EXPECT_NE(what.find("rank 0"), std::string::npos) << what;
                                }
                              }
                              EXPECT_EQ(dependents_ran.load(), 0);
                              return 0;
                            }),
            0);
}

}  // namespace
