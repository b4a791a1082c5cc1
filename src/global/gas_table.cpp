#include "global/gas_table.hpp"

#include <fmt/format.h>

#include <mutex>

namespace rill::detail {

namespace {

std::string describe(gaddr a) {
  return fmt::format("0x{:016x} (block {} of {}-byte blocks, generation {})", a.bits(), a.block_number(),
                     a.block_bytes(), a.generation());
}

std::string freed_text(gaddr a, unsigned now) {
  return fmt::format(
      "rill::gas: {} was freed: its block now belongs to generation {} of the allocator (use after free)", describe(a),
      now);
}

}  // namespace

gas_table::gas_table(int rank, int ranks, const rill::config& cfg)
    : rank_(rank), ranks_(ranks), cache_(cfg.gas_cache, cfg.gas_cache_entries, 0x9e3779b97f4a7c15ull + rank) {}

gas_table::~gas_table() = default;

bool gas_table::malformed(gaddr a, gas_resolution& r) const {
  if (a.is_null()) {
    r.why = "rill::gas: a null global address";
    return true;
  }
  if (a.size_class() < gaddr::min_size_class || (!a.cyclic() && a.home(ranks_) >= ranks_)) {
    r.why = fmt::format("rill::gas: {} is not an address rill::gas::alloc gave out (home rank {}, {} ranks)",
                        describe(a), a.home(ranks_), ranks_);
    return true;
  }
  return false;
}

gas_block* gas_table::held_here(gaddr a, gas_resolution& r) {
  auto it = held_.find(a.block_key());
  if (it == held_.end()) return nullptr;
  gas_block& b = *it->second;
  if (b.gen != a.generation()) {
    r.why = freed_text(a, b.gen);
  } else if (b.state->load(std::memory_order_relaxed) & gas_block::frozen_bit) {
    r.what = gas_resolution::step::frozen;
  } else {
    r.what = gas_resolution::step::run;
  }
  return &b;
}

gas_resolution gas_table::resolve(gaddr a, std::uint64_t bytes, std::uint64_t align, int hops) {
  gas_resolution r;
  if (malformed(a, r)) return r;
  std::lock_guard g(lock_);
  if (gas_block* held = held_here(a, r)) {
    if (r.what != gas_resolution::step::run) return r;
    gas_block& b = *held;
    r.what = gas_resolution::step::fail;
    const std::uint64_t at = a.byte_in_block();
    if (bytes > b.bytes || at > b.bytes - bytes || (a.offset() & (align - 1)) != 0) {
      r.why =
          fmt::format("rill::gas: {} bytes at byte {} of a {}-byte block{} ({})", bytes, at, b.bytes,
                      (a.offset() & (align - 1)) != 0 ? fmt::format(", not aligned to {}", align) : "", describe(a));
      return r;
    }
    b.state->fetch_add(1, std::memory_order_acquire);
    r.what = gas_resolution::step::run;
    r.where = b.data + at;
    r.block = &b;
    return r;
  }
  return route_elsewhere(a, a.block_key(), hops);
}

gas_resolution gas_table::route_elsewhere(gaddr a, std::uint64_t key, int hops) {
  gas_resolution r;
  r.what = gas_resolution::step::forward;
  const int home = a.home(ranks_);
  if (home == rank_) {
    auto d = directory_.find(key);
    if (d == directory_.end()) {
      r.what = gas_resolution::step::fail;
      r.why = fmt::format("rill::gas: no block at {}: it was never allocated, or it was freed", describe(a));
      return r;
    }
    if (d->second.second != a.generation()) {
      r.what = gas_resolution::step::fail;
      r.why = freed_text(a, d->second.second);
      return r;
    }
    ++forwarded_;
    r.rank = d->second.first;
    return r;
  }
  // Only the first hop trusts the cache: a forwarded operation goes to the home, whose directory
  // is right, so stale guesses cannot send it round in circles.
  if (hops == 0) {
    if (auto c = cache_.find(key); c && *c != rank_) {
      r.rank = *c;
      return r;
    }
  } else {
    ++forwarded_;
  }
  r.rank = home;
  return r;
}

bool gas_table::holds_settled(gaddr a) {
  std::lock_guard g(lock_);
  auto it = held_.find(a.block_key());
  return it != held_.end() && it->second->gen == a.generation() &&
         !(it->second->state->load(std::memory_order_relaxed) & gas_block::frozen_bit);
}

bool gas_table::park(gaddr a, std::function<void()>& retry) {
  std::lock_guard g(lock_);
  auto it = held_.find(a.block_key());
  if (it == held_.end() ||
      !(it->second->settling || (it->second->state->load(std::memory_order_relaxed) & gas_block::frozen_bit)))
    return false;
  it->second->parked.push_back(std::move(retry));
  ++parked_;
  return true;
}

void gas_table::unpin(gas_block* b) {
  if (b->state->fetch_sub(1, std::memory_order_acq_rel) == (gas_block::frozen_bit | 1u)) {
    auto leave = std::move(b->on_drained);
    leave();
  }
}

void gas_table::set_index(gas_index index, std::byte* segment_base, gas_visitors* own,
                          std::vector<gas_visitors*> visitors) {
  std::lock_guard g(lock_);
  index_ = index;
  segment_base_ = segment_base;
  own_visitors_ = own;
  visitors_ = std::move(visitors);
  index_.clear();
}

gas_resolution gas_table::freeze(gaddr a, int hops, std::function<void(gas_block*)> leave) {
  gas_resolution r;
  if (malformed(a, r)) return r;
  gas_block* b;
  bool now;
  {
    // One locked section: two freezes of one block (a move and a free on two workers) must not
    // both see it unfrozen.
    std::lock_guard g(lock_);
    b = held_here(a, r);
    if (!b) return route_elsewhere(a, a.block_key(), hops);
    if (r.what != gas_resolution::step::run) return r;
    if (b->settling) {
      r.what = gas_resolution::step::frozen;  // parks until settle()
      return r;
    }
    // Once the owner's pins have drained, the visits other threads opened before the frozen bit
    // (rill/detail/gas_index.hpp) must end too: they are few and short.
    b->on_drained = [this, leave, b] {
      wait_for_visitors(visitors_);
      leave(b);
    };
    // With the frozen bit set, no new pin or visit can start; the last pin calls on_drained.
    now = (b->state->fetch_or(gas_block::frozen_bit, std::memory_order_seq_cst) & ~gas_block::frozen_bit) == 0;
  }
  if (now) {
    auto go = std::move(b->on_drained);
    go();
  }
  return r;
}

std::pair<std::vector<std::function<void()>>, std::byte*> gas_table::release(std::uint64_t key, int new_owner) {
  std::lock_guard g(lock_);
  auto it = held_.find(key);
  std::pair<std::vector<std::function<void()>>, std::byte*> out{std::move(it->second->parked), it->second->data};
  if (it->second->slot) gas_index::remove(it->second->slot);
  held_.erase(it);
  if (new_owner >= 0) {
    ++moved_out_;
    if (new_owner != rank_) cache_.insert(key, new_owner);
  }
  return out;
}

std::vector<std::function<void()>> gas_table::thaw(std::uint64_t key) {
  std::lock_guard g(lock_);
  gas_block& b = *held_.at(key);
  b.state->fetch_and(~gas_block::frozen_bit, std::memory_order_acq_rel);
  return std::move(b.parked);
}

std::vector<std::function<void()>> gas_table::settle(std::uint64_t key) {
  std::lock_guard g(lock_);
  auto it = held_.find(key);
  if (it == held_.end()) return {};
  it->second->settling = false;
  return std::move(it->second->parked);
}

void gas_table::install(std::uint64_t key, unsigned gen, int home, std::byte* data, std::uint64_t bytes, bool moved) {
  auto b = std::make_unique<gas_block>();
  b->data = data;
  b->bytes = bytes;
  b->gen = gen;
  b->home = home;
  std::lock_guard g(lock_);
  cache_.erase(key);
  b->settling = moved;
  // A block outside the segment (no index, or memory from elsewhere) is reached by messages only.
  if (segment_base_ && data >= segment_base_) {
    const gaddr at = gaddr::from_bits(key | (std::uint64_t{gen} << 34));
    if (gas_slot* slot = index_.insert(at.bits(), static_cast<std::uint64_t>(data - segment_base_), bytes)) {
      b->slot = slot;
      b->state = &slot->state;
    }
  }
  held_[key] = std::move(b);
  if (moved) ++moved_in_;
}

std::byte* gas_table::discard(std::uint64_t key) {
  std::lock_guard g(lock_);
  const auto it = held_.find(key);
  std::byte* data = it->second->data;
  if (it->second->slot) gas_index::remove(it->second->slot);
  held_.erase(it);
  directory_.erase(key);
  return data;
}

void gas_table::set_owner(std::uint64_t key, unsigned gen, int owner) {
  std::lock_guard g(lock_);
  directory_[key] = {owner, gen};
}

void gas_table::forget_owner(std::uint64_t key) {
  std::lock_guard g(lock_);
  directory_.erase(key);
}

void gas_table::learn(std::uint64_t key, int owner) {
  std::lock_guard g(lock_);
  if (owner != rank_ && !held_.contains(key)) cache_.insert(key, owner);
}

std::optional<gas_run> gas_table::take_blocks(bool cyclic, unsigned size_class, std::uint64_t count,
                                              std::uint64_t align, unsigned& gen) {
  std::lock_guard g(lock_);
  space& s = spaces_[{cyclic, size_class}];
  gen = s.gen++ & 255u;
  if (auto it = s.free.lower_bound(count); it != s.free.end()) {
    gas_run run{it->second, count};
    const std::uint64_t left = it->first - count;
    const std::uint64_t rest = it->second + count;
    s.free.erase(it);
    if (left > 0) s.free.emplace(left, rest);
    return run;
  }
  const std::uint64_t limit = std::uint64_t{1} << (gaddr::offset_bits - size_class);
  const std::uint64_t first = (s.next + align - 1) / align * align;
  if (first > limit || count > limit - first) return std::nullopt;
  s.next = first + count;
  return gas_run{first, count};
}

void gas_table::record_allocation(std::uint64_t base_key, unsigned gen, gas_run run, std::uint64_t bytes) {
  std::lock_guard g(lock_);
  allocations_[base_key] = allocation{gen, run, bytes, false};
}

std::optional<gas_table::allocation> gas_table::start_free(gaddr a, std::string& why) {
  std::lock_guard g(lock_);
  auto it = allocations_.find(a.block_key());
  if (it == allocations_.end() || a.byte_in_block() != 0) {
    why =
        fmt::format("rill::gas::free: no allocation starts at {} (freed already, or not its first byte)", describe(a));
    return std::nullopt;
  }
  if (it->second.gen != a.generation()) {
    why = freed_text(a, it->second.gen);
    return std::nullopt;
  }
  if (it->second.freeing) {
    why = fmt::format("rill::gas::free: {} is being freed already", describe(a));
    return std::nullopt;
  }
  it->second.freeing = true;
  return it->second;
}

void gas_table::finish_free(gaddr base) {
  std::lock_guard g(lock_);
  auto it = allocations_.find(base.block_key());
  spaces_[{base.cyclic(), base.size_class()}].free.emplace(it->second.run.count, it->second.run.first);
  allocations_.erase(it);
}

void gas_table::set_cache(gas_cache_policy policy, std::size_t entries) {
  std::lock_guard g(lock_);
  cache_ = translation_cache(policy, entries, 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(rank_));
  guess_epoch_.store(policy == gas_cache_policy::unbounded ? ++epochs_ : 0, std::memory_order_relaxed);
}

gas_stats gas_table::stats() {
  std::lock_guard g(lock_);
  gas_stats s;
  s.cache_hits = cache_.stats().hits;
  s.cache_misses = cache_.stats().misses;
  s.cache_evictions = cache_.stats().evictions;
  s.cache_entries = cache_.size();
  s.forwarded = forwarded_;
  s.on_the_spot = own_visitors_ ? own_visitors_->elsewhere() : 0;
  s.parked = parked_;
  s.moved_in = moved_in_;
  s.moved_out = moved_out_;
  s.blocks_held = held_.size();
  return s;
}

}  // namespace rill::detail
