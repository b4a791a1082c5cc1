// Events between ranks: remote waiters and pollers, triggers from non-owners, chains and merges of
// events owned by every rank, subscriptions racing triggers and generation reuse, poisoning across
// ranks, and remote spawns with remote preconditions. Rank 0's top-level task drives each test;
// a task that finds something wrong throws, which poisons its completion event, so the failure
// reaches rank 0's wait() with the rank and reason (also under mpirun, where ranks share nothing).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace rill_test {
namespace {

class events : public ::testing::TestWithParam<setup> {};

// Creates `per_rank` user events on every rank (each owned by its creator) and returns them to
// rank 0: event i is owned by rank i % ranks.
std::vector<rill::user_event> events_owned_by_every_rank(int per_rank) {
  const int n = rill::rank_n();
  std::vector<rill::user_event> out(static_cast<std::size_t>(n * per_rank));
  rill::latch got(n * per_rank);
  for (int i = 0; i < n * per_rank; ++i) {
    rill::am::send(
        i % n,
        [](rill::user_event* slot, rill::latch* done) {
          rill::am::send(
              rill::am::sender(),
              [](rill::user_event* s, rill::latch* d, rill::user_event e) {
                *s = e;
                d->count_down();
              },
              slot, done, rill::user_event::create());
        },
        &out[static_cast<std::size_t>(i)], &got);
  }
  got.wait();
  for (int i = 0; i < n * per_rank; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)].owner(), i % n);
  return out;
}

TEST_P(events, remote_waiters_and_pollers_see_a_trigger_from_a_non_owner) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          rill::user_event e = rill::user_event::create();
                          std::vector<rill::event> done;
                          for (int r = 0; r < n; ++r) {
                            // Several waiters per rank: only the first subscribes.
                            for (int k = 0; k < 4; ++k)
                              done.push_back(rill::proc(r).spawn([](rill::event ev) { ev.wait(); }, e));
                            done.push_back(rill::proc(r).spawn(
                                [](rill::event ev) {
                                  while (!ev.has_triggered()) rill::yield();
                                },
                                e));
                          }
                          rill::yield();
                          EXPECT_FALSE(e.has_triggered());
                          rill::proc(n - 1).spawn([](rill::user_event ev) { ev.trigger(); }, e);
                          rill::merge(done).wait();
                          EXPECT_TRUE(e.has_triggered());
                        }),
            0);
}

// A handle made from bits, owned by another rank: waiting on it fails with an error naming the
// handle (the owner answers, and goes on), where the owner used to stop the job as if a message
// were corrupt.
TEST_P(events, a_handle_another_rank_never_made_poisons_the_wait_and_the_run_goes_on) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          if (n < 2) return;
                          const rill::event bogus =
                              rill::event::from_parts(static_cast<std::uint32_t>(n - 1), 0x7654321, 7);
                          try {
                            bogus.wait();
                            ADD_FAILURE() << "a wait on a handle no rank made returned";
                          } catch (const rill::poisoned_error& e) {
                            const std::string what = e.what();
                            EXPECT_NE(what.find("has no event (rank " + std::to_string(n - 1) + ", slot 124076833"),
                                      std::string::npos)
                                << what;
                          }
                          EXPECT_TRUE(bogus.poisoned());
                          // The owner is alive and answers real events.
                          rill::user_event e = rill::user_event::create();
                          rill::proc(n - 1).spawn([](rill::user_event ev) { ev.trigger(); }, e);
                          e.wait();
                          rill::proc(n - 1).spawn([] {}).wait();
                        }),
            0);
}

// A trigger of a handle made from bits, owned by another rank: the owner reports it and drops it
// (it used to stop the job as a failed handler), the run goes on, and it ends with exit code 3 on
// the owner.
TEST_P(events, a_trigger_of_an_event_another_rank_never_made_is_reported_and_fails_the_run) {
  static std::atomic<bool> hosts_owner;
  hosts_owner = false;
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  if (rt.ranks() < 2) return;
  const int code = rt.run_spmd([] {
    const int ranks = rill::rank_n();
    if (rill::rank_me() == ranks - 1) hosts_owner = true;
    if (rill::rank_me() != 0) return 0;
    const rill::event bits = rill::event::from_parts(static_cast<std::uint32_t>(ranks - 1), 0x7654321, 9);
    rill::user_event bogus;
    std::memcpy(static_cast<void*>(&bogus), &bits, sizeof bogus);
    bogus.trigger();
    // The owner is alive, and its real events work.
    rill::proc(ranks - 1).spawn([] {}).wait();
    return 0;
  });
  EXPECT_EQ(code, hosts_owner ? rill::exit_fatal : 0);
}

TEST_P(events, chain_of_tasks_around_the_ranks) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          constexpr int hops = 300;
                          rill::user_event start = rill::user_event::create();
                          rill::event prev = start;
                          for (int i = 0; i < hops; ++i) {
                            prev = rill::proc(i % n).spawn(
                                rill::after(prev),
                                [](rill::event before, int rank) {
                                  expect(rill::rank_me() == rank, "task on the wrong rank");
                                  expect(before.has_triggered(), "task ran before its precondition");
                                },
                                prev, i % n);
                          }
                          EXPECT_FALSE(prev.has_triggered());
                          start.trigger();
                          prev.wait();
                        }),
            0);
}

TEST_P(events, deferred_triggers_chain_events_owned_by_every_rank) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          auto chain = events_owned_by_every_rank(20);
                          // chain[i] triggers after chain[i-1], the trigger issued from yet another rank.
                          for (std::size_t i = 1; i < chain.size(); ++i) {
                            rill::proc(static_cast<int>(i * 7 % static_cast<std::size_t>(n)))
                                .spawn([](rill::user_event e, rill::event before) { e.trigger(before); }, chain[i],
                                       static_cast<rill::event>(chain[i - 1]));
                          }
                          // Wait for the last from every rank, then start the chain from a non-owner.
                          std::vector<rill::event> seen;
                          for (int r = 0; r < n; ++r)
                            seen.push_back(rill::proc(r).spawn([](rill::event last) { last.wait(); },
                                                               static_cast<rill::event>(chain.back())));
                          EXPECT_FALSE(chain.back().has_triggered());
                          rill::proc(n - 1).spawn([](rill::user_event e) { e.trigger(); }, chain.front());
                          rill::merge(seen).wait();
                          // Rank 0 learns of each one from its owner (has_triggered() may still be
                          // false for a slot it never subscribed to), and none is poisoned.
                          for (auto& e : chain) e.wait();
                        }),
            0);
}

TEST_P(events, merge_of_remote_events_waits_for_the_last_input) {
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [] {
            const int n = rill::rank_n();
            auto inputs = events_owned_by_every_rank(8);
            std::vector<rill::event> as_events(inputs.begin(), inputs.end());
            rill::event here = rill::merge(as_events);
            // The same merge, made and waited for on every rank.
            std::vector<rill::event> elsewhere;
            for (int r = 0; r < n; ++r)
              elsewhere.push_back(
                  rill::proc(r).spawn([](std::vector<rill::event> in) { rill::merge(in).wait(); }, as_events));
            // Trigger all inputs but the last, each from a rank that does not own it.
            std::vector<rill::event> triggered;
            for (std::size_t i = 0; i + 1 < inputs.size(); ++i) {
              const int by =
                  static_cast<int>((static_cast<std::size_t>(inputs[i].owner()) + 1) % static_cast<std::size_t>(n));
              triggered.push_back(rill::proc(by).spawn([](rill::user_event e) { e.trigger(); }, inputs[i]));
            }
            rill::merge(triggered).wait();
            EXPECT_FALSE(here.has_triggered());  // the last input is still untriggered
            rill::proc((inputs.back().owner() + 1) % n).spawn([](rill::user_event e) { e.trigger(); }, inputs.back());
            here.wait();
            rill::merge(elsewhere).wait();
          }),
      0);
}

TEST_P(events, subscriptions_race_triggers_and_generations_are_reused) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          constexpr int rounds = 400;
                          // A triggered generation whose slot is already reused: a late subscriber
                          // to the old generation is answered at once; the new one still waits.
                          // (Made before anything else runs on this rank, so the free list hands
                          // the slot just freed straight back.)
                          std::vector<std::pair<rill::user_event, rill::user_event>> reused;
                          for (int i = 0; i < rounds / 4; ++i) {
                            rill::user_event old_gen = rill::user_event::create();
                            old_gen.trigger();
                            rill::user_event new_gen = rill::user_event::create();
                            EXPECT_EQ(new_gen.slot(), old_gen.slot());
                            EXPECT_GT(new_gen.generation(), old_gen.generation());
                            reused.emplace_back(old_gen, new_gen);
                          }
                          std::vector<rill::event> late;
                          for (std::size_t i = 0; i < reused.size(); ++i) {
                            late.push_back(rill::proc(static_cast<int>((i + 1) % static_cast<std::size_t>(n)))
                                               .spawn(
                                                   [](rill::event o, rill::event nw) {
                                                     o.wait();
                                                     expect(o.has_triggered(), "old generation not triggered");
                                                     expect(!nw.poisoned(), "new generation poisoned");
                                                     nw.wait();
                                                   },
                                                   static_cast<rill::event>(reused[i].first),
                                                   static_cast<rill::event>(reused[i].second)));
                          }
                          for (auto& [o, nw] : reused) nw.trigger();
                          rill::merge(late).wait();

                          std::vector<rill::user_event> evs;
                          for (int i = 0; i < rounds; ++i) evs.push_back(rill::user_event::create());
                          std::vector<rill::event> done;
                          // One poller on each of two ranks (two fibers that only yield would take
                          // turns without letting the worker poll the network, and a spinning
                          // poller per rank would crowd out the ranks that trigger).
                          for (int r : std::set<int>{n - 1, n / 2}) {
                            done.push_back(rill::proc(r).spawn(
                                [](const std::vector<rill::event>& all) {
                                  for (const auto& ev : all)
                                    while (!ev.has_triggered()) rill::yield();
                                },
                                std::vector<rill::event>(evs.begin(), evs.end())));
                          }
                          for (int i = 0; i < rounds; ++i) {
                            rill::user_event e = evs[static_cast<std::size_t>(i)];
                            // A waiter and a triggerer on other ranks, in no particular order: the
                            // subscription may reach the owner before or after the trigger.
                            done.push_back(rill::proc((i + 1) % n).spawn([](rill::event ev) { ev.wait(); }, e));
                            rill::proc((i + 2) % n).spawn([](rill::user_event ev) { ev.trigger(); }, e);
                          }
                          rill::merge(done).wait();
                        }),
            0);
}

TEST_P(events, generation_reuse_under_load_keeps_every_table_small) {
  constexpr int window = 8;
  constexpr int per_rank = 20000;
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  const int code = rt.run_spmd([]() -> int {
    const int n = rill::rank_n();
    const int next = (rill::rank_me() + 1) % n;
    std::vector<rill::event> ring(window);
    for (int i = 0; i < per_rank; ++i) {
      auto& slot = ring[static_cast<std::size_t>(i % window)];
      slot.wait();
      rill::user_event e = rill::user_event::create();
      // The next rank waits for e; this rank triggers it.
      slot = rill::proc(next).spawn(
          rill::after(e), [](rill::event ev) { expect(ev.has_triggered(), "ran before its precondition"); }, e);
      e.trigger();
    }
    try {
      rill::merge(ring).wait();
    } catch (const rill::poisoned_error& err) {
      ADD_FAILURE() << err.what();
      return 1;
    }
    const auto s = rill::event_stats();
    // At most `window` completion events and `window` user events are untriggered at once.
    EXPECT_GE(s.created, static_cast<std::uint64_t>(2 * per_rank));
    EXPECT_LE(s.slots, static_cast<std::uint64_t>(2 * window + 2)) << "rank " << rill::rank_me();
    EXPECT_LE(s.remote_slots, static_cast<std::uint64_t>(2 * (2 * window + 2))) << "rank " << rill::rank_me();
    return s.slots <= 2 * window + 2 ? 0 : 2;
  });
  EXPECT_EQ(code, 0);
}

TEST_P(events, poison_crosses_ranks_with_its_original_cause) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          auto owned = events_owned_by_every_rank(1);
                          rill::user_event p = owned[static_cast<std::size_t>(1 % n)];
                          // Dependents on other ranks must not run: if one did, it would poison its
                          // event with another reason.
                          rill::event t1 = rill::proc(2 % n).spawn(rill::after(p),
                                                                   [] { throw std::runtime_error("dependent ran"); });
                          rill::event t2 = rill::proc(3 % n).spawn(rill::after(t1),
                                                                   [] { throw std::runtime_error("dependent ran"); });
                          rill::user_event never = rill::user_event::create();
                          rill::event m = rill::merge(t2, never);  // poisoned without waiting for `never`
                          // A waiter on another rank that expects the poison.
                          rill::event checker = rill::proc(3 % n).spawn(
                              [](rill::event ev) {
                                try {
                                  ev.wait();
                                } catch (const rill::poisoned_error& e) {
                                  expect(e.reason() == "disk on fire", "wrong poison reason");
                                  return;
                                }
                                expect(false, "wait on a poisoned event returned");
                              },
                              t2);
                          const int poisoner = 2 % n;
                          rill::proc(poisoner).spawn([](rill::user_event e) { e.poison("disk on fire"); }, p);
                          for (rill::event e : {static_cast<rill::event>(p), t1, t2, m}) {
                            try {
                              e.wait();
                              ADD_FAILURE() << "wait on a poisoned event returned";
                            } catch (const rill::poisoned_error& err) {
                              EXPECT_EQ(err.reason(), "disk on fire");
                              EXPECT_EQ(err.rank(), poisoner);
                              EXPECT_EQ(err.operation(), "user_event::poison");
                            }
                          }
                          checker.wait();
                          never.trigger();
                          // A task that throws on another rank.
                          rill::event boom = rill::proc(n - 1).spawn([] { throw std::runtime_error("remote boom"); });
                          try {
                            boom.wait();
                            ADD_FAILURE() << "wait on a failed task returned";
                          } catch (const rill::poisoned_error& err) {
                            EXPECT_EQ(err.rank(), n - 1);
                            EXPECT_EQ(err.operation(), "task");
                            EXPECT_NE(std::string(err.what()).find("remote boom"), std::string::npos) << err.what();
                          }
                        }),
            0);
}

TEST_P(events, remote_spawn_waits_for_a_remote_precondition_on_the_target) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          auto owned = events_owned_by_every_rank(4);
                          std::vector<rill::event> done;
                          for (std::size_t i = 0; i < owned.size(); ++i) {
                            const int target = static_cast<int>((i + 2) % static_cast<std::size_t>(n));
                            done.push_back(rill::proc(target).spawn(
                                rill::after(owned[i]),
                                [](rill::event pre, int where) {
                                  expect(rill::rank_me() == where, "task on the wrong rank");
                                  expect(pre.has_triggered(), "task ran before its remote precondition");
                                },
                                static_cast<rill::event>(owned[i]), target));
                          }
                          rill::yield();
                          for (auto& d : done) EXPECT_FALSE(d.has_triggered());
                          // Trigger from rank 0, which owns only some of them.
                          for (auto& e : owned) e.trigger();
                          rill::merge(done).wait();
                        }),
            0);
}

TEST_P(events, a_rank_that_triggers_a_generation_still_learns_the_earlier_ones) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          constexpr int rounds = 200;
                          std::vector<rill::event> done;
                          for (int i = 0; i < rounds; ++i) {
                            // Usually the same slot: `fresh` is the generation after `old`.
                            rill::user_event old = rill::user_event::create();
                            old.trigger();
                            rill::user_event fresh = rill::user_event::create();
                            if (i % 2 == 1) {
                              // Nothing pending for `old` at the trigger: the owner leaves this rank
                              // out of the notifications, so waiting for `old` must subscribe anew.
                              done.push_back(rill::proc(1 % n).spawn(
                                  [](rill::event o, rill::user_event f) {
                                    (void)f.has_triggered();
                                    f.trigger();
                                    o.wait();
                                  },
                                  static_cast<rill::event>(old), fresh));
                              continue;
                            }
                            done.push_back(rill::proc(1 % n).spawn(
                                [](rill::event o, rill::user_event f) {
                                  (void)f.has_triggered();  // subscribes to f's generation
                                  // A waiter for the earlier generation, which subscribes to it on
                                  // its own; the answer may come after the trigger below.
                                  rill::event ran = rill::proc::here().spawn(rill::after(o), [] {});
                                  f.trigger();  // from a non-owner, with that waiter pending
                                  ran.wait();
                                  o.wait();  // and a waiter that comes after the trigger
                                  f.wait();
                                },
                                static_cast<rill::event>(old), fresh));
                          }
                          rill::merge(done).wait();
                        }),
            0);
}

// A rank that subscribed to a generation and then waits for an earlier one of the same slot (the
// task waiting for it came second: reordered messages, or another worker) must ask about the
// earlier one itself. The owner answers the later subscription only when that generation
// triggers, which in a dependency graph may wait for the earlier one's waiter: counting on that
// answer hung (launches, 2 ranks with 2 workers and chaos). Here the later generation triggers
// only once the check has given up.
TEST_P(events, a_waiter_for_an_earlier_generation_does_not_wait_for_the_later_one) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          if (n < 2) return;
                          // Two generations of one slot (a freed slot is usually the next one
                          // taken; other events made meanwhile may take it first).
                          rill::user_event old_gen = rill::user_event::create();
                          old_gen.trigger();
                          rill::user_event new_gen = rill::user_event::create();
                          for (int tries = 0; new_gen.slot() != old_gen.slot() && tries < 64; ++tries) {
                            old_gen = new_gen;
                            old_gen.trigger();
                            new_gen = rill::user_event::create();
                          }
                          ASSERT_EQ(new_gen.slot(), old_gen.slot());
                          rill::proc(1)
                              .spawn(
                                  [](rill::event o, rill::user_event nw) {
                                    // The later generation's waiter first: it subscribes to it.
                                    rill::event later = rill::proc::here().spawn(rill::after(nw), [] {});
                                    std::atomic<bool> ran{false};
                                    rill::event earlier = rill::proc::here().spawn(
                                        rill::after(o), [](std::atomic<bool>* r) { r->store(true); }, &ran);
                                    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                                    while (!ran.load() && std::chrono::steady_clock::now() < give_up) rill::yield();
                                    const bool woken = ran.load();
                                    nw.trigger();  // (what the earlier waiter's task would have done)
                                    rill::merge(std::vector<rill::event>{earlier, later}).wait();
                                    expect(woken, "a waiter for the earlier generation waited for the later one");
                                  },
                                  static_cast<rill::event>(old_gen), new_gen)
                              .wait();
                        }),
            0);
}

TEST_P(events, spawn_misuse_is_reported_before_anything_is_created) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          const auto before = rill::event_stats().created;
                          EXPECT_THROW(rill::proc(n).spawn([] {}), rill::misuse_error);
                          EXPECT_THROW(rill::proc(-1).spawn([] {}), rill::misuse_error);
                          std::string text = "not trivially copyable";
                          auto captures_a_string = [text] { (void)text.size(); };
                          if (n > 1) {
                            EXPECT_THROW(rill::proc(1).spawn(captures_a_string), rill::misuse_error);
                          }
                          EXPECT_EQ(rill::event_stats().created, before);
                          // On the calling rank any callable works.
                          rill::proc::here().spawn(captures_a_string).wait();
                        }),
            0);
}

// Each rank's event counters, gathered on rank 0 with plain active messages (no events involved,
// so gathering adds no protocol messages).
std::vector<rill::event_counts> gather_event_counts() {
  const int n = rill::rank_n();
  std::vector<rill::event_counts> out(static_cast<std::size_t>(n));
  rill::latch got(n);
  for (int r = 0; r < n; ++r) {
    rill::am::send(
        r,
        [](rill::event_counts* slot, rill::latch* done) {
          rill::am::send(
              rill::am::sender(),
              [](rill::event_counts* s, rill::latch* d, rill::event_counts c) {
                *s = c;
                d->count_down();
              },
              slot, done, rill::event_stats());
        },
        &out[static_cast<std::size_t>(r)], &got);
  }
  got.wait();
  return out;
}

TEST_P(events, one_subscription_per_rank_and_at_most_2n_minus_2_messages) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          constexpr int waiters_per_rank = 16;
                          const int owner = 0;
                          const int trigger_rank = n - 1;
                          rill::user_event e = rill::user_event::create();
                          std::vector<int> waiting;
                          for (int r = 0; r < n; ++r)
                            if (r != owner && r != trigger_rank) waiting.push_back(r);
                          const auto before = gather_event_counts();
                          // Many waiters on each waiting rank, all registered before the trigger.
                          rill::latch registered(static_cast<std::ptrdiff_t>(waiting.size()));
                          rill::latch fired(static_cast<std::ptrdiff_t>(waiting.size()) * waiters_per_rank);
                          for (int r : waiting) {
                            rill::am::send(
                                r,
                                [](rill::event ev, rill::latch* reg, rill::latch* fire) {
                                  for (int k = 0; k < waiters_per_rank; ++k) {
                                    rill::proc::here().spawn(
                                        rill::after(ev),
                                        [](rill::latch* f) {
                                          rill::am::send(
                                              0, [](rill::latch* l) { l->count_down(); }, f);
                                        },
                                        fire);
                                  }
                                  rill::am::send(
                                      0, [](rill::latch* l) { l->count_down(); }, reg);
                                },
                                static_cast<rill::event>(e), &registered, &fired);
                          }
                          registered.wait();
                          rill::am::send(
                              trigger_rank, [](rill::user_event ev) { ev.trigger(); }, e);
                          fired.wait();
                          e.wait();  // the owner has the trigger (a local wait: no messages)
                          const auto after = gather_event_counts();
                          std::uint64_t total = 0;
                          for (int r = 0; r < n; ++r) {
                            const auto& b = before[static_cast<std::size_t>(r)];
                            const auto& a = after[static_cast<std::size_t>(r)];
                            const std::uint64_t subs = a.subscriptions_sent - b.subscriptions_sent;
                            const std::uint64_t notes = a.notifications_sent - b.notifications_sent;
                            const std::uint64_t trigs = a.triggers_sent - b.triggers_sent;
                            const bool waits = r != owner && r != trigger_rank;
                            EXPECT_EQ(subs, waits ? 1u : 0u) << "subscriptions from rank " << r;
                            EXPECT_EQ(notes, r == owner ? waiting.size() : 0u) << "notifications from rank " << r;
                            EXPECT_EQ(trigs, (r == trigger_rank && r != owner) ? 1u : 0u) << "triggers from rank " << r;
                            total += subs + notes + trigs;
                          }
                          // Realm's bound for N interested ranks (the waiting ones, the owner and the
                          // rank that triggers).
                          const std::uint64_t interested = waiting.size() + (trigger_rank != owner ? 2u : 1u);
                          EXPECT_LE(total, 2 * interested - 2);
                        }),
            0);
}

// A thread that is not a Rill worker (here one a task started) waits on, polls, triggers, poisons,
// merges and creates events; each call runs as a task on a rank of its process and blocks only
// the thread.
TEST_P(events, a_thread_outside_rill_waits_triggers_and_creates_events) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          auto owned = events_owned_by_every_rank(3);  // event i is owned by rank i % n
                          const rill::user_event remote = owned[static_cast<std::size_t>(n - 1)];
                          const rill::user_event from_thread = owned[static_cast<std::size_t>(n + 1 % n)];
                          const rill::user_event bad = owned[static_cast<std::size_t>(2 * n + (n - 1))];
                          // `remote` triggers only after the thread has triggered `from_thread`, so
                          // the thread's wait must really wait.
                          rill::proc(n - 1).spawn(
                              rill::after(from_thread), [](rill::user_event e) { e.trigger(); }, remote);
                          rill::proc(n - 1).spawn([](rill::user_event e) { e.poison("bad sector"); }, bad);
                          const rill::user_event thread_done = rill::user_event::create();
                          struct seen {
                            bool remote_before = true, remote_after = false, merged = false, mine = false;
                            bool poisoned = false;
                            std::string reason, error;
                          } got;
                          std::thread outside([&] {
                            try {
                              got.remote_before = remote.has_triggered();
                              from_thread.trigger();
                              remote.wait();
                              got.remote_after = remote.has_triggered();
                              rill::merge(remote, from_thread).wait();
                              got.merged = true;
                              try {
                                bad.wait();
                              } catch (const rill::poisoned_error& e) {
                                got.reason = e.reason();
                              }
                              got.poisoned = bad.poisoned();
                              const rill::user_event mine = rill::user_event::create();
                              mine.trigger();
                              got.mine = mine.has_triggered();
                            } catch (const std::exception& e) {
                              got.error = e.what();
                            }
                            thread_done.trigger();
                          });
                          thread_done.wait();  // suspends this task's fiber, not its worker
                          outside.join();
                          EXPECT_EQ(got.error, "");
                          EXPECT_FALSE(got.remote_before);
                          EXPECT_TRUE(got.remote_after);
                          EXPECT_TRUE(got.merged);
                          EXPECT_EQ(got.reason, "bad sector");
                          EXPECT_TRUE(got.poisoned);
                          EXPECT_TRUE(got.mine);
                        }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, events, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
