// The global heap (rill/global_array.hpp): each distribution's index -> rank mapping against a
// model of it, elements written from anywhere and found at their homes, for_each and forasync
// running every element once where it lives, atomics on a striped table from every rank, freed
// space coming back zeroed, and every bad input.
#include <cstdint>
#include <exception>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "global_harness.hpp"
#include "harness.hpp"
#include "rill/atomics.hpp"
#include "rill/completion_counter.hpp"
#include "rill/global_array.hpp"
#include "rill/rma.hpp"

namespace rill_test {
namespace {

class global_array : public ::testing::TestWithParam<setup> {};

using rill::distribution;

// Rank of block b: the last rank first, then downwards, wrapping round.
int reversed(std::uint64_t b, std::uint64_t /*blocks*/, int ranks) {
  return ranks - 1 - static_cast<int>(b % static_cast<std::uint64_t>(ranks));
}

struct case_of {
  std::string name;
  distribution d;
  // The rank that holds element i, written from the distribution's definition.
  int (*model)(std::uint64_t i, std::uint64_t n, int ranks);
};

std::vector<case_of> cases() {
  return {
      {"cyclic()", rill::dist::cyclic(),
       [](std::uint64_t i, std::uint64_t, int ranks) {
         return static_cast<int>((i / 8) % static_cast<std::uint64_t>(ranks));
       }},
      {"cyclic(24)", rill::dist::cyclic(24),
       [](std::uint64_t i, std::uint64_t, int ranks) {
         return static_cast<int>((i / 3) % static_cast<std::uint64_t>(ranks));
       }},
      {"blocked", rill::dist::blocked,
       [](std::uint64_t i, std::uint64_t n, int ranks) {
         const std::uint64_t per = (n + static_cast<std::uint64_t>(ranks) - 1) / static_cast<std::uint64_t>(ranks);
         return static_cast<int>(i / per);
       }},
      {"local(last)", rill::dist::local(-1), [](std::uint64_t, std::uint64_t, int ranks) { return ranks - 1; }},
      {"user(reversed, 40)", rill::dist::user(&reversed, 40),
       [](std::uint64_t i, std::uint64_t, int ranks) { return reversed(i / 5, 0, ranks); }},
  };
}

// The case's distribution, with dist::local naming the last rank.
distribution placed(const case_of& c) {
  return c.d.what() == distribution::kind::local ? rill::dist::local(rill::rank_n() - 1) : c.d;
}

TEST_P(global_array, each_distribution_puts_every_index_where_its_definition_says) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int ranks = rill::rank_n();
                          for (const std::uint64_t n : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{1001}}) {
                            for (const case_of& c : cases()) {
                              SCOPED_TRACE(c.name + " n=" + std::to_string(n));
                              auto a = rill::global_alloc<std::uint64_t>(n, placed(c));
                              ASSERT_EQ(a.size(), n);
                              std::set<std::pair<int, std::uintptr_t>> places;
                              std::vector<std::uint64_t> held(static_cast<std::size_t>(ranks));
                              for (std::uint64_t i = 0; i < n; ++i) {
                                const rill::global_ptr<std::uint64_t> p = a[i];
                                EXPECT_EQ(p.where(), c.model(i, n, ranks)) << "index " << i;
                                places.emplace(p.where(), p.raw_address());
                                ++held[static_cast<std::size_t>(p.where())];
                              }
                              EXPECT_EQ(places.size(), n) << "two indices share an element";
                              for (int r = 0; r < ranks; ++r)
                                EXPECT_EQ(a.count_at(r), held[static_cast<std::size_t>(r)]);
                              rill::global_free(a);
                            }
                          }
                        }),
            0);
}

TEST_P(global_array, elements_written_from_anywhere_are_found_at_their_homes) {
  both_ways(GetParam(), [](bool) {
    for (const case_of& c : cases()) {
      SCOPED_TRACE(c.name);
      const std::uint64_t n = 500;
      auto a = rill::global_alloc<std::uint64_t>(n, placed(c));
      // Fresh elements are zero, where they live.
      rill::for_each(a, [](std::uint64_t i, std::uint64_t& x) {
        expect(x == 0, "element " + std::to_string(i) + " did not start as zero");
      }).wait();
      // Each rank writes a share of the elements through their global pointers...
      std::vector<rill::future<void>> writers;
      for (int r = 0; r < rill::rank_n(); ++r)
        writers.push_back(rill::rpc(r, [a] {
          const auto me = static_cast<std::uint64_t>(rill::rank_me()),
                     ranks = static_cast<std::uint64_t>(rill::rank_n());
          for (std::uint64_t i = me; i < a.size(); i += ranks) rill::rput(3 * i + 1, a[i]).wait();
        }));
      for (auto& w : writers) w.wait();
      // ...and every home finds them in its own memory, on the rank the distribution names.
      rill::for_each(a, [a](std::uint64_t i, std::uint64_t& x) {
        expect(x == 3 * i + 1, "element " + std::to_string(i) + " holds " + std::to_string(x));
        expect(a.home(i) == rill::rank_me(), "element " + std::to_string(i) + " visited away from its home");
      }).wait();
      for (std::uint64_t i = 0; i < n; i += 37) EXPECT_EQ(rill::rget(a[i]).get(), 3 * i + 1);
      rill::global_free(a);
    }
  });
}

TEST_P(global_array, for_each_and_forasync_visit_every_element_exactly_once) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          for (const case_of& c : cases()) {
                            SCOPED_TRACE(c.name);
                            const std::uint64_t n = 777;
                            auto a = rill::global_alloc<std::uint64_t>(n, placed(c));
                            rill::for_each(a, [](std::uint64_t i, std::uint64_t& x) { x += i + 1; }).wait();
                            rill::finish([&] { rill::forasync(a, [](std::uint64_t, std::uint64_t& x) { x *= 2; }); });
                            std::vector<std::uint64_t> got(n);
                            for (std::uint64_t i = 0; i < n; ++i) got[i] = rill::rget(a[i]).get();
                            for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2 * (i + 1)) << "index " << i;
                            rill::global_free(a);
                          }
                        }),
            0);
}

TEST_P(global_array, atomics_from_every_rank_on_a_striped_table_count_exactly) {
  both_ways(GetParam(), [](bool) {
    constexpr std::uint64_t n = 256, per_rank = 2000;
    auto table = rill::global_alloc<std::uint64_t>(n, rill::dist::cyclic());
    std::vector<rill::future<void>> all;
    for (int r = 0; r < rill::rank_n(); ++r)
      all.push_back(rill::rpc(r, [table] {
        rill::completion_counter done;
        for (std::uint64_t k = 0; k < per_rank; ++k) rill::atomics::add(table[(k * 7) % n], k % 5, done);
        done.wait();
      }));
    for (auto& f : all) f.wait();
    std::vector<std::uint64_t> expected(n);
    for (std::uint64_t k = 0; k < per_rank; ++k) expected[(k * 7) % n] += k % 5;
    for (std::uint64_t i = 0; i < n; ++i)
      ASSERT_EQ(rill::rget(table[i]).get(), expected[i] * static_cast<std::uint64_t>(rill::rank_n())) << "slot " << i;
    rill::global_free(table);
  });
}

TEST_P(global_array, arrays_made_on_any_rank_work_everywhere_and_come_back_zeroed) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int last = rill::rank_n() - 1;
                          // Made on the last rank (a round trip to rank 0's allocator), used here.
                          auto a =
                              rill::rpc(last, [] { return rill::global_alloc<int>(300, rill::dist::blocked); }).get();
                          rill::for_each(a, [](std::uint64_t i, int& x) { x = static_cast<int>(i) - 7; }).wait();
                          for (std::uint64_t i = 0; i < a.size(); i += 11)
                            EXPECT_EQ(rill::rget(a[i]).get(), static_cast<int>(i) - 7);
                          rill::rpc(last, [a] { rill::global_free(a); }).wait();
                          // The same space again (first fit): zero where the old array was written.
                          auto b = rill::global_alloc<int>(300, rill::dist::blocked);
                          rill::for_each(b, [](std::uint64_t i, int& x) {
                            expect(x == 0, "reused element " + std::to_string(i) + " was not zeroed");
                          }).wait();
                          // A local array on another rank, from here.
                          auto c = rill::global_alloc<double>(50, rill::dist::local(last));
                          EXPECT_EQ(c.home(49), last);
                          rill::rput(2.5, c[49]).wait();
                          EXPECT_EQ(rill::rget(c[49]).get(), 2.5);
                          rill::global_free(c);
                          rill::global_free(b);
                        }),
            0);
}

TEST_P(global_array, bad_distributions_indexes_sizes_and_double_frees_are_errors) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    using rill::misuse_error;
                    EXPECT_TRUE(throws_saying<misuse_error>(
                        [] { rill::global_alloc<std::uint64_t>(10, rill::dist::cyclic(12)); }, "whole number"));
                    EXPECT_TRUE(throws_saying<misuse_error>(
                        [] { rill::global_alloc<std::uint64_t>(10, rill::dist::local(rill::rank_n())); },
                        "names no rank"));
                    EXPECT_TRUE(throws_saying<misuse_error>(
                        [] { rill::global_alloc<std::uint64_t>(10, rill::dist::user(nullptr)); }, "null function"));
                    EXPECT_TRUE(throws_saying<misuse_error>(
                        [] {
                          rill::global_alloc<std::uint64_t>(
                              10, rill::dist::user([](std::uint64_t, std::uint64_t, int ranks) { return ranks; }));
                        },
                        "puts block 0"));
                    // More than the global heap holds (128 MiB segments: 64 MiB of global heap).
                    EXPECT_TRUE(throws_saying<std::exception>(
                        [] { rill::global_alloc<std::uint64_t>(std::uint64_t{1} << 30, rill::dist::blocked); },
                        "--rill:global-heap"));
                    EXPECT_TRUE(throws_saying<misuse_error>(
                        [] { rill::global_alloc<std::uint64_t>(std::uint64_t{1} << 62); }, "overflow"));

                    auto a = rill::global_alloc<std::uint64_t>(100);
                    EXPECT_TRUE(throws_saying<misuse_error>([&] { (void)a[100]; }, "out of range"));
                    rill::global_free(a);
                    EXPECT_TRUE(throws_saying<std::exception>([&] { rill::global_free(a); }, "freed already"));
                    // The own heap refuses double frees too (its allocator would not survive one).
                    auto mine = rill::global_alloc<std::uint64_t>(10, rill::dist::local());
                    rill::global_free(mine);
                    EXPECT_TRUE(throws_saying<misuse_error>([&] { rill::global_free(mine); }, "not a live allocation"));
                    rill::global_ptr<int> p = rill::new_array<int>(4);
                    EXPECT_TRUE(throws_saying<misuse_error>([&] { rill::delete_array(p + 1); }, "not the start"));
                    rill::delete_array(p);
                    EXPECT_TRUE(throws_saying<misuse_error>([&] { rill::delete_array(p); }, "freed already"));
                    // The heap is still whole: a large allocation fits.
                    auto big = rill::global_alloc<std::uint64_t>(std::uint64_t{4} << 20, rill::dist::blocked);
                    rill::global_free(big);
                  }),
      0);
}

// fn throwing poisons for_each's event with its words -- only once every rank's elements have run,
// so that the array may be freed then.
TEST_P(global_array, a_failing_for_each_ends_everywhere_before_its_event_triggers) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const std::uint64_t n = 256 * static_cast<std::uint64_t>(rill::rank_n());
                          auto a = rill::global_alloc<std::uint64_t>(n, rill::dist::cyclic());
                          // The last element is the last of its rank's last run: all others run.
                          const rill::event ran = rill::for_each(a, [](std::uint64_t i, std::uint64_t& x) {
                            if (i == 256 * static_cast<std::uint64_t>(rill::rank_n()) - 1)
                              throw std::runtime_error("the last element is bad");
                            x = 1;
                          });
                          EXPECT_TRUE(poisoned_saying(ran, "the last element is bad"));
                          std::uint64_t visited = 0;
                          for (std::uint64_t i = 0; i < n; ++i) visited += rill::rget(a[i]).get();
                          EXPECT_EQ(visited, n - 1);
                          rill::global_free(a);
                        }),
            0);
}

// A handle kept past global_free: its elements, for_each over it, and freeing it again are errors
// naming the cause -- also once a new array has the same place, which stays untouched. (With
// --rill:tag-checks=home, an element's operations through a mapped segment check bounds only: those
// are left out then.)
TEST_P(global_array, a_freed_arrays_handle_is_an_error_even_once_its_place_is_reused) {
  each_tag_check(GetParam(), [](bool every) {
    const int ranks = rill::rank_n();
    const std::uint64_t n = 64 * static_cast<std::uint64_t>(ranks);
    for (const case_of& c : cases()) {
      SCOPED_TRACE(c.name);
      auto a = rill::global_alloc<std::uint64_t>(n, placed(c));
      EXPECT_NE(a.layout().tag, 0) << "arrays are tagged";
      rill::global_free(a);
      const auto stale_fails = [&](const std::string& words) {
        for (std::uint64_t i : {std::uint64_t{0}, n / 2, n - 1}) {
          if (!every && a[i].is_local()) continue;
          EXPECT_TRUE(poisoned_saying(rill::rget(a[i]), words)) << "rget " << i;
          EXPECT_TRUE(poisoned_saying(rill::atomics::fetch_add(a[i], std::uint64_t{1}), words)) << "atomic " << i;
        }
        EXPECT_TRUE(poisoned_saying(rill::for_each(a, [](std::uint64_t, std::uint64_t& x) { x = 7; }), words))
            << "for_each";
        if (a[0].is_local()) {
          EXPECT_TRUE(throws_saying<rill::misuse_error>([&] { (void)a[0].local(); }, words)) << "local()";
        }
      };
      stale_fails("use after free");
      // The same size and distribution again: the allocators hand out the freed place.
      auto b = rill::global_alloc<std::uint64_t>(n, placed(c));
      ASSERT_EQ(b.layout().where, a.layout().where) << "the test needs the freed place reused";
      EXPECT_NE(b.layout().tag, a.layout().tag);
      stale_fails("allocated again");
      EXPECT_TRUE(throws_saying<std::exception>([&] { rill::global_free(a); }, "freed already"));
      // b came back zeroed and was not written through a's handle; it works.
      rill::for_each(b, [](std::uint64_t i, std::uint64_t& x) { x += i; }).wait();
      for (std::uint64_t i : {std::uint64_t{0}, n / 2, n - 1}) EXPECT_EQ(rill::rget(b[i]).get(), i) << i;
      rill::global_free(b);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(setups, global_array, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
