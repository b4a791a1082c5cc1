// The protocols of the active global address space (rill/gas.hpp): allocating blocks at their
// ranks, moving a block (freeze, transfer, redirect), freeing it, and the glue that lets the
// routing template (rill/detail/gas_route.hpp) ask this rank's gas_table.
//
// A move of block B from rank O to rank T, with home H:
//   1. the move travels to O like any operation; O freezes B (new operations park) and, once the
//      pins drain, sends B's bytes to T;
//   2. T installs B (it serves at once) and tells H, which points its directory at T;
//   3. H tells O, which forgets B, remembers T in its cache, routes the parked operations again
//      -- to T -- and completes the move; then it tells T that B may leave again (until then a
//      second move or a free parks at T, so the home's directory updates, and a return of B to
//      O, cannot overtake this move).
// Until step 3, O holds a frozen copy that nothing changes, so every operation is applied exactly
// once: at O before the freeze, or at T after it.
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "global/gas_visitors.hpp"
#include "global/global_module.hpp"
#include "rill/detail/address_map.hpp"
#include "rill/gas.hpp"

namespace rill {
namespace detail {

namespace {

gas_table& table() { return global_here("rill::gas").gas(); }

// What the manager of an allocation (rank 0 for cyclic ones, else the home) needs to make it.
struct alloc_plan {
  distribution::kind kind;
  bool cyclic;
  unsigned size_class;
  std::uint64_t blocks;
  std::uint64_t bytes;
  std::intptr_t user;
};

unsigned size_class_for(std::uint64_t bytes) {
  return std::max<unsigned>(gaddr::min_size_class, static_cast<unsigned>(std::bit_width(bytes - 1)));
}

std::uint64_t block_bytes_of(const distribution& d) {
  const std::uint64_t b = d.block_bytes() == 0 ? 64 : d.block_bytes();
  if (!std::has_single_bit(b))
    throw misuse_error(fmt::format("rill::gas::alloc: blocks are a power of two bytes, not {}", b));
  return b;
}

int owner_of(const alloc_plan& p, std::uint64_t i, int ranks, int manager) {
  switch (p.kind) {
    case distribution::kind::local: return manager;
    case distribution::kind::cyclic: return static_cast<int>(i % static_cast<std::uint64_t>(ranks));
    case distribution::kind::blocked: return static_cast<int>(i);
    case distribution::kind::user:
      return reinterpret_cast<distribution::user_fn>(const_cast<void*>(code_address(p.user)))(i, p.blocks, ranks);
  }
  return manager;
}

std::byte* allocate_block(std::uint64_t bytes, const char* what) {
  global_module& r = global_here(what);
  void* m = r.memory_segment().allocate(bytes, std::min<std::uint64_t>(std::bit_ceil(bytes), 64)).at;
  if (!m)
    throw misuse_error(fmt::format("{}: rank {} has no room for a block of {} bytes in its segment (--rill:segment)",
                                   what, r.id(), bytes));
  std::memset(m, 0, bytes);
  return static_cast<std::byte*>(m);
}

void free_block(std::byte* data) { global_here("rill::gas").memory_segment().deallocate(data); }

gaddr block_of(gaddr base, std::uint64_t i) { return base + static_cast<std::int64_t>(i * base.block_bytes()); }

// On an owner: takes back its blocks (numbers `which`) of the allocation at `base`.
void discard_blocks(std::uint64_t base_bits, const std::vector<std::uint64_t>& which) {
  const gaddr base = gaddr::from_bits(base_bits);
  for (std::uint64_t i : which) free_block(table().discard(block_of(base, i).block_key()));
}

// On an owner: creates its blocks (numbers `which`) of the allocation at `base`; all or none.
void create_blocks(std::uint64_t base_bits, std::vector<std::uint64_t> which, std::uint64_t total) {
  const gaddr base = gaddr::from_bits(base_bits);
  gas_table& t = table();
  for (std::size_t made = 0; made < which.size(); ++made) {
    const gaddr b = block_of(base, which[made]);
    const std::uint64_t bytes = std::min(base.block_bytes(), total - which[made] * base.block_bytes());
    std::byte* data = nullptr;
    try {
      data = allocate_block(bytes, "rill::gas::alloc");
    } catch (const misuse_error&) {
      discard_blocks(base_bits, std::vector<std::uint64_t>(which.begin(), which.begin() + static_cast<long>(made)));
      throw;
    }
    t.install(b.block_key(), b.generation(), b.home(t.ranks()), data, bytes, false);
    if (b.cyclic()) t.set_owner(b.block_key(), b.generation(), t.rank());
  }
}

// On the manager: takes block numbers, records the allocation and the directory, and has every
// owner create its blocks.
std::uint64_t allocate_at_manager(alloc_plan p) {
  gas_table& t = table();
  const int ranks = t.ranks(), me = t.rank();
  const auto R = static_cast<std::uint64_t>(ranks);
  const std::uint64_t count = p.cyclic ? (p.blocks + R - 1) / R * R : p.blocks;
  unsigned gen = 0;
  const auto run = t.take_blocks(p.cyclic, p.size_class, count, p.cyclic ? R : 1, gen);
  if (!run)
    throw misuse_error(
        fmt::format("rill::gas::alloc: {} more blocks of {} bytes do not fit in the address space of "
                    "that size ({} bits of offset)",
                    count, std::uint64_t{1} << p.size_class, gaddr::offset_bits));
  const gaddr base = gaddr::make(p.cyclic ? 0 : me, p.cyclic, p.size_class, gen, run->first << p.size_class);
  t.record_allocation(base.block_key(), gen, *run, p.bytes);
  std::vector<std::vector<std::uint64_t>> per_rank(static_cast<std::size_t>(ranks));
  for (std::uint64_t i = 0; i < p.blocks; ++i) {
    const int owner = owner_of(p, i, ranks, me);
    per_rank[static_cast<std::size_t>(owner)].push_back(i);
    if (!p.cyclic) t.set_owner(block_of(base, i).block_key(), gen, owner);
  }
  std::vector<std::pair<int, future<void>>> made;
  for (int k = 0; k < ranks; ++k)
    if (!per_rank[static_cast<std::size_t>(k)].empty())
      made.emplace_back(k, rpc(k, &create_blocks, base.bits(), per_rank[static_cast<std::size_t>(k)], p.bytes));
  std::exception_ptr failed;
  std::vector<int> created;
  for (auto& [k, f] : made) {
    try {
      f.wait();
      created.push_back(k);
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  if (!failed) return base.bits();
  // An owner had no room: the others give their blocks back, and the allocation is forgotten.
  std::vector<future<void>> undone;
  for (int k : created) undone.push_back(rpc(k, &discard_blocks, base.bits(), per_rank[static_cast<std::size_t>(k)]));
  for (auto& f : undone) f.wait();
  if (!p.cyclic)
    for (std::uint64_t i = 0; i < p.blocks; ++i) t.forget_owner(block_of(base, i).block_key());
  std::string why;
  if (t.start_free(base, why)) t.finish_free(base);
  std::rethrow_exception(failed);
}

// An operation that takes a block away from its owner: a move (to >= 0) or a free (to < 0).
struct leaving {
  int to;
  promise_ref<void> done;
};

void route_leaving(gaddr a, std::uint8_t hops, leaving op);

// O, step 3: forget the block, route what waited on it again, and let the new owner move it on.
void finish_leaving(std::uint64_t key, int new_owner, promise_ref<void> done) {
  auto [parked, data] = table().release(key, new_owner);
  free_block(data);
  for (auto& retry : parked) retry();
  am::send(
      new_owner,
      [](std::uint64_t k) {
        for (auto& retry : table().settle(k)) retry();
      },
      key);
  done.put();
}

// H, step 2 of a move: the directory points at the new owner.
void redirect(std::uint64_t key, unsigned gen, int to, int from, promise_ref<void> done) {
  table().set_owner(key, gen, to);
  if (from == rank_me())
    finish_leaving(key, to, done);
  else
    am::send(from, &finish_leaving, key, to, done);
}

// T, step 2 of a move: the block serves here from now on.
void arrive(std::uint64_t key, unsigned gen, int home, int from, std::vector<std::uint8_t> bytes,
            promise_ref<void> done) {
  std::byte* data;
  try {
    data = allocate_block(bytes.size(), "rill::gas::migrate");
  } catch (const std::exception& e) {
    const std::string why = e.what();
    am::send(
        from,
        [](std::uint64_t k, std::string w, promise_ref<void> d) {
          for (auto& retry : table().thaw(k)) retry();
          d.poison(w, "rill::gas::migrate");
        },
        key, why, done);
    return;
  }
  if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  table().install(key, gen, home, data, bytes.size(), true);
  if (home == rank_me())
    redirect(key, gen, rank_me(), from, done);
  else
    am::send(home, &redirect, key, gen, rank_me(), from, done);
}

// O, once the frozen block has no pins: send it away, or free it.
void depart(gaddr a, leaving op, gas_block* b) {
  const std::uint64_t key = a.block_key();
  const int me = rank_me();
  if (op.to >= 0) {
    std::vector<std::uint8_t> bytes(b->bytes);
    if (b->bytes) std::memcpy(bytes.data(), b->data, b->bytes);
    am::send(op.to, &arrive, key, b->gen, b->home, me, std::move(bytes), op.done);
    return;
  }
  const int home = b->home;
  auto [parked, data] = table().release(key, -1);
  free_block(data);
  if (home == me) {
    table().forget_owner(key);
    op.done.put();
  } else {
    am::send(
        home,
        [](std::uint64_t k, promise_ref<void> d) {
          table().forget_owner(k);
          d.put();
        },
        key, op.done);
  }
  for (auto& retry : parked) retry();
}

void route_leaving(gaddr a, std::uint8_t hops, leaving op) {
  gas_table& t = table();
  if (op.to == t.rank() && t.holds_settled(a)) {
    op.done.put();
    return;
  }
  for (;;) {
    gas_resolution r = t.freeze(a, hops, [a, op](gas_block* b) { depart(a, op, b); });
    switch (r.what) {
      case gas_resolution::step::run: return;
      case gas_resolution::step::forward:
        if (hops >= gas_max_hops) {
          op.done.poison("rill::gas: a move or free was forwarded too often to reach its block (a routing fault)",
                         op.to >= 0 ? "rill::gas::migrate" : "rill::gas::free");
          return;
        }
        am::send(r.rank, &route_leaving, a, static_cast<std::uint8_t>(hops + 1), op);
        return;
      case gas_resolution::step::frozen: {
        std::function<void()> retry = [a, hops, op] { route_leaving(a, hops, op); };
        if (t.park(a, retry)) return;
        continue;
      }
      case gas_resolution::step::fail:
        op.done.poison(r.why, op.to >= 0 ? "rill::gas::migrate" : "rill::gas::free");
        return;
    }
  }
}

// On the manager: frees every block, then returns the numbers for reuse.
void free_at_manager(std::uint64_t bits) {
  const gaddr a = gaddr::from_bits(bits);
  gas_table& t = table();
  std::string why;
  const auto al = t.start_free(a, why);
  if (!al) throw misuse_error(why);
  const std::uint64_t blocks = (al->bytes + a.block_bytes() - 1) / a.block_bytes();
  std::vector<future<void>> freed;
  for (std::uint64_t i = 0; i < blocks; ++i) {
    promise<void> p;
    freed.push_back(p.get_future());
    route_leaving(block_of(a, i), 0, leaving{-1, p.ref()});
  }
  for (auto& f : freed) f.wait();
  t.finish_free(a);
}

struct owner_op {
  int operator()(std::byte*) const { return rank_me(); }
};

}  // namespace

gas_decision gas_resolve(gaddr a, std::uint64_t bytes, std::uint64_t align, int hops, std::string& why) {
  gas_resolution r = table().resolve(a, bytes, align, hops);
  switch (r.what) {
    case gas_resolution::step::run: return {gas_next::run, -1, r.where, r.block};
    case gas_resolution::step::forward: return {gas_next::forward, r.rank, nullptr, nullptr};
    case gas_resolution::step::frozen: return {gas_next::frozen, -1, nullptr, nullptr};
    case gas_resolution::step::fail: break;
  }
  why = std::move(r.why);
  return {gas_next::fail, -1, nullptr, nullptr};
}

bool gas_park(gaddr a, std::function<void()>& retry) { return table().park(a, retry); }

void gas_unpin(void* block) { gas_table::unpin(static_cast<gas_block*>(block)); }

namespace {

// The calling thread's visit word (rill/detail/gas_index.hpp), claimed in its rank's segment on
// its first visit; nullptr if it could not claim one. A worker never changes rank.
gas_visit_word* visit_word(const address_map& map) {
  thread_local bool claimed = false;
  if (!claimed) [[unlikely]] {
    claimed = true;
    if (gas_visitors* v = gas_visitors::in(map.addressable[map.me])) tls_visit_word = v->claim();
  }
  return tls_visit_word;
}

// Opens a visit, looks for a's block at each of `ranks` (skipping -1 and repeats) in turn, and
// keeps the visit open if it was found.
bool visit(const address_map& map, std::initializer_list<int> ranks, gaddr a, std::uint64_t bytes, std::uint64_t align,
           gas_spot& out) {
  gas_visit_word* word = visit_word(map);
  if (!word) return false;
  const std::uint64_t entered = open_visit(*word);
  int tried = -1;
  for (int r : ranks) {
    if (r < 0 || r >= map.ranks || r == tried) continue;
    tried = r;
    if (gas_found_at(map, r, a, bytes, align, out)) {
      gas_keep_visit(out, word, entered, map.me);
      return true;
    }
  }
  close_visit(*word, entered);
  return false;
}

// Where this thread last found blocks that had moved from their homes: a guess per line of a
// small direct-mapped table, checked by the visit, so that operations on moved blocks skip the
// table's lock too. Used only with the rank's translation cache unbounded, and in its epoch
// (gas_table::guess_epoch).
struct owner_guess {
  std::uint64_t block = 0;
  int owner = -1;
  std::uint32_t epoch = 0;
};
constexpr std::size_t guess_lines = 64;
thread_local owner_guess guesses[guess_lines];
owner_guess& guess_for(gaddr a) {
  static_assert(guess_lines == 64, "the hash keeps 6 bits");
  return guesses[(a.block().bits() * 0x9e3779b97f4a7c15ull) >> 58];
}

}  // namespace

bool gas_visit_at(int owner, gaddr a, std::uint64_t bytes, std::uint64_t align, gas_spot& out) {
  const address_map& map = address_map_here("rill::gas");
  if (owner == map.me || !visit(map, {owner}, a, bytes, align, out)) return false;
  if (const std::uint32_t epoch = table().guess_epoch()) guess_for(a) = {a.block().bits(), owner, epoch};
  return true;
}

bool gas_visit_elsewhere(gaddr a, std::uint64_t bytes, std::uint64_t align, gas_spot& out) {
  const address_map& map = address_map_here("rill::gas");
  const owner_guess& g = guess_for(a);
  const int guessed = g.block == a.block().bits() && g.epoch == table().guess_epoch() ? g.owner : -1;
  // A thread that had a word has looked at the home and here already (gas_visit_near).
  if (tls_visit_word) return guessed >= 0 && visit(map, {guessed}, a, bytes, align, out);
  return visit(map, {gas_home(map, a), map.me, guessed}, a, bytes, align, out);
}

void gas_tell_owner(int origin, gaddr a) {
  if (origin == rank_me()) return;
  am::send(
      origin, [](std::uint64_t key, int owner) { table().learn(key, owner); }, a.block_key(), rank_me());
}

}  // namespace detail

namespace gas {

gaddr alloc(std::uint64_t bytes, distribution d) {
  using rill::detail::alloc_plan;
  const int me = rank_me(), ranks = rank_n();
  if (bytes == 0) throw misuse_error("rill::gas::alloc: 0 bytes");
  alloc_plan p{d.what(), d.what() == distribution::kind::cyclic, 0, 1, bytes, d.user_code()};
  int manager = me;
  switch (d.what()) {
    case distribution::kind::local:
      manager = d.rank() == -1 ? me : d.rank();
      if (manager < 0 || manager >= ranks)
        throw misuse_error(
            fmt::format("rill::gas::alloc: dist::local({}) names no rank (there are {})", d.rank(), ranks));
      p.size_class = rill::detail::size_class_for(bytes);
      break;
    case distribution::kind::blocked:
      p.size_class = rill::detail::size_class_for((bytes + static_cast<std::uint64_t>(ranks) - 1) /
                                                  static_cast<std::uint64_t>(ranks));
      break;
    case distribution::kind::cyclic:
      manager = 0;
      p.size_class = rill::detail::size_class_for(rill::detail::block_bytes_of(d));
      break;
    case distribution::kind::user:
      if (d.user_code() == 0) throw misuse_error("rill::gas::alloc: dist::user with a null function");
      p.size_class = rill::detail::size_class_for(rill::detail::block_bytes_of(d));
      break;
  }
  if (p.size_class >= 32)
    throw misuse_error(
        fmt::format("rill::gas::alloc: blocks of {} bytes are larger than 2 GiB", std::uint64_t{1} << p.size_class));
  p.blocks = (bytes + (std::uint64_t{1} << p.size_class) - 1) >> p.size_class;
  if (p.kind == distribution::kind::user)
    for (std::uint64_t i = 0; i < p.blocks; ++i) {
      const int r = rill::detail::owner_of(p, i, ranks, me);
      if (r < 0 || r >= ranks)
        throw misuse_error(
            fmt::format("rill::gas::alloc: the user distribution puts block {} of {} on rank {} (there are {})", i,
                        p.blocks, r, ranks));
    }
  return gaddr::from_bits(rpc(manager, &rill::detail::allocate_at_manager, p).get());
}

event free(gaddr a) {
  const int ranks = rank_n();
  if (a.is_null() || a.size_class() < gaddr::min_size_class || a.home(ranks) >= ranks) {
    promise<void> p;
    p.poison(fmt::format("0x{:016x} is not an address rill::gas::alloc gave out", a.bits()), "rill::gas::free");
    return p.get_future();
  }
  return rpc(a.cyclic() ? 0 : a.home(ranks), &rill::detail::free_at_manager, a.bits());
}

event migrate(gaddr a, int to) {
  if (to < 0 || to >= rank_n())
    throw misuse_error(fmt::format("rill::gas::migrate: rank {} does not exist (there are {})", to, rank_n()));
  // A block travels as one message (with a few bytes of header beside its contents).
  if (a.block_bytes() + 64 > am::max_payload_bytes())
    throw misuse_error(
        fmt::format("rill::gas::migrate: a block of {} bytes cannot move: one message carries at most {}",
                    a.block_bytes(), am::max_payload_bytes()));
  promise<void> p;
  future<void> out = p.get_future();
  rill::detail::route_leaving(a, 0, rill::detail::leaving{to, p.ref()});
  return out;
}

future<int> owner(gaddr a) {
  promise<int> p;
  future<int> out = p.get_future();
  rill::detail::gas_route<rill::detail::serialised::no, std::byte, rill::detail::gas_runs::at_owner>(
      a, 1, 0, rank_me(), rill::detail::owner_op{}, rill::detail::promise_sink<int>{p.ref()});
  return out;
}

void set_translation_cache(gas_cache_policy policy, std::size_t entries) {
  if (policy != gas_cache_policy::unbounded && entries == 0)
    throw misuse_error("rill::gas::set_translation_cache: a bounded cache needs at least one entry");
  rill::detail::table().set_cache(policy, entries);
}

gas_stats stats() { return rill::detail::table().stats(); }

}  // namespace gas
}  // namespace rill
