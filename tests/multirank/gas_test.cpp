// The active global address space (rill/gas.hpp, rill/parcel.hpp): each distribution's placement
// of blocks, data written and read from every rank, blocks moving under concurrent updates with
// exact totals, the translation cache learning where blocks went, parcels with continuations, and
// every bad address -- freed (the generation tag), unknown, out of range.
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "global_harness.hpp"
#include "harness.hpp"
#include "rill/completion_counter.hpp"
#include "rill/finish.hpp"
#include "rill/gas.hpp"
#include "rill/lco.hpp"
#include "rill/parcel.hpp"
#include "rill/task.hpp"

namespace rill_test {
namespace {

class gas : public ::testing::TestWithParam<setup> {};

using rill::gaddr;

int reversed(std::uint64_t b, std::uint64_t /*blocks*/, int ranks) {
  return ranks - 1 - static_cast<int>(b % static_cast<std::uint64_t>(ranks));
}

void increment(std::uint64_t& x) { x = x + 1; }

gaddr word(gaddr base, std::uint64_t i) { return base + static_cast<std::int64_t>(i * sizeof(std::uint64_t)); }

// The rank that ran a forwarded operation teaches its origin's cache by a message of its own, which
// may arrive after the operation's result. The calling rank's statistics once `learned` holds; the
// bound only turns a lesson that never comes into a failure instead of a hang.
template <class Pred>
rill::gas_stats stats_once(const Pred& learned) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  rill::gas_stats s = rill::gas::stats();
  while (!learned(s) && std::chrono::steady_clock::now() < give_up) {
    rill::yield();
    s = rill::gas::stats();
  }
  return s;
}

TEST_P(gas, each_distribution_places_blocks_where_its_definition_says) {
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [] {
            const int ranks = rill::rank_n(), last = ranks - 1;
            struct case_of {
              const char* name;
              rill::distribution d;
              std::uint64_t block;                    // bytes per block
              int (*model)(std::uint64_t, int, int);  // block, ranks, last -> rank
              bool home_is_owner;
            };
            const case_of cases[] = {
                {"cyclic(64)", rill::dist::cyclic(64), 64,
                 [](std::uint64_t b, int r, int) { return static_cast<int>(b % static_cast<unsigned>(r)); }, true},
                {"cyclic(1024)", rill::dist::cyclic(1024), 1024,
                 [](std::uint64_t b, int r, int) { return static_cast<int>(b % static_cast<unsigned>(r)); }, true},
                {"blocked", rill::dist::blocked, 0, [](std::uint64_t b, int, int) { return static_cast<int>(b); },
                 false},
                {"local(last)", rill::dist::local(last), 0, [](std::uint64_t, int, int l) { return l; }, false},
                {"user(reversed, 128)", rill::dist::user(&reversed, 128), 128,
                 [](std::uint64_t b, int r, int) { return reversed(b, 0, r); }, false},
            };
            for (const std::uint64_t bytes : {std::uint64_t{8}, std::uint64_t{1000}, std::uint64_t{9000}}) {
              for (const case_of& c : cases) {
                SCOPED_TRACE(std::string(c.name) + " bytes=" + std::to_string(bytes));
                const gaddr a = rill::gas::alloc(bytes, c.d);
                ASSERT_FALSE(a.is_null());
                const std::uint64_t bs = a.block_bytes();
                if (c.block) {
                  EXPECT_EQ(bs, c.block);
                }
                const std::uint64_t blocks = (bytes + bs - 1) / bs;
                for (std::uint64_t b = 0; b < blocks; ++b) {
                  const gaddr at = a + static_cast<std::int64_t>(b * bs);
                  EXPECT_EQ(rill::gas::owner(at).get(), c.model(b, ranks, last)) << "block " << b;
                  const int home = c.home_is_owner                                 ? c.model(b, ranks, last)
                                   : c.d.what() == rill::distribution::kind::local ? last
                                                                                   : 0;
                  EXPECT_EQ(at.home(ranks), home);
                }
                rill::gas::free(a).wait();
              }
            }
          }),
      0);
}

TEST_P(gas, values_written_from_every_rank_are_read_back_from_every_rank) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int ranks = rill::rank_n();
                          const std::uint64_t n = 64 * static_cast<std::uint64_t>(ranks);
                          const gaddr t = rill::gas::alloc(n * 8, rill::dist::cyclic(64));
                          rill::finish([&] {
                            for (int r = 0; r < ranks; ++r)
                              rill::async_at(
                                  r,
                                  [](gaddr base, std::uint64_t count) {
                                    for (std::uint64_t i = static_cast<std::uint64_t>(rill::rank_me()); i < count;
                                         i += static_cast<std::uint64_t>(rill::rank_n()))
                                      rill::gas::put<std::uint64_t>(word(base, i), i * 3 + 1).wait();
                                  },
                                  t, n);
                          });
                          rill::finish([&] {
                            for (int r = 0; r < ranks; ++r)
                              rill::async_at(
                                  r,
                                  [](gaddr base, std::uint64_t count) {
                                    for (std::uint64_t i = 0; i < count; ++i)
                                      expect(rill::gas::get<std::uint64_t>(word(base, i)).get() == i * 3 + 1,
                                             "word " + std::to_string(i));
                                    // A whole block at once.
                                    const auto v = rill::gas::read<std::uint64_t>(word(base, 8), 8).get();
                                    for (std::uint64_t i = 0; i < 8; ++i)
                                      expect(v[i] == (8 + i) * 3 + 1, "read word " + std::to_string(8 + i));
                                  },
                                  t, n);
                          });
                          rill::gas::write<std::uint64_t>(word(t, 0), {7, 8, 9}).wait();
                          EXPECT_EQ(rill::gas::get<std::uint64_t>(word(t, 2)).get(), 9u);
                          rill::gas::free(t).wait();
                        }),
            0);
}

TEST_P(gas, a_block_moves_round_the_ranks_keeping_its_address_and_data) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int ranks = rill::rank_n();
                          const gaddr b = rill::gas::alloc(4096);  // on rank 0
                          std::vector<std::uint64_t> data(512);
                          for (std::uint64_t i = 0; i < 512; ++i) data[i] = i * i;
                          rill::gas::write(b, data).wait();
                          for (int step = 0; step < 3 * ranks; ++step) {
                            const int to = (step * 7 + 1) % ranks;
                            // Ask from a rank that is neither the owner nor, often, the home.
                            const int from = (step + 2) % ranks;
                            rill::rpc(
                                from, [](gaddr at, int dest) { rill::gas::migrate(at, dest).wait(); }, b, to)
                                .wait();
                            EXPECT_EQ(rill::gas::owner(b).get(), to) << "step " << step;
                            EXPECT_EQ(rill::gas::owner(word(b, 511)).get(), to) << "step " << step;
                            EXPECT_EQ(rill::gas::read<std::uint64_t>(b, 512).get(), data) << "step " << step;
                          }
                          rill::gas::free(b).wait();
                        }),
            0);
}

// Moves of one block issued at once from every rank (several reach its owner together, on
// different workers) all complete, one after another, and the data survives every one.
TEST_P(gas, concurrent_moves_of_one_block_all_complete_and_keep_its_data) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int ranks = rill::rank_n();
                          const gaddr b = rill::gas::alloc(1024);
                          std::vector<std::uint64_t> data(128);
                          for (std::uint64_t i = 0; i < 128; ++i) data[i] = 3 * i + 7;
                          rill::gas::write(b, data).wait();
                          rill::finish([&] {
                            for (int r = 0; r < ranks; ++r)
                              rill::async_at(
                                  r,
                                  [](gaddr at) {
                                    const int n = rill::rank_n();
                                    std::vector<rill::event> moves;
                                    for (int k = 0; k < 6; ++k)
                                      moves.push_back(rill::gas::migrate(at, (rill::rank_me() + k) % n));
                                    rill::merge(moves).wait();
                                  },
                                  b);
                          });
                          const int owner = rill::gas::owner(b).get();
                          EXPECT_GE(owner, 0);
                          EXPECT_LT(owner, ranks);
                          EXPECT_EQ(rill::gas::read<std::uint64_t>(b, 128).get(), data);
                          rill::gas::free(b).wait();
                        }),
            0);
}

// Every rank adds to random words of a 4-block table while rank 0 moves the blocks about; every
// add lands exactly once.
TEST_P(gas, blocks_moving_under_concurrent_adds_lose_and_double_nothing) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          constexpr std::uint64_t words = 4 * 512, adds = 3000;
                          const int ranks = rill::rank_n();
                          const gaddr t = rill::gas::alloc(words * 8, rill::dist::cyclic(4096));
                          rill::finish([&] {
                            for (int r = 0; r < ranks; ++r)
                              rill::async_at(
                                  r,
                                  [](gaddr base) {
                                    std::mt19937_64 g(1000 + static_cast<std::uint64_t>(rill::rank_me()));
                                    rill::completion_counter done;
                                    for (std::uint64_t k = 0; k < adds; ++k) {
                                      const gaddr w = word(base, g() % words);
                                      if (k % 16 == 0)  // some with a future, waited at once
                                        rill::gas::call<std::uint64_t>(w, [](std::uint64_t& x) { return x++; }).wait();
                                      else
                                        rill::gas::call_ff<std::uint64_t>(
                                            done, w, [](std::uint64_t& x, std::uint64_t v) { x += v; },
                                            std::uint64_t{1});
                                    }
                                    done.wait();
                                  },
                                  t);
                            rill::async([t, ranks] {
                              std::mt19937_64 g(77);
                              for (int m = 0; m < 40; ++m)
                                rill::gas::migrate(t + static_cast<std::int64_t>((g() % 4) * 4096),
                                                   static_cast<int>(g() % static_cast<std::uint64_t>(ranks)))
                                    .wait();
                            });
                          });
                          std::vector<std::uint64_t> expected(words, 0);
                          for (int r = 0; r < ranks; ++r) {
                            std::mt19937_64 g(1000 + static_cast<std::uint64_t>(r));
                            for (std::uint64_t k = 0; k < adds; ++k) ++expected[g() % words];
                          }
                          for (std::uint64_t b = 0; b < 4; ++b)
                            EXPECT_EQ(rill::gas::read<std::uint64_t>(word(t, b * 512), 512).get(),
                                      std::vector<std::uint64_t>(expected.begin() + static_cast<long>(b * 512),
                                                                 expected.begin() + static_cast<long>(b * 512 + 512)))
                                << "block " << b;
                          rill::gas::free(t).wait();
                        }),
            0);
}

// A rank that maps the segment of a block's owner (the local transport's ranks, MPI ranks of a node)
// pins the block in the owner's index and runs the operation itself, with the totals a message
// would give; with --rill:shared-segments=off every operation on another rank's block is a message.
TEST_P(gas, operations_on_blocks_in_mapped_segments_run_on_the_spot) {
  for (const bool shared : {true, false}) {
    EXPECT_EQ(run_checked(GetParam(),
                          [shared] {
                            constexpr std::uint64_t per_block = 64;
                            const int ranks = rill::rank_n();
                            const auto blocks = static_cast<std::uint64_t>(ranks);
                            const gaddr t = rill::gas::alloc(blocks * per_block * 8, rill::dist::cyclic(per_block * 8));
                            rill::finish([&] {
                              for (int r = 0; r < ranks; ++r)
                                rill::async_at(
                                    r,
                                    [](gaddr base, std::uint64_t words) {
                                      rill::completion_counter done;
                                      for (std::uint64_t i = 0; i < words; ++i)
                                        rill::gas::call_ff<std::uint64_t>(
                                            done, word(base, i), [](std::uint64_t& x, std::uint64_t v) { x += v; },
                                            static_cast<std::uint64_t>(rill::rank_me()) + 1);
                                      done.wait();
                                    },
                                    t, blocks * per_block);
                            });
                            const auto sum =
                                static_cast<std::uint64_t>(ranks) * static_cast<std::uint64_t>(ranks + 1) / 2;
                            // Before the reads below: every rank's operations on the other ranks' blocks: (ranks - 1)
                            // blocks each.
                            std::uint64_t on_the_spot = 0;
                            for (int r = 0; r < ranks; ++r)
                              on_the_spot += rill::rpc(r, [] { return rill::gas::stats().on_the_spot; }).get();
                            const std::uint64_t elsewhere = blocks * (blocks - 1) * per_block;
                            EXPECT_EQ(on_the_spot, shared ? elsewhere : 0u) << "shared segments: " << shared;
                            for (std::uint64_t b = 0; b < blocks; ++b)
                              EXPECT_EQ(rill::gas::read<std::uint64_t>(word(t, b * per_block), per_block).get(),
                                        std::vector<std::uint64_t>(per_block, sum))
                                  << "block " << b;
                            rill::gas::free(t).wait();
                          },
                          {std::string("--rill:shared-segments=") + (shared ? "on" : "off")}),
              0);
  }
}

// A block moved away from its home: a third rank's first operation goes through the home, which
// forwards it; the owner's answer teaches the third rank, whose next operation goes straight there.
TEST_P(gas, the_translation_cache_learns_where_a_block_went) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    const int ranks = rill::rank_n();
                    const gaddr b = rill::gas::alloc(64);  // home and owner: rank 0
                    const int to = ranks - 1;
                    rill::gas::migrate(b, to).wait();
                    EXPECT_EQ(rill::gas::owner(b).get(), to);
                    // From rank 0, the home: its directory forwards every time.
                    const auto home_before = rill::gas::stats().forwarded;
                    rill::gas::put<std::uint64_t>(b, 5).wait();
                    if (to != 0) {
                      EXPECT_EQ(rill::gas::stats().forwarded, home_before + 1);
                    }
                    if (ranks < 3) return;
                    const int third = 1;
                    // Only the first probe's miss sends a lesson; the second waits for nothing.
                    const auto probe = [](gaddr at, std::uint64_t entries) {
                      rill::gas::get<std::uint64_t>(at).wait();
                      const rill::gas_stats s =
                          stats_once([&](const rill::gas_stats& t) { return t.cache_entries >= entries; });
                      return std::vector<std::uint64_t>{s.cache_hits, s.cache_misses, s.cache_entries};
                    };
                    const auto first = rill::rpc(third, probe, b, std::uint64_t{1}).get();
                    const auto forwarded_once = rill::gas::stats().forwarded;
                    const auto second = rill::rpc(third, probe, b, std::uint64_t{0}).get();
                    EXPECT_EQ(first[1], 1u) << "a miss: the first operation went to the home";
                    EXPECT_EQ(first[2], 1u) << "the owner's answer filled the cache";
                    EXPECT_EQ(second[0], first[0] + 1) << "a hit: straight to the owner";
                    EXPECT_EQ(second[1], first[1]) << "no second miss";
                    EXPECT_EQ(rill::gas::stats().forwarded, forwarded_once) << "the home was not asked again";
                    // A bounded cache of one entry forgets the first block for a second.
                    const gaddr c = rill::gas::alloc(64);
                    rill::gas::migrate(c, to).wait();
                    const auto third_cache =
                        rill::rpc(
                            third,
                            [](gaddr x, gaddr y) {
                              // A new cache starts empty, its statistics at zero.
                              rill::gas::set_translation_cache(rill::gas_cache_policy::lru, 1);
                              rill::gas::get<std::uint64_t>(x).wait();
                              stats_once([](const rill::gas_stats& t) { return t.cache_entries >= 1; });
                              rill::gas::get<std::uint64_t>(y).wait();  // its lesson evicts x
                              stats_once([](const rill::gas_stats& t) { return t.cache_evictions >= 1; });
                              // x is forgotten: through the home again, still right
                              const std::uint64_t v = rill::gas::get<std::uint64_t>(x).get();
                              const rill::gas_stats s =
                                  stats_once([](const rill::gas_stats& t) { return t.cache_evictions >= 2; });
                              rill::gas::set_translation_cache(rill::gas_cache_policy::unbounded, 0);
                              return std::vector<std::uint64_t>{v, s.cache_entries, s.cache_evictions, s.cache_misses};
                            },
                            b, c)
                            .get();
                    EXPECT_EQ(third_cache[0], 5u);
                    EXPECT_EQ(third_cache[1], 1u);
                    EXPECT_EQ(third_cache[2], 2u);
                    EXPECT_EQ(third_cache[3], 3u) << "x, y, then x again, each through the home";
                    rill::gas::free(c).wait();
                    rill::gas::free(b).wait();
                  }),
      0);
}

TEST_P(gas, parcels_run_where_the_target_is_and_continue_at_an_lco_or_an_address) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    const int ranks = rill::rank_n();
                    const std::uint64_t n = 8 * static_cast<std::uint64_t>(ranks);
                    const gaddr cells = rill::gas::alloc(n * 8, rill::dist::cyclic(64));
                    for (std::uint64_t i = 0; i < n; ++i) rill::gas::put<std::uint64_t>(word(cells, i), i + 1).wait();
                    rill::gas::migrate(cells, ranks - 1).wait();  // parcels follow a moved block
                    // Results into a reduction LCO that lives at a global address.
                    auto sum = rill::reduce_lco<long>::create(static_cast<std::uint32_t>(n));
                    const auto at = rill::gas::place(sum);
                    std::vector<rill::event> sent;
                    for (std::uint64_t i = 0; i < n; ++i)
                      sent.push_back(
                          rill::make_parcel<std::uint64_t>(
                              word(cells, i), [](std::uint64_t& c, long k) { return static_cast<long>(c) * k; }, 3L)
                              .send(at));
                    rill::merge(sent).wait();
                    EXPECT_EQ(sum.get().get(), 3 * static_cast<long>(n * (n + 1) / 2));
                    // A continuation action at another address: results summed into a word.
                    const gaddr total = rill::gas::alloc(8, rill::dist::local(ranks - 1));
                    sent.clear();
                    for (std::uint64_t i = 0; i < n; ++i)
                      sent.push_back(rill::make_parcel<std::uint64_t>(word(cells, i), [](std::uint64_t& c) {
                                       return c * c;
                                     }).send<std::uint64_t>(total, [](std::uint64_t& t, std::uint64_t r) { t += r; }));
                    rill::merge(sent).wait();
                    EXPECT_EQ(rill::gas::get<std::uint64_t>(total).get(), n * (n + 1) * (2 * n + 1) / 6);
                    // Without a continuation: the action's effect is all.
                    rill::make_parcel<std::uint64_t>(word(cells, 0), [](std::uint64_t& c) { c = 99; }).send().wait();
                    EXPECT_EQ(rill::gas::get<std::uint64_t>(word(cells, 0)).get(), 99u);
                    // An action that throws poisons the parcel's event.
                    EXPECT_TRUE(poisoned_saying(
                        rill::make_parcel<std::uint64_t>(
                            word(cells, 1), [](std::uint64_t&) -> long { throw std::runtime_error("no cell"); })
                            .send(at),
                        "no cell"));
                    rill::gas::free(at.addr).wait();
                    rill::gas::free(total).wait();
                    rill::gas::free(cells).wait();
                  }),
      0);
}

TEST_P(gas, calls_on_one_word_from_every_rank_are_serialised) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int ranks = rill::rank_n();
                          const gaddr c = rill::gas::alloc(8, rill::dist::local(ranks - 1));
                          rill::finish([&] {
                            for (int r = 0; r < ranks; ++r)
                              rill::async_at(
                                  r,
                                  [](gaddr at) {
                                    rill::completion_counter done;
                                    for (int k = 0; k < 1000; ++k) {
                                      rill::gas::call_ff<std::uint64_t>(done, at, [](std::uint64_t& x) {
                                        const std::uint64_t v = x;  // a plain read-modify-write
                                        x = v + 1;
                                      });
                                      // A plain function travels too (as a code offset: under
                                      // mpirun each process maps the code at its own address).
                                      rill::gas::call_ff<std::uint64_t>(done, at, &increment);
                                    }
                                    done.wait();
                                  },
                                  c);
                          });
                          EXPECT_EQ(rill::gas::get<std::uint64_t>(c).get(), 2000u * static_cast<unsigned>(ranks));
                          rill::gas::free(c).wait();
                        }),
            0);
}

TEST_P(gas, bad_addresses_and_frees_are_errors_naming_the_cause) {
  using rill::misuse_error;
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [] {
            const int ranks = rill::rank_n();
            EXPECT_TRUE(poisoned_saying(rill::gas::get<std::uint64_t>(gaddr()), "null"));
            EXPECT_TRUE(poisoned_saying(rill::gas::get<std::uint64_t>(gaddr::make(ranks + 3, false, 6, 0, 64)),
                                        "not an address"));
            // An address in a space nobody allocated from.
            EXPECT_TRUE(poisoned_saying(rill::gas::get<std::uint64_t>(gaddr::make(0, false, 20, 0, 5 << 20)),
                                        "never allocated"));
            const gaddr a = rill::gas::alloc(100, rill::dist::local(ranks - 1));
            EXPECT_TRUE(poisoned_saying(rill::gas::get<std::uint64_t>(a + 96), "bytes at byte 96 of a 100-byte"));
            EXPECT_TRUE(poisoned_saying(rill::gas::get<std::uint64_t>(a + 4), "not aligned"));
            EXPECT_TRUE(poisoned_saying(rill::gas::read<std::uint64_t>(a, 13), "104 bytes"));
            EXPECT_TRUE(poisoned_saying(rill::gas::free(a + 8), "not its first byte"));
            rill::gas::free(a).wait();
            EXPECT_TRUE(poisoned_saying(rill::gas::free(a), "freed already"));
            EXPECT_TRUE(poisoned_saying(rill::gas::get<std::uint64_t>(a), "freed"));
            EXPECT_TRUE(poisoned_saying(rill::gas::migrate(a, 0), "freed"));
            // The same block number again, under a new generation: the old address is refused.
            const gaddr b = rill::gas::alloc(100, rill::dist::local(ranks - 1));
            EXPECT_EQ(b.block_number(), a.block_number());
            EXPECT_NE(b.generation(), a.generation());
            EXPECT_TRUE(poisoned_saying(rill::gas::put<std::uint64_t>(a, 1), "use after free"));
            EXPECT_TRUE(poisoned_saying(rill::make_parcel<std::uint64_t>(a, [](std::uint64_t& x) { x = 1; }).send(),
                                        "use after free"));
            EXPECT_EQ(rill::gas::get<std::uint64_t>(b).get(), 0u) << "the stale put changed nothing";
            rill::gas::free(b).wait();
            EXPECT_TRUE(throws_saying<misuse_error>([] { rill::gas::alloc(0); }, "0 bytes"));
            EXPECT_TRUE(
                throws_saying<misuse_error>([] { rill::gas::alloc(64, rill::dist::cyclic(100)); }, "power of two"));
            EXPECT_TRUE(
                throws_saying<misuse_error>([&] { rill::gas::alloc(64, rill::dist::local(ranks)); }, "names no rank"));
            EXPECT_TRUE(throws_saying<misuse_error>([] { rill::gas::migrate(gaddr(), -1); }, "does not exist"));
            // A 2 GiB block travels as one message: refused at once where a message carries less
            // (mpi), else routed and found never allocated.
            const gaddr two_gib = gaddr::make(0, false, 31, 0, 0);
            if (two_gib.block_bytes() >= rill::am::max_payload_bytes())
              EXPECT_TRUE(throws_saying<misuse_error>([&] { rill::gas::migrate(two_gib, ranks - 1); }, "cannot move"));
            else
              EXPECT_TRUE(poisoned_saying(rill::gas::migrate(two_gib, ranks - 1), "never allocated"));
            EXPECT_TRUE(throws_saying<std::exception>(
                [] { rill::gas::alloc(std::uint64_t{1} << 40, rill::dist::local(0)); }, "2 GiB"));
            // Reuse keeps the address space bounded: many allocations of one size come
            // back to the same few block numbers, zeroed.
            std::uint64_t highest = 0;
            for (int k = 0; k < 300; ++k) {
              const gaddr x = rill::gas::alloc(64);
              EXPECT_EQ(rill::gas::get<std::uint64_t>(x).get(), 0u);
              rill::gas::put<std::uint64_t>(x, 42).wait();
              highest = std::max(highest, x.block_number());
              rill::gas::free(x).wait();
            }
            EXPECT_LT(highest, 4u);
          }),
      0);
}

// A move to a rank whose segment has no room fails, naming it, and the block stays, serving.
TEST_P(gas, a_move_to_a_full_rank_is_refused_and_the_block_stays) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int ranks = rill::rank_n();
                          if (ranks < 2) {
                            EXPECT_TRUE(throws_saying<rill::misuse_error>([] { rill::gas::migrate(gaddr(), 1); },
                                                                          "does not exist"));
                            return;
                          }
                          const gaddr b = rill::gas::alloc(256 * 1024, rill::dist::local(0));
                          rill::gas::put<std::uint64_t>(b + 64, 4242).wait();
                          const gaddr filler =
                              rill::gas::alloc(300 * 1024, rill::dist::local(1));  // rank 1 is now full
                          EXPECT_TRUE(poisoned_saying(rill::gas::migrate(b, 1), "rank 1 has no room"));
                          EXPECT_EQ(rill::gas::owner(b).get(), 0);
                          EXPECT_EQ(rill::gas::get<std::uint64_t>(b + 64).get(), 4242u);
                          rill::gas::free(filler).wait();
                          rill::gas::migrate(b, 1).wait();  // room again
                          EXPECT_EQ(rill::gas::owner(b).get(), 1);
                          EXPECT_EQ(rill::gas::get<std::uint64_t>(b + 64).get(), 4242u);
                          rill::gas::free(b).wait();
                        },
                        {"--rill:segment=1MiB"}),
            0);
}

// An allocation that does not fit on one of its owners fails as a whole: the other owners give
// their blocks back, so nothing leaks, and the same allocation fits once there is room.
TEST_P(gas, an_allocation_that_one_rank_cannot_hold_leaves_nothing_behind) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int ranks = rill::rank_n();
                          if (ranks < 2) return;
                          const auto held = [] {
                            std::vector<std::uint64_t> out;
                            for (int r = 0; r < rill::rank_n(); ++r)
                              out.push_back(rill::rpc(r, [] { return rill::gas::stats().blocks_held; }).get());
                            return out;
                          };
                          const gaddr filler =
                              rill::gas::alloc(300 * 1024, rill::dist::local(1));  // rank 1 is now full
                          const auto before = held();
                          // A block of 256 KiB on each rank: rank 1 has no room for its own.
                          const std::uint64_t bytes = static_cast<std::uint64_t>(ranks) * 256 * 1024;
                          EXPECT_TRUE(throws_saying<std::exception>(
                              [&] { rill::gas::alloc(bytes, rill::dist::blocked); }, "rank 1 has no room"));
                          EXPECT_EQ(held(), before) << "every rank gave its blocks back";
                          rill::gas::free(filler).wait();
                          const gaddr all = rill::gas::alloc(bytes, rill::dist::blocked);
                          for (int r = 0; r < ranks; ++r)
                            EXPECT_EQ(rill::gas::owner(all + static_cast<std::int64_t>(r) * 256 * 1024).get(), r);
                          rill::gas::free(all).wait();
                        },
                        {"--rill:segment=1MiB"}),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, gas, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
