// What a rank knows of other ranks' event slots, found by (owner, slot) in a few dependent loads.
//
// A remote notification looks its record up once (R1's remote hop: one lookup per hop). Slots are
// dense small integers on their owner, and events made together have neighbouring slots, so the
// records live at their slot index: each owner has a directory of pages of `page_records` records,
// and neighbouring events share a page and its cache lines (in a hash map they lay wherever their
// nodes were allocated; docs/performance.md, R1). The directory grows in chunks of doubling size
// that never move, and a page appears when one of its slots is first used. Records never move and
// live as long as the table. Memory: a page per 32 neighbouring slots in use, and a directory of 8
// bytes per 32 slots up to the highest in use; large chunks come from calloc, which the OS zeroes
// lazily, so a stray slot index near 2^31 reserves up to 512 MiB of address space but commits
// little.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "rill/event.hpp"

namespace rill::detail {

struct event_waiter;

// A poisoned generation of a slot, remembered as long as the slot exists.
struct poisoned_gen {
  std::uint64_t gen;
  poison_ptr cause;
  // Owned slots only: whether anyone learnt of the error (a waiter ran with it, a query returned
  // it, a subscribed rank was told). The end of the run reports the others (--rill:unobserved-errors).
  bool observed = false;
};

// What this rank knows of one slot owned by another rank.
struct remote_slot {
  std::uint64_t known = 0;       // the owner said: every generation <= known has triggered
  std::uint64_t subscribed = 0;  // the latest generation this rank subscribed to
  // A generation below `subscribed` that this rank subscribed to later, on its own (0: none): the
  // owner answers a subscription when its generation triggers, and the later generation may wait
  // (through other ranks) for this rank's waiters of the earlier one (event_table::must_subscribe).
  std::uint64_t subscribed_below = 0;
  std::uint64_t local_gen = 0;  // the latest generation this rank triggered itself
  poison_ptr local_cause;
  bool local_seen = false;             // local_cause was passed to a waiter or query here (and the owner told)
  std::vector<poisoned_gen> poisoned;  // known poisoned generations <= known
  event_waiter* waiters = nullptr;     // each waiting for w->gen > known
  std::atomic<bool> in_use{false};     // looked up at least once (remote_slots::at)
};

class remote_slots {
 public:
  static constexpr std::uint32_t page_records = 32;

  explicit remote_slots(int ranks) : owners_(static_cast<std::size_t>(ranks)) {}
  ~remote_slots() {
    for (page* pg = pages_.load(std::memory_order_relaxed); pg;) delete std::exchange(pg, pg->next);
    for (directory& d : owners_)
      for (auto& chunk : d.chunks) std::free(chunk.load(std::memory_order_relaxed));
  }
  remote_slots(const remote_slots&) = delete;
  remote_slots& operator=(const remote_slots&) = delete;

  // The record of `owner`'s slot, made at first use. Any thread; what guards the record's fields
  // is the caller's (event_table: the record's shard lock).
  remote_slot& at(int owner, std::uint32_t slot) {
    directory& d = owners_[static_cast<std::size_t>(owner)];
    const std::uint32_t p = slot / page_records;
    const std::uint32_t j = p / directory_base + 1;
    const int k = std::bit_width(j) - 1;
    std::atomic<page**>& chunk_at = d.chunks[static_cast<std::size_t>(k)];
    page** chunk = chunk_at.load(std::memory_order_acquire);
    if (!chunk) chunk = install_chunk(chunk_at, chunk_pages(k));
    std::atomic_ref<page*> page_at(chunk[p - directory_base * ((1u << k) - 1)]);
    page* pg = page_at.load(std::memory_order_acquire);
    if (!pg) pg = install_page(page_at, owner, slot - slot % page_records);
    remote_slot& r = pg->records[slot % page_records];
    if (!r.in_use.load(std::memory_order_relaxed) && !r.in_use.exchange(true, std::memory_order_relaxed))
      used_.fetch_add(1, std::memory_order_relaxed);
    return r;
  }

  // Records in use (looked up at least once).
  std::uint64_t size() const { return used_.load(std::memory_order_relaxed); }

  // Calls f(owner, slot, record) for every record in use. Records made meanwhile may be missed;
  // reading a record's fields needs what guards them, as at() does.
  template <class F>
  void for_each(F&& f) {
    for (page* pg = pages_.load(std::memory_order_acquire); pg; pg = pg->next) {
      for (std::uint32_t r = 0; r < page_records; ++r) {
        if (pg->records[r].in_use.load(std::memory_order_relaxed)) f(pg->owner, pg->first_slot + r, pg->records[r]);
      }
    }
  }

 private:
  struct page {
    std::array<remote_slot, page_records> records;
    int owner = 0;
    std::uint32_t first_slot = 0;
    page* next = nullptr;  // every page is on one list (pages_), for for_each and the destructor
  };
  // Chunk k lists directory_base << k pages from page directory_base * (2^k - 1) on; 24 chunks
  // cover every 32-bit slot, the last only as far as the slots go.
  static constexpr std::uint32_t directory_base = 16;
  static constexpr int directory_chunks = 24;
  static constexpr std::uint64_t pages_in_all = (std::uint64_t{1} << 32) / page_records;
  static_assert(std::uint64_t{directory_base} * ((std::uint64_t{1} << directory_chunks) - 1) >= pages_in_all);
  static std::size_t chunk_pages(int k) {
    const std::uint64_t first = std::uint64_t{directory_base} * ((std::uint64_t{1} << k) - 1);
    return static_cast<std::size_t>(std::min<std::uint64_t>(std::uint64_t{directory_base} << k, pages_in_all - first));
  }
  struct directory {
    std::array<std::atomic<page**>, directory_chunks> chunks{};
  };

  // Publish a fresh chunk or page where there was none, or drop it for the one another thread
  // published first. Every page published joins pages_.
  static page** install_chunk(std::atomic<page**>& at, std::size_t pages) {
    auto* fresh = static_cast<page**>(std::calloc(pages, sizeof(page*)));
    if (!fresh) throw std::bad_alloc();
    page** seen = nullptr;
    if (at.compare_exchange_strong(seen, fresh, std::memory_order_acq_rel, std::memory_order_acquire)) return fresh;
    std::free(fresh);
    return seen;
  }
  page* install_page(std::atomic_ref<page*> at, int owner, std::uint32_t first_slot) {
    auto* fresh = new page();
    fresh->owner = owner;
    fresh->first_slot = first_slot;
    page* seen = nullptr;
    if (!at.compare_exchange_strong(seen, fresh, std::memory_order_acq_rel, std::memory_order_acquire)) {
      delete fresh;
      return seen;
    }
    fresh->next = pages_.load(std::memory_order_relaxed);
    while (!pages_.compare_exchange_weak(fresh->next, fresh, std::memory_order_release, std::memory_order_relaxed)) {
    }
    return fresh;
  }

  std::vector<directory> owners_;
  std::atomic<page*> pages_{nullptr};
  std::atomic<std::uint64_t> used_{0};
};

}  // namespace rill::detail
