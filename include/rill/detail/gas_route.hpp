// Taking an operation on an AGAS address (rill/gas.hpp) to wherever its block is now, and running
// it there. Each rank that receives the operation decides (src/global/gas_table): run it here (the
// block is here and pinned while it runs), send it on (to the owner its cache or directory names,
// or to the block's home), park it (the block is leaving; it is routed again once the block has
// gone), or fail it (a freed, unknown or out-of-range address). When an operation had to be sent
// on, the rank that ran it tells the origin where the block is, so the next one goes straight there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "rill/am.hpp"
#include "rill/detail/at_home.hpp"
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

// A guard against a routing fault looping forever. An operation only bounces while its block keeps
// moving (each move can send it back to the home once), so the bound must exceed the moves of one
// block that can overlap one operation: 250 hops, at most 125 moves.
inline constexpr std::uint8_t gas_max_hops = 250;

template <serialised S, class T, class Op, class Sink, class... A>
void gas_route(gaddr a, std::uint64_t count, std::uint8_t hops, int origin, const Op& op, const Sink& sink, A... args) {
  static_assert(shippable<Op>,
                "rill::gas: the operation must be a function or a lambda whose captures are trivially copyable");
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
        if (hops >= gas_max_hops) {
          sink.fail("rill::gas: an operation was forwarded " + std::to_string(hops) +
                        " times without reaching its block (a routing fault)",
                    home_op::gas);
          return;
        }
        am::send(
            d.rank,
            [](gaddr at, std::uint64_t n, std::uint8_t h, int from, shipped_callable<Op> packed, Sink s, A... in) {
              gas_route<S, T>(at, n, h, from, packed.unpack(), s, in...);
            },
            a, count, static_cast<std::uint8_t>(hops + 1), origin, shipped_callable<Op>::pack(op), sink, args...);
        return;
      case gas_next::frozen: {
        std::function<void()> retry = [=] { gas_route<S, T>(a, count, hops, origin, op, sink, args...); };
        if (gas_park(a, retry)) return;
        continue;  // it left meanwhile: decide again
      }
      case gas_next::fail: sink.fail(why, home_op::gas); return;
    }
  }
}

}  // namespace rill::detail
