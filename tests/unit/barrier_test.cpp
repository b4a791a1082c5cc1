// Phase barriers on one rank (local transport): arrivals before and after waiters, later phases
// before earlier ones complete, reductions against the sequential answer, deferred and poisoned
// arrivals, and misuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "one_rank.hpp"
#include "rill/rill.hpp"

namespace {

using rill_test::run_on_one_rank;

TEST(Barrier, HandleIsASmallValueAndAnEvent) {
  static_assert(std::is_trivially_copyable_v<rill::barrier>);
  static_assert(sizeof(rill::barrier) == 16);
  static_assert(std::is_convertible_v<rill::barrier, rill::event>);
  EXPECT_TRUE(rill::barrier().is_none());
}

TEST(Barrier, ArrivalsBeforeTheWaiterTriggerThePhase) {
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              rill::barrier b = rill::barrier::create(3);
                              EXPECT_FALSE(b.has_triggered());
                              b.arrive();
                              b.arrive();
                              EXPECT_FALSE(b.has_triggered());
                              b.arrive();
                              EXPECT_TRUE(b.has_triggered());
                              b.wait();
                              // The next phase is a new, untriggered event of the same barrier.
                              rill::barrier next = b.advance();
                              EXPECT_EQ(next.id(), b.id());
                              EXPECT_EQ(next.owner(), b.owner());
                              EXPECT_EQ(next.generation(), b.generation() + 1);
                              EXPECT_FALSE(next.has_triggered());
                              next.arrive(3);
                              next.wait();
                            }),
            0);
}

TEST(Barrier, WaitersOnManyWorkersWakeWhenTheLastArrives) {
  EXPECT_EQ(run_on_one_rank(4,
                            [] {
                              constexpr int tasks = 200;
                              rill::barrier b = rill::barrier::create(tasks);
                              std::atomic<int> woke{0};
                              std::vector<rill::event> done;
                              for (int i = 0; i < tasks; ++i) {
                                done.push_back(rill::proc::here().spawn([b, &woke] {
                                  b.arrive();
                                  b.wait();  // every task waits for all the others' arrivals
                                  ++woke;
                                }));
                              }
                              rill::merge(done).wait();
                              EXPECT_EQ(woke.load(), tasks);
                            }),
            0);
}

TEST(Barrier, ArrivalsAtLaterPhasesWaitForTheEarlierOnes) {
  EXPECT_EQ(run_on_one_rank(2,
                            [] {
                              rill::barrier b0 = rill::barrier::create(2);
                              rill::barrier b1 = b0.advance();
                              rill::barrier b2 = b1.advance();
                              // Waiters for a phase that has not begun.
                              rill::event w2 = rill::proc::here().spawn([b2] { b2.wait(); });
                              b2.arrive(2);
                              b1.arrive(2);
                              EXPECT_FALSE(b2.has_triggered());  // complete, but phases go in order
                              EXPECT_FALSE(b1.has_triggered());
                              b0.arrive();
                              EXPECT_FALSE(b0.has_triggered());
                              b0.arrive();
                              EXPECT_TRUE(b0.has_triggered());
                              EXPECT_TRUE(b1.has_triggered());
                              EXPECT_TRUE(b2.has_triggered());
                              w2.wait();
                              EXPECT_FALSE(b2.advance().has_triggered());
                            }),
            0);
}

TEST(Barrier, ReductionsMatchTheSequentialAnswer) {
  EXPECT_EQ(run_on_one_rank(3,
                            [] {
                              constexpr int n = 100;
                              constexpr int phases = 5;
                              rill::barrier sum = rill::barrier::create<rill::reduce::sum<long>>(n);
                              rill::barrier max = rill::barrier::create<rill::reduce::max<double>>(n);
                              // A callable: the sequence's minimum, starting from a given value.
                              rill::barrier mn = rill::barrier::create(
                                  n, [](long a, long b) { return std::min(a, b); }, long{1000000});
                              std::vector<rill::event> done;
                              for (int i = 0; i < n; ++i) {
                                done.push_back(rill::proc::here().spawn([=] {
                                  rill::barrier s = sum, m = max, q = mn;
                                  for (int p = 0; p < phases; ++p) {
                                    s.arrive(1, rill::event::none(), long{i * (p + 1)});
                                    m.arrive(1, rill::event::none(), double(i % 37) + p);
                                    q.arrive(1, rill::event::none(), long{i + p * 10});
                                    s = s.advance();
                                    m = m.advance();
                                    q = q.advance();
                                  }
                                }));
                              }
                              rill::merge(done).wait();
                              rill::barrier s = sum, m = max, q = mn;
                              for (int p = 0; p < phases; ++p) {
                                long want_sum = 0;
                                double want_max = -1;
                                long want_min = 1000000;
                                for (int i = 0; i < n; ++i) {
                                  want_sum += long{i * (p + 1)};
                                  want_max = std::max(want_max, double(i % 37) + p);
                                  want_min = std::min(want_min, long{i + p * 10});
                                }
                                EXPECT_EQ(s.result<long>(), want_sum);
                                EXPECT_EQ(m.result<double>(), want_max);
                                EXPECT_EQ(q.result<long>(), want_min);
                                long via_event = 0;
                                s.get_result(&via_event).wait();
                                EXPECT_EQ(via_event, want_sum);
                                s = s.advance();
                                m = m.advance();
                                q = q.advance();
                              }
                            }),
            0);
}

TEST(Barrier, DeferredArrivalsCountOnceTheirPreconditionTriggers) {
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              rill::barrier b = rill::barrier::create<rill::reduce::sum<int>>(3);
                              rill::user_event go = rill::user_event::create();
                              b.arrive(2, go, 20);
                              b.arrive(1, rill::event::none(), 1);
                              EXPECT_FALSE(b.has_triggered());
                              go.trigger();
                              EXPECT_TRUE(b.has_triggered());
                              EXPECT_EQ(b.result<int>(), 21);
                              // A spawned task's completion as the precondition.
                              rill::barrier next = b.advance();
                              rill::event task = rill::proc::here().spawn([] {});
                              next.arrive(3, task, 5);
                              EXPECT_EQ(next.result<int>(), 5);
                            }),
            0);
}

TEST(Barrier, APoisonedArrivalPoisonsItsPhaseOnly) {
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              rill::barrier b = rill::barrier::create<rill::reduce::sum<int>>(2);
                              rill::user_event bad = rill::user_event::create();
                              b.arrive(1, bad, 1);
                              bad.poison("the input was bad");
                              // Poisoned at once, before the other arrival.
                              EXPECT_TRUE(b.has_triggered());
                              EXPECT_TRUE(b.poisoned());
                              try {
                                b.wait();
                                ADD_FAILURE() << "wait on a poisoned phase returned";
                              } catch (const rill::poisoned_error& e) {
                                EXPECT_EQ(e.reason(), "the input was bad");
                                EXPECT_EQ(e.operation(), "user_event::poison");
                              }
                              EXPECT_THROW(b.result<int>(), rill::poisoned_error);
                              // The phase still takes its remaining arrival; the next phase is clean.
                              b.arrive(1, rill::event::none(), 2);
                              rill::barrier next = b.advance();
                              next.arrive(1, rill::event::none(), 3);
                              next.arrive(1, rill::event::none(), 4);
                              EXPECT_FALSE(next.poisoned());
                              EXPECT_EQ(next.result<int>(), 7);
                              // A poisoned precondition already known poisons the phase too.
                              rill::barrier third = next.advance();
                              third.arrive(2, bad);
                              EXPECT_TRUE(third.poisoned());
                            }),
            0);
}

TEST(Barrier, MisuseIsAClearError) {
  EXPECT_EQ(
      run_on_one_rank(1,
                      [] {
                        rill::barrier b = rill::barrier::create(2);
                        b.arrive();
                        try {
                          b.arrive(2);
                          ADD_FAILURE() << "too many arrivals accepted";
                        } catch (const rill::misuse_error& e) {
                          EXPECT_NE(std::string(e.what()).find("too many arrivals"), std::string::npos) << e.what();
                        }
                        b.arrive();
                        EXPECT_TRUE(b.has_triggered());
                        try {
                          b.arrive();  // the phase is complete
                          ADD_FAILURE() << "an arrival at a complete phase was accepted";
                        } catch (const rill::misuse_error& e) {
                          EXPECT_NE(std::string(e.what()).find("too many arrivals"), std::string::npos) << e.what();
                        }
                        EXPECT_THROW(b.advance().arrive(0), rill::misuse_error);
                        EXPECT_THROW(rill::barrier().arrive(), rill::misuse_error);
                        EXPECT_THROW(rill::barrier::create(0), rill::misuse_error);
                        // Values: none on a plain barrier, the right type on a reducing one.
                        EXPECT_THROW(b.advance().arrive(1, rill::event::none(), 5), rill::misuse_error);
                        rill::barrier r = rill::barrier::create<rill::reduce::sum<long>>(1);
                        EXPECT_THROW(r.arrive(1, rill::event::none(), 5), rill::misuse_error);  // int
                        r.arrive(1, rill::event::none(), 5L);
                        EXPECT_EQ(r.result<long>(), 5);
                        EXPECT_THROW(r.result<int>(), rill::poisoned_error);
                        EXPECT_THROW(b.result<long>(), rill::poisoned_error);  // reduces nothing
                      }),
      0);
}

TEST(Barrier, TooManyDeferredArrivalsStopTheProgram) {
  EXPECT_EXIT(run_on_one_rank(1,
                              [] {
                                rill::barrier b = rill::barrier::create(1);
                                rill::user_event go = rill::user_event::create();
                                b.arrive(1, go);
                                b.arrive(1, go);
                                go.trigger();
                              }),
              ::testing::ExitedWithCode(rill::exit_fatal), "too many arrivals");
}

TEST(Barrier, OldResultsAreDroppedWithAClearReason) {
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              rill::barrier first = rill::barrier::create<rill::reduce::sum<int>>(1);
                              rill::barrier b = first;
                              for (std::size_t p = 0; p < rill::barrier::kept_results + 1; ++p) {
                                b.arrive(1, rill::event::none(), static_cast<int>(p));
                                b = b.advance();
                              }
                              try {
                                (void)first.result<int>();
                                ADD_FAILURE() << "a result older than kept_results was given";
                              } catch (const rill::poisoned_error& e) {
                                EXPECT_NE(e.reason().find("no longer kept"), std::string::npos) << e.what();
                              }
                              rill::barrier last = first;
                              for (std::size_t p = 0; p < rill::barrier::kept_results; ++p) last = last.advance();
                              EXPECT_EQ(last.result<int>(), static_cast<int>(rill::barrier::kept_results));
                            }),
            0);
}

TEST(Barrier, EventStorageStaysOneSlotPerBarrier) {
  EXPECT_EQ(run_on_one_rank(1,
                            [] {
                              const auto before = rill::event_stats();
                              rill::barrier b = rill::barrier::create(1);
                              for (int p = 0; p < 10000; ++p) {
                                b.arrive();
                                b = b.advance();
                              }
                              const auto after = rill::event_stats();
                              EXPECT_LE(after.slots, before.slots + 1);
                              EXPECT_EQ(after.untriggered, before.untriggered + 1);
                            }),
            0);
}

}  // namespace
