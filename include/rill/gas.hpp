// The active global address space (HPX-5 §III): relocatable blocks named by 64-bit addresses
// (rill/gaddr.hpp) that stay valid while the blocks move between ranks.
//
//   rill::gaddr t = rill::gas::alloc(4 * 4096, rill::dist::cyclic(4096));  // 4 blocks, one per rank
//   rill::gas::call<std::uint64_t>(t + 8, [](std::uint64_t& w, std::uint64_t v) { w ^= v; }, key);
//   rill::gas::migrate(t, 2).wait();          // the block moves; t still names it
//   int where = rill::gas::owner(t).get();    // 2
//   rill::gas::free(t).wait();
//
// Allocation follows a distribution (rill/distribution.hpp): dist::local(r) makes one block on
// rank r; dist::cyclic(bytes) blocks of that size (a power of two, default 64) dealt round the
// ranks from rank 0; dist::blocked one block per rank; dist::user(f, bytes) block b on rank
// f(b, blocks, ranks). A block's *home* keeps a directory entry saying where the block is: for
// cyclic blocks the rank its number names, for the others the rank that allocated it. Block
// sizes are powers of two (8 bytes to 2 GiB); bytes past `bytes` in the last block are outside it.
//
// Operations run where the block is now. A rank that does not hold the block sends the operation
// to the owner its translation cache guesses, else to the block's home; a rank that no longer
// holds it sends it to the home, whose directory is exact. A block that is moving or being freed
// is frozen: operations reaching it wait and then follow it. So no operation is lost or applied
// twice while blocks move. --rill:gas-cache (unbounded, lru, random) and --rill:gas-cache-entries
// bound each rank's cache; set_translation_cache changes it at run time.
//
// Operations (call, call_ff, get, put, read, write) are like delegates (rill/delegate.hpp): fn
// runs in the owner's message handler, or on the calling thread where it maps the owner's segment
// (the local transport, ranks of a node), and the block cannot leave meanwhile, so fn must be short
// and must not suspend. Parcels (rill/parcel.hpp) always run at the owner.
// call serialises calls on the same element; get/put/read/write are plain copies.
//
// Errors name the cause and never touch memory: a null address, one no allocation gave out, a
// range past its block, and use after free -- every address carries its allocation's generation,
// and the block (or its home) compares it -- poison the future or the completion counter. A
// generation has 8 bits: an address freed 256 allocations of the same size class ago may alias.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "rill/completion_counter.hpp"
#include "rill/config.hpp"
#include "rill/delegate.hpp"
#include "rill/detail/gas_route.hpp"
#include "rill/distribution.hpp"
#include "rill/event.hpp"
#include "rill/future.hpp"
#include "rill/gaddr.hpp"
#include "rill/gas_stats.hpp"
#include "rill/lco.hpp"

namespace rill::gas {

// `bytes` of zeroes spread as `d` says; the address of the first. Waits (yields inside a task)
// for the blocks to exist on their ranks. rill::misuse_error when bytes is 0, a block size is not
// a power of two, or blocks exceed 2 GiB; rill::poisoned_error naming the rank when one has no room.
gaddr alloc(std::uint64_t bytes, distribution d = dist::local());
// Frees what alloc returned, once every block has stopped serving operations; from any rank.
// A second free, or an address that is not an allocation's first byte, poisons the event.
event free(gaddr a);
// Moves a's block to rank `to`. Once the event triggers, a (and every address in the block)
// resolves to `to`; operations issued meanwhile are applied exactly once, before or after.
event migrate(gaddr a, int to);
// The rank that holds a's block (when the answer leaves it).
future<int> owner(gaddr a);

// The calling rank's translation cache: its policy and bound (forgets what it knew), and counters.
void set_translation_cache(gas_cache_policy policy, std::size_t entries);
gas_stats stats();

namespace detail {
using rill::detail::gas_route;
using rill::detail::promise_sink;
using rill::detail::serialised;
template <class R>
future<R> route_for_future(gaddr a, std::uint64_t count, auto op, auto... args) {
  promise<R> p;
  future<R> out = p.get_future();
  gas_route<serialised::no, typename decltype(op)::element>(a, count, 0, rank_me(), op, promise_sink<R>{p.ref()},
                                                            args...);
  return out;
}
template <class T>
struct copy_out {
  using element = T;
  T operator()(T* t) const { return *t; }
};
template <class T>
struct copy_in {
  using element = T;
  void operator()(T* t, T v) const { *t = v; }
};
template <class T>
struct read_n {
  using element = T;
  std::uint64_t n;
  std::vector<T> operator()(T* t) const { return std::vector<T>(t, t + n); }
};
template <class T>
struct write_n {
  using element = T;
  void operator()(T* t, const std::vector<T>& v) const {
    if (!v.empty()) std::memcpy(static_cast<void*>(t), v.data(), v.size() * sizeof(T));
  }
};
}  // namespace detail

// fn(T& element, args...) where a's block is now, serialised with other calls on the element; a
// future of its result.
template <class T, class F, class... A>
auto call(gaddr a, F fn, A... args) {
  using Op = rill::delegate::detail::on_element<F>;
  using R = rill::detail::home_result_t<Op, T, A...>;
  promise<R> p;
  future<R> out = p.get_future();
  rill::detail::gas_route<rill::delegate::detail::serialisation<T>, T>(a, 1, 0, rank_me(), Op{fn},
                                                                       rill::detail::promise_sink<R>{p.ref()}, args...);
  return out;
}

// The feed-forward form: `done` counts the call until it has run (its result is dropped).
template <class T, class F, class... A>
void call_ff(completion_counter& done, gaddr a, F fn, A... args) {
  using Op = rill::delegate::detail::on_element<F>;
  constexpr auto S = rill::delegate::detail::serialisation<T>;
  // On the spot, `done` hears only of a failure (as a delegate's call_ff): no count to keep.
  if (rill::detail::gas_spot spot; rill::detail::gas_visit_near(a, sizeof(T), alignof(T), spot)) {
    rill::detail::gas_run_visiting<S, T>(spot, Op{fn}, rill::detail::failure_sink{&done}, args...);
    return;
  }
  done.issued();
  rill::detail::gas_route<S, T, rill::detail::gas_runs::where_mapped_not_near>(
      a, 1, 0, rank_me(), Op{fn}, rill::detail::counter_sink{rank_me(), reinterpret_cast<std::uintptr_t>(&done)},
      args...);
}

template <class T>
future<T> get(gaddr a) {
  return detail::route_for_future<T>(a, 1, detail::copy_out<T>{});
}
template <class T>
future<void> put(gaddr a, T v) {
  return detail::route_for_future<void>(a, 1, detail::copy_in<T>{}, v);
}
// n elements from a, all in one block.
template <class T>
future<std::vector<T>> read(gaddr a, std::uint64_t n) {
  return detail::route_for_future<std::vector<T>>(a, n, detail::read_n<T>{n});
}
// v's elements to a, all in one block.
template <class T>
future<void> write(gaddr a, std::vector<T> v) {
  const std::uint64_t n = v.size();
  return detail::route_for_future<void>(a, n, detail::write_n<T>{}, std::move(v));
}

// An LCO's address in the global address space: a block on the calling rank holding its handle.
// Parcels (rill/parcel.hpp) can name it as their continuation; the block can move like any other.
template <class Kind>
struct lco_address {
  gaddr addr;
};
template <class Kind>
lco_address<Kind> place(lco<Kind> l) {
  const gaddr a = alloc(sizeof(lco<Kind>));
  put(a, l).wait();
  return {a};
}

}  // namespace rill::gas
