// Unit tests of the table of other ranks' event slots (src/events/remote_slots.hpp): one record per
// (owner, slot), made on first use, never moving, every one visited by for_each.
#include "events/remote_slots.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <random>
#include <thread>
#include <utility>
#include <vector>

namespace {

using rill::detail::remote_slot;
using rill::detail::remote_slots;

TEST(RemoteSlots, EachOwnerAndSlotHasOneRecordThatStaysPut) {
  remote_slots t(3);
  std::map<std::pair<int, std::uint32_t>, remote_slot*> seen;
  std::mt19937 rng(5);
  // Slots across many pages and directory chunks, up to the last 32-bit one (in a small last chunk;
  // 2^31, in a 512 MiB one, would take long under TSan, whose calloc zeroes it).
  std::vector<std::uint32_t> slots{0, 1, 31, 32, 511, 512, 4095, 70'000, 1u << 20, 0x0fff'ffffu, 0xffff'ffffu};
  for (int i = 0; i < 200; ++i) slots.push_back(static_cast<std::uint32_t>(rng() % 100'000));
  for (int owner = 0; owner < 3; ++owner) {
    for (std::uint32_t s : slots) {
      remote_slot& r = t.at(owner, s);
      r.known = static_cast<std::uint64_t>(owner) * 1'000'000'000'000 + s;  // which record this is
      auto [it, fresh] = seen.emplace(std::make_pair(owner, s), &r);
      EXPECT_EQ(it->second, &r) << "owner " << owner << " slot " << s << " moved";
      (void)fresh;
    }
  }
  EXPECT_EQ(t.size(), seen.size());
  for (const auto& [key, record] : seen) {
    EXPECT_EQ(&t.at(key.first, key.second), record);
    EXPECT_EQ(record->known, static_cast<std::uint64_t>(key.first) * 1'000'000'000'000 + key.second);
  }
  EXPECT_EQ(t.size(), seen.size()) << "a second lookup made no record";
}

TEST(RemoteSlots, ForEachVisitsEveryRecordInUseOnceWithItsName) {
  remote_slots t(2);
  std::map<std::pair<int, std::uint32_t>, int> expected;
  for (std::uint32_t s : {3u, 33u, 1000u, 123'456u, 0x0fff'fff0u, 0xffff'ffffu}) {
    t.at(1, s);
    expected[{1, s}] = 0;
  }
  t.at(0, 7);
  expected[{0, 7}] = 0;
  std::map<std::pair<int, std::uint32_t>, int> visited;
  t.for_each([&](int owner, std::uint32_t slot, remote_slot& r) {
    EXPECT_EQ(&r, &t.at(owner, slot));
    ++visited[{owner, slot}];
  });
  for (auto& [key, n] : expected) n = 1;
  EXPECT_EQ(visited, expected) << "records of the same pages that were never used are not visited";
}

// Threads looking up records of the same fresh pages at once: each record is made once, and every
// thread gets that one.
TEST(RemoteSlots, ConcurrentFirstLookupsAgreeOnOneRecord) {
  for (int round = 0; round < 20; ++round) {
    remote_slots t(2);
    constexpr int threads = 4;
    constexpr std::uint32_t per_thread = 2000;
    std::vector<std::vector<remote_slot*>> got(threads, std::vector<remote_slot*>(per_thread));
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) {
      pool.emplace_back([&, i] {
        // Every thread visits the same records (in a different order), so each page's first use races.
        for (std::uint32_t k = 0; k < per_thread; ++k) {
          const std::uint32_t s = (k * 7 + static_cast<std::uint32_t>(i) * 13) % per_thread;
          got[static_cast<std::size_t>(i)][s] = &t.at(1, s * 97);
        }
      });
    }
    for (auto& th : pool) th.join();
    for (std::uint32_t s = 0; s < per_thread; ++s) {
      for (int i = 1; i < threads; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)][s], got[0][s]) << "slot " << s * 97;
      ASSERT_EQ(got[0][s], &t.at(1, s * 97));
    }
    EXPECT_EQ(t.size(), per_thread) << "each record counted once, whichever thread used it first";
  }
}

// The hang report walks the records while workers make new ones: it sees only records in use,
// each under its own name, and misses at most the newest.
TEST(RemoteSlots, ForEachWhileRecordsAreMadeSeesOnlyRecordsInUse) {
  remote_slots t(2);
  constexpr std::uint32_t made = 20'000;
  std::atomic<bool> done{false};
  std::thread maker([&] {
    for (std::uint32_t k = 0; k < made; ++k) t.at(1, k * 3).known = k * 3 + 1;  // slot * 3, known = slot + 1
    done = true;
  });
  std::uint64_t walks = 0, bad = 0;
  while (!done) {
    t.for_each([&](int owner, std::uint32_t slot, remote_slot&) {
      if (owner != 1 || slot % 3 != 0 || slot / 3 >= made) ++bad;
    });
    ++walks;
  }
  maker.join();
  std::uint64_t seen = 0;
  t.for_each([&](int, std::uint32_t slot, remote_slot& r) {
    ++seen;
    if (r.known != slot + 1) ++bad;
  });
  EXPECT_EQ(bad, 0u) << "over " << walks << " walks";
  EXPECT_EQ(seen, made);
}

}  // namespace
