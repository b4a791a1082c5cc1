// Taking an operation on an AGAS address (rill/gas.hpp) to wherever its block is now, and running
// it there. Each rank that receives the operation decides (src/global/gas_table): run it here (the
// block is here and pinned while it runs), send it on (to the owner its cache or directory names,
// or to the block's home), park it (the block is leaving; it is routed again once the block has
// gone), or fail it (a freed, unknown or out-of-range address). When an operation had to be sent
// on, the rank that ran it tells the origin where the block is, so the next one goes straight there.
// An origin that maps the segment of the rank that holds the block runs a data operation itself, in
// a visit that the block's moves wait for (rill/detail/gas_index.hpp; gas_visit_near, gas_visit_at).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "rill/am.hpp"
#include "rill/detail/address_map.hpp"
#include "rill/detail/at_home.hpp"
#include "rill/detail/gas_index.hpp"
#include "rill/gaddr.hpp"

namespace rill::detail {

enum class gas_next : std::uint8_t { run, forward, frozen, fail };
struct gas_decision {
  gas_next what;
  int rank;          // forward: where to
  std::byte* where;  // run: the range's first byte here, pinned
  void* block;       // run: what to unpin
};

// The calling rank's decision for `bytes` at `a`, aligned to `align` (see above); fail: `why`.
gas_decision gas_resolve(gaddr a, std::uint64_t bytes, std::uint64_t align, int hops, std::string& why);
// Parks retry on a's block while it leaves the calling rank; false if it is not leaving (retry).
bool gas_park(gaddr a, std::function<void()>& retry);
void gas_unpin(void* block);
// Tells `origin` that a's block is on the calling rank (a message, unless origin is this rank).
void gas_tell_owner(int origin, gaddr a);

// A block found through the index in a segment the calling rank maps (rill/detail/gas_index.hpp),
// held where it is by an open visit of the calling thread: the range's first byte here, and in the
// owner's address space.
struct gas_spot {
  std::byte* where;
  std::uintptr_t owner_address;
  int owner;
  gas_visit_word* visit_word;
  std::uint64_t entered;
};

// Inside an open visit: [a, a + bytes) where `owner` holds it, if the calling rank maps owner's
// segment, its index lists a's block serving, and the range lies in it, aligned to `align`.
[[gnu::always_inline]] inline bool gas_found_at(const address_map& map, int owner, gaddr a, std::uint64_t bytes,
                                                std::uint64_t align, gas_spot& out) {
  const gas_slot* slot = map.gas_indexes[owner].find(a.block().bits());
  if (!slot) return false;
  const std::uint64_t at = a.byte_in_block(), size = slot->bytes.load(std::memory_order_relaxed);
  if (bytes > size || at > size - bytes || (a.offset() & (align - 1)) != 0) return false;
  const segment_view& view = map.addressable[owner];
  out.owner_address = view.owner_base() + slot->offset.load(std::memory_order_relaxed) + at;
  out.where = static_cast<std::byte*>(view.translate(out.owner_address));
  out.owner = owner;
  return true;
}

// Keeps the visit `word` opened (at `entered`) for the block gas_found_at put in `out`.
inline void gas_keep_visit(gas_spot& out, gas_visit_word* word, std::uint64_t entered, int me) {
  out.visit_word = word;
  out.entered = entered;
  if (out.owner != me) word->count_elsewhere();
}

// Opens a visit to [a, a + bytes) where `owner` holds it (see gas_found_at); otherwise false, and
// the operation takes the locked path (which names any fault).
bool gas_visit_at(int owner, gaddr a, std::uint64_t bytes, std::uint64_t align, gas_spot& out);
// gas_visit_near's slow half: a thread's first visit (it claims its visit word), and a block the
// thread last found away from its home.
bool gas_visit_elsewhere(gaddr a, std::uint64_t bytes, std::uint64_t align, gas_spot& out);

// a.home(map.ranks), by multiplication where the block number fits 32 bits (as it does but in a
// heap of more than 2^32 blocks).
[[gnu::always_inline]] inline int gas_home(const address_map& map, gaddr a) {
  if (a.cyclic() && a.block_number() <= 0xffffffffu) [[likely]]
    return map.block_home(static_cast<std::uint32_t>(a.block_number()));
  return a.home(map.ranks);
}

// A visit where a block that has not moved is: at its home, then on the calling rank. The home
// first: with P ranks, P - 1 of P operations on a spread allocation are for blocks elsewhere, and a
// miss in the calling rank's index is a chain of loads in front of the element's. No lock, no call
// and no locked instruction when the block is found. A malformed address may name a home past the
// ranks: the locked path names that fault.
[[gnu::always_inline]] inline bool gas_visit_near(gaddr a, std::uint64_t bytes, std::uint64_t align, gas_spot& out) {
  const address_map* map = tls_address_map;
  gas_visit_word* word = tls_visit_word;
  if (!map || !word) [[unlikely]]
    return gas_visit_elsewhere(a, bytes, align, out);
  const std::uint64_t entered = open_visit(*word);
  const int home = gas_home(*map, a);
  if ((static_cast<unsigned>(home) < static_cast<unsigned>(map->ranks) &&
       gas_found_at(*map, home, a, bytes, align, out)) ||
      (home != map->me && gas_found_at(*map, map->me, a, bytes, align, out))) {
    gas_keep_visit(out, word, entered, map->me);
    return true;
  }
  close_visit(*word, entered);
  return gas_visit_elsewhere(a, bytes, align, out);
}

// Ends the visit: before the operation's result is delivered, so a visit never waits.
inline void gas_end_visit(const gas_spot& s) { close_visit(*s.visit_word, s.entered); }

// A guard against a routing fault looping forever. An operation only bounces while its block keeps
// moving (each move can send it back to the home once), so the bound must exceed the moves of one
// block that can overlap one operation: 250 hops, at most 125 moves.
inline constexpr std::uint8_t gas_max_hops = 250;

// Where an operation may run: on any rank that maps the owner's segment (data operations, which
// only touch the block, like delegates), or only on the rank that holds the block (parcels and
// owner queries, whose actions see the owner's rank_me() and spawn work there). where_mapped_not_near:
// as where_mapped, for a caller that has tried gas_visit_near itself.
enum class gas_runs : std::uint8_t { where_mapped, where_mapped_not_near, at_owner };

// Runs op on a block held by a visit (gas_visit_at, gas_visit_near), on the calling thread; the visit
// ends before the sink hears of the result, since delivering it may start another operation.
template <serialised S, class T, class Op, class Sink, class... A>
void gas_run_visiting(const gas_spot& spot, const Op& op, const Sink& sink, A&... args) {
  using R = home_result_t<Op, T, A...>;
  Op f = op;
  T* target = reinterpret_cast<T*>(spot.where);
  try {
    if constexpr (std::is_void_v<R>) {
      apply_here<S>(target, spot.owner, spot.owner_address, f, args...);
      gas_end_visit(spot);
      sink.done();
    } else {
      R result = apply_here<S>(target, spot.owner, spot.owner_address, f, args...);
      gas_end_visit(spot);
      sink.done(std::move(result));
    }
  } catch (const std::exception& e) {
    gas_end_visit(spot);
    sink.fail(threw_text(home_op::gas, spot.owner, e), home_op::gas);
  }
}

template <serialised S, class T, gas_runs W = gas_runs::where_mapped, class Op, class Sink, class... A>
void gas_route(gaddr a, std::uint64_t count, std::uint8_t hops, int origin, const Op& op, const Sink& sink, A... args) {
  static_assert(shippable<Op>,
                "rill::gas: the operation must be a function or a lambda whose captures are trivially copyable");
  // At the origin, first where a block that never moved is, without the lock.
  if (gas_spot spot;
      W == gas_runs::where_mapped && hops == 0 && gas_visit_near(a, count * sizeof(T), alignof(T), spot)) {
    gas_run_visiting<S, T>(spot, op, sink, args...);
    return;
  }
  std::string why;
  for (;;) {
    const gas_decision d = gas_resolve(a, count * sizeof(T), alignof(T), hops, why);
    switch (d.what) {
      case gas_next::run: {
        T* target = reinterpret_cast<T*>(d.where);
        Op f = op;
        struct unpin_at_exit {
          void* block;
          ~unpin_at_exit() { gas_unpin(block); }
        };
        {
          unpin_at_exit pinned{d.block};
          apply_to_sink<S>(target, rank_me(), reinterpret_cast<std::uintptr_t>(target), home_op::gas, f, sink, args...);
        }
        if (hops > 0) gas_tell_owner(origin, a);
        return;
      }
      case gas_next::forward:
        // At the origin, a block held by a rank whose segment this one maps is reached there, in a
        // visit, without a message.
        if (gas_spot spot;
            W != gas_runs::at_owner && hops == 0 && gas_visit_at(d.rank, a, count * sizeof(T), alignof(T), spot)) {
          gas_run_visiting<S, T>(spot, op, sink, args...);
          return;
        }
        if (hops >= gas_max_hops) {
          sink.fail("rill::gas: an operation was forwarded " + std::to_string(hops) +
                        " times without reaching its block (a routing fault)",
                    home_op::gas);
          return;
        }
        am::send(
            d.rank,
            [](gaddr at, std::uint64_t n, std::uint8_t h, int from, shipped_callable<Op> packed, Sink s, A... in) {
              gas_route<S, T, W>(at, n, h, from, packed.unpack(), s, in...);
            },
            a, count, static_cast<std::uint8_t>(hops + 1), origin, shipped_callable<Op>::pack(op), sink, args...);
        return;
      case gas_next::frozen: {
        std::function<void()> retry = [=] { gas_route<S, T, W>(a, count, hops, origin, op, sink, args...); };
        if (gas_park(a, retry)) return;
        continue;  // it left meanwhile: decide again
      }
      case gas_next::fail: sink.fail(why, home_op::gas); return;
    }
  }
}

}  // namespace rill::detail
