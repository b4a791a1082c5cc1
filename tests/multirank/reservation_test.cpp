// Reservations between ranks: mutual exclusion under contention from every rank (a payload counter
// incremented non-atomically, with a check that no two holders overlap), ownership migrating with
// stale owner hints, local preference that does not starve other ranks, deferred releases across
// ranks, poisoned acquires and destroy. Rank 0's top-level task drives each test; a task that
// finds something wrong throws, which poisons its completion event, so the failure reaches rank
// 0's wait() with the rank and reason (also under mpirun).
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace rill_test {
namespace {

class reservations : public ::testing::TestWithParam<setup> {};

struct counter {
  std::uint64_t count;
  std::int32_t holder;  // rank + 1 of the task in the critical section, 0: none
  std::int32_t unused;
};

// Per reservation index: tasks of this process inside its critical section (all ranks under the
// local transport, this rank's under mpi).
std::array<std::atomic<int>, 64> inside{};

// The critical section: checks that nobody else is inside, increments the counter with a yield
// between read and write (another holder would lose an update), and leaves.
void critical(rill::reservation r, int k) {
  counter* p = r.payload<counter>();
  const int others = inside[static_cast<std::size_t>(k)].fetch_add(1);
  expect(others == 0 && p->holder == 0, "two holders of one reservation at once");
  p->holder = rill::rank_me() + 1;
  const std::uint64_t seen = p->count;
  rill::yield();
  expect(p->holder == rill::rank_me() + 1, "the payload changed under its holder");
  p->count = seen + 1;
  p->holder = 0;
  inside[static_cast<std::size_t>(k)].fetch_sub(1);
}

// `per_rank` reservations created on every rank (reservation i by rank i % n), handed to rank 0.
std::vector<rill::reservation> reservations_of_every_rank(int per_rank, std::size_t payload) {
  const int n = rill::rank_n();
  std::vector<rill::reservation> out(static_cast<std::size_t>(n * per_rank));
  rill::latch got(n * per_rank);
  for (int i = 0; i < n * per_rank; ++i) {
    rill::am::send(
        i % n,
        [](rill::reservation* slot, rill::latch* done, std::size_t bytes) {
          rill::am::send(
              rill::am::sender(),
              [](rill::reservation* s, rill::latch* d, rill::reservation r) {
                *s = r;
                d->count_down();
              },
              slot, done, rill::reservation::create(bytes));
        },
        &out[static_cast<std::size_t>(i)], &got, payload);
  }
  got.wait();
  return out;
}

// Sum of the counters, read by rank 0 while it holds each reservation.
std::uint64_t total_count(const std::vector<rill::reservation>& rs) {
  std::uint64_t total = 0;
  for (const auto& r : rs) {
    r.acquire().wait();
    total += r.payload<counter>()->count;
    r.release();
  }
  return total;
}

// Per reservation index: readers of this process inside (all ranks under local, this rank's under mpi).
std::array<std::atomic<int>, 64> readers_inside{};

// A reader's section: no writer inside, and the payload stays as it is while the reader yields.
void read_section(rill::reservation r, int k) {
  const counter* p = r.payload<counter>();
  readers_inside[static_cast<std::size_t>(k)].fetch_add(1);
  expect(inside[static_cast<std::size_t>(k)].load() == 0 && p->holder == 0, "a reader inside with a writer");
  const std::uint64_t seen = p->count;
  rill::yield();
  expect(p->count == seen && p->holder == 0, "the payload changed under a reader");
  readers_inside[static_cast<std::size_t>(k)].fetch_sub(1);
}

// A writer's section: critical(), with no reader inside either.
void write_section(rill::reservation r, int k) {
  expect(readers_inside[static_cast<std::size_t>(k)].load() == 0, "a writer inside with readers");
  critical(r, k);
  expect(readers_inside[static_cast<std::size_t>(k)].load() == 0, "a reader came in during a write");
}

constexpr int chains = 16;
constexpr int links = 40;

// One step of a rank's random stream (seeded with the test's seed and the rank).
std::uint64_t next_random(std::uint64_t& x) { return x = x * 6364136223846793005ull + 1442695040888963407ull; }
std::uint64_t stream_of(std::uint64_t seed, int rank) { return seed * static_cast<std::uint64_t>(rank + 1); }
// Whether a link of the stream is a writer's: all of them, or one in four when readers take part.
bool writes(std::uint64_t x, bool with_readers) { return !with_readers || (x >> 20) % 4 == 0; }

// On the calling rank: `chains` chains of `links` links; each link picks a reservation (and, with
// readers, a reader or a writer) from the rank's stream, acquires it after the previous link,
// runs the section there and releases.
void chains_here(std::vector<rill::reservation> all, std::uint64_t seed, bool with_readers) {
  std::uint64_t x = stream_of(seed, rill::rank_me());
  std::vector<rill::event> ends;
  for (int c = 0; c < chains; ++c) {
    rill::event prev = rill::event::none();
    for (int i = 0; i < links; ++i) {
      next_random(x);
      const int k = static_cast<int>((x >> 33) % all.size());
      const rill::reservation r = all[static_cast<std::size_t>(k)];
      const bool write = writes(x, with_readers);
      const rill::event granted = write ? r.acquire(prev) : r.acquire_shared(prev);
      const rill::event done =
          rill::proc::here().spawn(rill::after(granted), write ? write_section : read_section, r, k);
      r.release(done);
      prev = done;
    }
    ends.push_back(prev);
  }
  rill::merge(ends).wait();
}

// Runs chains_here on every rank; returns how many links of all ranks were writers.
std::uint64_t chains_on_every_rank(const std::vector<rill::reservation>& rs, std::uint64_t seed, bool with_readers) {
  std::vector<rill::event> drivers;
  std::uint64_t total = 0;
  for (int rank = 0; rank < rill::rank_n(); ++rank) {
    drivers.push_back(rill::proc(rank).spawn(chains_here, rs, seed, with_readers));
    std::uint64_t x = stream_of(seed, rank);
    for (int j = 0; j < chains * links; ++j) total += writes(next_random(x), with_readers) ? 1 : 0;
  }
  rill::merge(drivers).wait();
  return total;
}

TEST_P(reservations, mutual_exclusion_under_contention_from_every_rank) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const auto rs = reservations_of_every_rank(2, sizeof(counter));
                          const std::uint64_t writes = chains_on_every_rank(rs, 0x9E3779B97F4A7C15ull, false);
                          EXPECT_EQ(writes, static_cast<std::uint64_t>(rill::rank_n()) * chains * links);
                          EXPECT_EQ(total_count(rs), writes);
                        }),
            0);
}

// Readers (three links in four) and writers from every rank on one reservation per rank.
TEST_P(reservations, readers_share_writers_exclude_from_every_rank) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const auto rs = reservations_of_every_rank(1, sizeof(counter));
                          const std::uint64_t writes = chains_on_every_rank(rs, 0xC2B2AE3D27D4EB4Full, true);
                          EXPECT_GT(writes, 0u);
                          EXPECT_EQ(total_count(rs), writes);
                        }),
            0);
}

TEST_P(reservations, ownership_migrates_with_stale_owner_hints) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    const int n = rill::rank_n();
                    const int b = 1 % n, c = 2 % n, d = n >= 4 ? 3 : 0;  // A is rank 0
                    // Created on A (rank 0): A owns it and every other rank's hint is A.
                    const rill::reservation r = rill::reservation::create(sizeof(counter));
                    rill::user_event b_done = rill::user_event::create();
                    rill::user_event c_done = rill::user_event::create();
                    auto take = [](rill::reservation res, rill::event release_after, std::uint64_t expected) {
                      res.acquire().wait();
                      counter* p = res.payload<counter>();
                      expect(p->count == expected, "the payload did not travel with ownership");
                      p->count += 1;
                      res.release(release_after);
                    };
                    // A → B: B holds it until b_done.
                    rill::proc(b).spawn(take, r, rill::event(b_done), std::uint64_t{0}).wait();
                    // C asks A (its hint), which forwards to B, where C queues.
                    const std::uint64_t forwarded = rill::reservation_stats().requests_forwarded;
                    rill::event c_took = rill::proc(c).spawn(take, r, rill::event(c_done), std::uint64_t{1});
                    if (n >= 3) {
                      while (rill::reservation_stats().requests_forwarded == forwarded) rill::yield();
                    }
                    b_done.trigger();  // B → C, with the payload
                    c_took.wait();
                    // D's request goes to A (stale), then B (stale), then C, which owns it.
                    rill::event d_took = rill::proc(d).spawn(
                        [](rill::reservation res) {
                          res.acquire().wait();
                          counter* p = res.payload<counter>();
                          expect(p->count == 2, "the payload did not travel with ownership");
                          p->count += 1;
                          res.release();
                        },
                        r);
                    c_done.trigger();
                    d_took.wait();
                    if (n >= 3) {
                      EXPECT_GT(rill::reservation_stats().requests_forwarded, forwarded);
                      rill::proc(b)
                          .spawn([] { expect(rill::reservation_stats().transfers_sent >= 1, "B never handed on"); })
                          .wait();
                    }
                    r.acquire().wait();
                    EXPECT_EQ(r.payload<counter>()->count, 3u);
                    r.release();
                  }),
      0);
}

// An endless local chain on rank 0: each critical section, while it holds the reservation, queues
// the chain's next acquire (so a local waiter is always there when it is released), until `stop`.
// Tasks, not fibers that wait: a worker polls the network between tasks, while fibers woken by
// local events could keep it from polling.
struct endless {
  rill::reservation r;
  std::atomic<bool> stop{false};
  rill::latch ended{4};
};

void hold(endless* e) {
  if (e->stop.load()) {
    e->ended.count_down();
    return;
  }
  const rill::event granted = e->r.acquire();  // waits behind this section
  const rill::event done = rill::proc::here().spawn(rill::after(granted), [e] { hold(e); });
  e->r.release(done);
}

void start_endless(endless* e) {
  const rill::event granted = e->r.acquire();
  const rill::event done = rill::proc::here().spawn(rill::after(granted), [e] { hold(e); });
  e->r.release(done);
}

// Rank 0 keeps four local waiters queued all the time (local preference alone would serve them
// forever); every other rank's acquires must still be granted.
TEST_P(reservations, local_preference_does_not_starve_other_ranks) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          endless e;
                          e.r = rill::reservation::create(sizeof(counter));
                          for (int i = 0; i < 4; ++i) start_endless(&e);
                          std::vector<rill::event> others;
                          for (int rank = 1; rank < n; ++rank) {
                            others.push_back(rill::proc(rank).spawn(
                                [](rill::reservation res) {
                                  for (int i = 0; i < 3; ++i) {
                                    res.acquire().wait();
                                    res.payload<counter>()->count += 1;
                                    res.release();
                                  }
                                },
                                e.r));
                          }
                          rill::merge(others).wait();
                          e.stop.store(true);
                          e.ended.wait();
                          e.r.acquire().wait();
                          EXPECT_EQ(e.r.payload<counter>()->count, 3u * static_cast<std::uint64_t>(n - 1));
                          e.r.release();
                        }),
            0);
}

TEST_P(reservations, deferred_release_across_ranks) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          // Owned by the last rank, taken by rank 0, released once the last rank
                          // triggers a user event of rank 0.
                          const auto rs = reservations_of_every_rank(1, 0);
                          const rill::reservation r = rs.back();
                          const rill::user_event gate = rill::user_event::create();
                          r.acquire().wait();
                          r.release(gate);
                          rill::event later = rill::proc(n - 1).spawn(
                              [](rill::reservation res, rill::event g) {
                                res.acquire().wait();
                                expect(g.has_triggered(), "granted before the holder's deferred release");
                                res.release();
                              },
                              r, rill::event(gate));
                          rill::proc(n - 1).spawn([](rill::user_event g) { g.trigger(); }, gate).wait();
                          later.wait();
                        }),
            0);
}

// A handle made from bits, created by another rank: the creator answers that it never made it,
// the acquire is poisoned naming the handle, later calls are misuse, and the job goes on (the
// creator used to stop it as if a message were corrupt).
TEST_P(reservations, a_handle_its_creator_never_made_poisons_the_acquire_and_the_run_goes_on) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          if (n < 2) return;
                          auto from_bits = [n](std::uint64_t id) {
                            const struct {
                              std::uint32_t creator, bytes;
                              std::uint64_t id;
                            } bits{static_cast<std::uint32_t>(n - 1), 0, id};
                            rill::reservation r;
                            std::memcpy(static_cast<void*>(&r), &bits, sizeof r);
                            return r;
                          };
                          const rill::reservation bogus = from_bits(0x7654321);
                          try {
                            bogus.acquire().wait();
                            ADD_FAILURE() << "an acquire of a reservation no rank made was granted";
                          } catch (const rill::poisoned_error& e) {
                            const std::string what = e.what();
                            EXPECT_NE(what.find("rank " + std::to_string(n - 1) + " never created reservation (rank " +
                                                std::to_string(n - 1) + ", id 124076833)"),
                                      std::string::npos)
                                << what;
                          }
                          EXPECT_THROW(bogus.acquire(), rill::misuse_error);
                          from_bits(0x7654322).destroy();  // reported on this rank; nothing waits
                          // The creator is alive and serves real reservations.
                          const rill::reservation real = reservations_of_every_rank(1, 0).back();
                          real.acquire().wait();
                          real.release();
                        }),
            0);
}

TEST_P(reservations, poisoned_acquire_on_any_rank) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          const auto rs = reservations_of_every_rank(1, sizeof(counter));
                          const rill::reservation r = rs.back();
                          const rill::user_event bad = rill::user_event::create();
                          rill::event checked = rill::proc(1 % n).spawn(
                              [](rill::reservation res, rill::event pre) {
                                const rill::event g = res.acquire(pre);
                                const rill::event work = rill::proc::here().spawn(rill::after(g), [res] {
                                  res.payload<counter>()->count += 100;  // must not run
                                });
                                res.release(work);
                                try {
                                  g.wait();
                                } catch (const rill::poisoned_error& e) {
                                  expect(e.reason() == "upstream failed" && e.rank() == rill::rank_n() - 1,
                                         "the grant's poison is not its precondition's");
                                  return;
                                }
                                expect(false, "a poisoned acquire was granted");
                              },
                              r, rill::event(bad));
                          rill::proc(n - 1).spawn([](rill::user_event e) { e.poison("upstream failed"); }, bad);
                          checked.wait();
                          // The skipped acquire left nothing held: every rank can take it.
                          std::vector<rill::event> takes;
                          for (int rank = 0; rank < n; ++rank) {
                            takes.push_back(rill::proc(rank).spawn(
                                [](rill::reservation res) {
                                  res.acquire().wait();
                                  res.payload<counter>()->count += 1;
                                  res.release();
                                },
                                r));
                          }
                          rill::merge(takes).wait();
                          EXPECT_EQ(total_count({r}), static_cast<std::uint64_t>(n));
                        }),
            0);
}

TEST_P(reservations, acquire_after_destroy_is_poisoned_or_misuse) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          const auto rs = reservations_of_every_rank(1, 8);
                          const rill::reservation r = rs[static_cast<std::size_t>(1 % n)];
                          r.acquire().wait();  // ownership comes to rank 0
                          r.release();
                          r.destroy();  // rank 0 owns it and nobody holds it: destroyed now
                          EXPECT_THROW(r.acquire(), rill::misuse_error);
                          if (n == 1) return;
                          rill::proc(1)
                              .spawn(
                                  [](rill::reservation res) {
                                    try {
                                      res.acquire().wait();
                                    } catch (const rill::poisoned_error& e) {
                                      expect(e.operation() == "reservation::acquire",
                                             "the wrong operation in a destroyed grant's poison");
                                      // Now this rank knows: a new acquire is misuse.
                                      try {
                                        res.acquire();
                                      } catch (const rill::misuse_error&) {
                                        return;
                                      }
                                      expect(false, "acquire of a known destroyed reservation");
                                    }
                                    expect(false, "acquire of a destroyed reservation was granted");
                                  },
                                  r)
                              .wait();
                        }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, reservations, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
