// Explicit caches (rill/cache.hpp) over global arrays of every distribution and over global
// pointers: what each mode fetches and writes back, ranges spread over many homes, caches from
// every rank at once, write-back on destruction, and misuse.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "global_harness.hpp"
#include "harness.hpp"
#include "rill/cache.hpp"
#include "rill/global_array.hpp"
#include "rill/rma.hpp"

namespace rill_test {
namespace {

class caches : public ::testing::TestWithParam<setup> {};

int reversed(std::uint64_t b, std::uint64_t /*blocks*/, int ranks) {
  return ranks - 1 - static_cast<int>(b % static_cast<std::uint64_t>(ranks));
}

std::vector<rill::distribution> distributions() {
  return {rill::dist::cyclic(), rill::dist::cyclic(24), rill::dist::blocked, rill::dist::local(rill::rank_n() - 1),
          rill::dist::user(&reversed, 40)};
}

// An array of n elements, element i holding 2i.
rill::global_array<std::uint64_t> doubled(std::uint64_t n, const rill::distribution& d) {
  auto a = rill::global_alloc<std::uint64_t>(n, d);
  rill::for_each(a, [](std::uint64_t i, std::uint64_t& x) { x = 2 * i; }).wait();
  return a;
}

std::vector<std::uint64_t> contents(const rill::global_array<std::uint64_t>& a) {
  std::vector<std::uint64_t> out(a.size());
  for (std::uint64_t i = 0; i < a.size(); ++i) out[i] = rill::rget(a[i]).get();
  return out;
}

TEST_P(caches, read_write_fetches_a_range_over_many_homes_and_writes_it_back) {
  both_ways(GetParam(), [](bool) {
    for (const auto& d : distributions()) {
      constexpr std::uint64_t n = 600, first = 37, count = 500;
      auto a = doubled(n, d);
      std::set<int> homes;
      for (std::uint64_t i = first; i < first + count; ++i) homes.insert(a.home(i));
      {
        rill::cache<std::uint64_t> c(a, first, count, rill::cache_mode::read_write);
        EXPECT_GE(c.pieces(), homes.size());
        c.acquire().wait();
        for (std::uint64_t k = 0; k < count; ++k) ASSERT_EQ(c[k], 2 * (first + k)) << "element " << first + k;
        for (auto& x : c) x += 1;
        c.release().wait();
      }
      const auto got = contents(a);
      for (std::uint64_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], 2 * i + (i >= first && i < first + count ? 1 : 0)) << "element " << i;
      rill::global_free(a);
    }
  });
}

TEST_P(caches, read_only_keeps_changes_local_and_write_only_starts_blank_and_overwrites) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          auto a = doubled(300, rill::dist::cyclic());
                          {
                            rill::cache<std::uint64_t> ro(a, 0, 300, rill::cache_mode::read_only);
                            ro.acquire().wait();
                            EXPECT_EQ(ro[299], 598u);
                            for (auto& x : ro) x = 7;
                            ro.release().wait();
                          }
                          auto after_ro = contents(a);
                          for (std::uint64_t i = 0; i < 300; ++i) ASSERT_EQ(after_ro[i], 2 * i);

                          rill::cache<std::uint64_t> wo(a, 100, 100, rill::cache_mode::write_only);
                          wo.acquire().wait();
                          for (const auto& x : wo) ASSERT_EQ(x, 0u) << "a write-only cache fetched";
                          for (std::size_t k = 0; k < wo.size(); ++k) wo[k] = 1000 + k;
                          wo.release().wait();
                          auto after_wo = contents(a);
                          for (std::uint64_t i = 0; i < 300; ++i)
                            ASSERT_EQ(after_wo[i], i >= 100 && i < 200 ? 1000 + (i - 100) : 2 * i) << "element " << i;
                          rill::global_free(a);
                        }),
            0);
}

TEST_P(caches, every_rank_caches_its_own_stripe_at_once) {
  both_ways(GetParam(), [](bool) {
    const auto ranks = static_cast<std::uint64_t>(rill::rank_n());
    constexpr std::uint64_t stripe = 150;
    auto a = doubled(stripe * ranks, rill::dist::cyclic(16));
    std::vector<rill::future<void>> all;
    // Rank r changes stripe (r + 1) % ranks, which other ranks hold, through one cache.
    for (int r = 0; r < rill::rank_n(); ++r)
      all.push_back(rill::rpc(r, [a, ranks] {
        const std::uint64_t first = (static_cast<std::uint64_t>(rill::rank_me()) + 1) % ranks * stripe;
        rill::cache<std::uint64_t> c(a, first, stripe, rill::cache_mode::read_write);
        c.acquire().wait();
        for (std::size_t k = 0; k < c.size(); ++k) {
          expect(c[k] == 2 * (first + k), "cached element " + std::to_string(first + k) + " is wrong");
          c[k] = c[k] * 10 + 1;
        }
        c.release().wait();
      }));
    for (auto& f : all) f.wait();
    const auto got = contents(a);
    for (std::uint64_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 20 * i + 1) << "element " << i;
    rill::global_free(a);
  });
}

TEST_P(caches, a_cache_over_a_global_pointer_and_write_back_on_destruction) {
  both_ways(GetParam(), [](bool) {
    const int last = rill::rank_n() - 1;
    rill::global_ptr<long> p = array_on(last, 64, true);
    {
      rill::cache<long> c(p + 8, 40, rill::cache_mode::read_write);
      EXPECT_EQ(c.pieces(), 1u);
      c.acquire().wait();
      for (std::size_t k = 0; k < c.size(); ++k) ASSERT_EQ(c[k], pattern(last, 8 + k));
      c[0] = -5;
      c[39] = -6;
    }  // not released: the destructor writes it back
    EXPECT_EQ(rill::rget(p + 8).get(), -5);
    EXPECT_EQ(rill::rget(p + 47).get(), -6);
    EXPECT_EQ(rill::rget(p + 48).get(), pattern(last, 48));
    free_on(p);
  });
}

TEST_P(caches, misuse_is_refused_and_a_bad_range_poisons) {
  EXPECT_EQ(run_checked(
                GetParam(),
                [] {
                  auto a = doubled(50, rill::dist::blocked);
                  EXPECT_THROW(rill::cache<std::uint64_t>(a, 40, 11, rill::cache_mode::read_only), rill::misuse_error);
                  EXPECT_THROW(rill::cache<std::uint64_t>(a, 51, 0, rill::cache_mode::read_only), rill::misuse_error);
                  EXPECT_THROW(rill::cache<long>(rill::global_ptr<long>(), 4, rill::cache_mode::read_only),
                               rill::misuse_error);
                  rill::cache<std::uint64_t> c(a, 0, 50, rill::cache_mode::read_only);
                  EXPECT_THROW(c.release(), rill::misuse_error);  // not acquired
                  c.acquire().wait();
                  EXPECT_THROW(c.acquire(), rill::misuse_error);  // twice
                  c.release().wait();
                  EXPECT_THROW(c.release(), rill::misuse_error);  // twice
                  // Memory outside the owner's segment: the fetch is poisoned, naming it.
                  rill::global_ptr<long> p = array_on(0, 4, false);
                  rill::cache<long> far(p + (std::ptrdiff_t{1} << 40), 4, rill::cache_mode::read_only);
                  EXPECT_TRUE(poisoned_saying(far.acquire(), "outside rank 0's registered segment"));
                  free_on(p);
                  rill::global_free(a);
                }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, caches, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
