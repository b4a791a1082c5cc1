// Running a small operation on the element a global pointer names, where that element lives: the
// engine under single-value rput/rget, remote atomics and delegates.
//
// If the calling rank addresses the owner's segment (its own; on the local transport every
// rank's), the operation runs at once on the calling thread. Otherwise it travels as one active
// message to the owner, which checks the address against its segment, runs it inside the message
// handler (no context switch in between, as Grappa's delegates), and answers through a sink: a
// promise for operations with a future, a completion_counter for feed-forward ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "rill/am.hpp"
#include "rill/completion_counter.hpp"
#include "rill/detail/address_map.hpp"
#include "rill/future.hpp"
#include "rill/global_ptr.hpp"
#include "rill/proc.hpp"

namespace rill::detail {

// What kind of operation runs at home, for error messages (travels in the message as a byte).
enum class home_op : std::uint8_t { rput, rget, atomic, delegate, gas };
constexpr const char* home_op_name(home_op op) {
  switch (op) {
    case home_op::rput: return "rill::rput";
    case home_op::rget: return "rill::rget";
    case home_op::atomic: return "rill::atomics";
    case home_op::delegate: return "rill::delegate";
    case home_op::gas: return "rill::gas";
  }
  return "rill: an operation at a global pointer's home";
}

// The element [addr, addr + bytes) of `rank`'s segment as a plain pointer, if this rank addresses
// that segment directly (its own; on the local transport every rank's) and the range passes its
// checks; nullptr otherwise. Inline, without a call: the hot path (rill/detail/address_map.hpp).
[[gnu::always_inline]] inline void* spot_address(int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align,
                                                 home_op op) {
  return address_map_here(home_op_name(op)).target(rank, addr, bytes, align);
}
// Why spot_address refused a target: throws misuse_error for a null pointer or a rank that does
// not exist; the fault's words when the calling rank addresses the segment (so the range is bad:
// outside it, misaligned, freed); empty when it does not, and the operation travels to the home.
std::string spot_refusal(int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op);
// The element [addr, addr + bytes) of `rank`'s segment as a plain pointer, if this rank addresses
// that segment directly; nullptr if it does not. Throws misuse_error when the range lies outside
// the segment or is not aligned to `align`.
void* addressable_or_null(int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op);
// At the home (the calling rank owns the segment): the plain pointer, checked as above.
void* home_address(std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op);
// Checks, at the call, that a pointer is not null and names an existing rank (misuse_error).
void check_target(int rank, std::uintptr_t addr, home_op op);

// Holds the lock that serialises delegates on the word at (rank, addr); rank's segment must be
// addressable here.
class word_guard {
 public:
  word_guard(int rank, std::uintptr_t addr);
  ~word_guard();
  word_guard(const word_guard&) = delete;
  word_guard& operator=(const word_guard&) = delete;

 private:
  void* lock_;
};

// Whether an operation takes the word's delegate lock (delegates) or relies on the hardware
// (atomics, plain loads and stores).
enum class serialised : bool { no = false, yes = true };

// The words of a failure of the operation itself (what fn threw), naming where it ran.
inline std::string threw_text(home_op kind, int rank, const std::exception& e) {
  return std::string(home_op_name(kind)) + " on rank " + std::to_string(rank) + " threw: " + e.what();
}

template <class R>
future<R> poisoned_future(const std::string& why, home_op kind) {
  promise<R> p;
  p.poison(why, home_op_name(kind));
  return p.get_future();
}

template <class Op, class T, class... A>
using home_result_t = std::invoke_result_t<Op&, T*, A&...>;

template <serialised S, class T, class Op, class... A>
home_result_t<Op, T, A...> apply_here(T* target, int rank, std::uintptr_t addr, Op& op, A&... args) {
  if constexpr (S == serialised::yes) {
    word_guard guard(rank, addr);
    return op(target, args...);
  } else {
    return op(target, args...);
  }
}

// Answers through a promise on the requesting rank.
template <class R>
struct promise_sink {
  promise_ref<R> ref;
  template <class... V>
  void done(V&&... value) const {
    ref.put(std::forward<V>(value)...);
  }
  void fail(const std::string& why, home_op kind) const { ref.poison(why, home_op_name(kind)); }
};

// Answers a promise of the calling rank, in place.
template <class R>
struct local_sink {
  const promise<R>& p;
  template <class... V>
  void done(V&&... value) const {
    p.put(std::forward<V>(value)...);
  }
  void fail(const std::string& why, home_op kind) const { p.poison(why, home_op_name(kind)); }
};

// Answers a completion_counter on the requesting rank (directly, when that is the calling rank).
struct counter_sink {
  int owner;
  std::uintptr_t counter;
  template <class... V>
  void done(V&&...) const {
    ack_completion(owner, counter, nullptr);
  }
  void fail(const std::string& why, home_op) const { ack_completion(owner, counter, &why); }
};

// A feed-forward operation run on the calling thread: its counter hears only of a failure.
struct failure_sink {
  completion_counter* counter;
  template <class... V>
  void done(V&&...) const {}
  void fail(const std::string& why, home_op) const { counter->failed_here(why); }
};

// Runs op on the element, reporting its result or error to `sink`; on whichever rank calls it.
template <serialised S, class T, class Op, class Sink, class... A>
void apply_to_sink(T* target, int rank, std::uintptr_t addr, home_op kind, Op& op, const Sink& sink, A&... args) {
  using R = home_result_t<Op, T, A...>;
  try {
    if constexpr (std::is_void_v<R>) {
      apply_here<S>(target, rank, addr, op, args...);
      sink.done();
    } else {
      sink.done(apply_here<S>(target, rank, addr, op, args...));
    }
  } catch (const std::exception& e) {
    sink.fail(threw_text(kind, rank, e), kind);
  }
}

// Sends op to the element's home, where it runs as above.
template <serialised S, class T, class Op, class Sink, class... A>
void send_to_home(int rank, std::uintptr_t addr, home_op kind, const Op& op, const Sink& sink, const A&... args) {
  static_assert(shippable<Op>,
                "the operation must be shippable: a function, or a lambda with trivially copyable captures");
  am::send(
      rank,
      [](std::uintptr_t a, home_op k, shipped_callable<Op> packed, Sink s, A... in) {
        T* target;
        try {
          target = static_cast<T*>(home_address(a, sizeof(T), alignof(T), k));
        } catch (const std::exception& e) {
          s.fail(e.what(), k);
          return;
        }
        Op f = packed.unpack();
        apply_to_sink<S>(target, rank_me(), a, k, f, s, in...);
      },
      addr, kind, shipped_callable<Op>::pack(op), sink, args...);
}

// Runs op(T* element, args...) where p lives once `after` has triggered; a future of its result.
// A bad range (checked when op is about to run: outside the owner's segment, misaligned, freed),
// or what op throws, poisons the future; a poisoned `after` poisons it with the same cause, and op
// does not run.
template <serialised S, class T, class Op, class... A>
future<home_result_t<Op, T, A...>> run_at_home(home_op kind, global_ptr<T> p, event after, Op op, A... args) {
  using R = home_result_t<Op, T, A...>;
  using E = std::remove_const_t<T>;
  const int rank = p.where();
  const std::uintptr_t addr = p.tagged_address();
  if (!after.is_none()) {
    check_target(rank, addr, kind);  // at the call; the range once the operation runs
    promise<R> pr;
    future<R> out = pr.get_future();
    run_after(
        after,
        [=]() mutable {
          if (void* here = spot_address(rank, addr, sizeof(T), alignof(T), kind)) {
            apply_to_sink<S>(static_cast<E*>(here), rank, addr, kind, op, local_sink<R>{pr}, args...);
            return;
          }
          if (std::string why = spot_refusal(rank, addr, sizeof(T), alignof(T), kind); !why.empty())
            pr.poison(why, home_op_name(kind));
          else
            send_to_home<S, E>(rank, addr, kind, op, promise_sink<R>{pr.ref()}, args...);
        },
        poison_into(pr));
    return out;
  }
  // The common case: start now, and where the element is addressable, finish now.
  if (void* here = spot_address(rank, addr, sizeof(T), alignof(T), kind)) [[likely]] {
    try {
      if constexpr (std::is_void_v<R>) {
        apply_here<S>(static_cast<E*>(here), rank, addr, op, args...);
        return make_ready_future();
      } else {
        return make_ready_future(apply_here<S>(static_cast<E*>(here), rank, addr, op, args...));
      }
    } catch (const std::exception& e) {
      return poisoned_future<R>(threw_text(kind, rank, e), kind);
    }
  }
  if (std::string why = spot_refusal(rank, addr, sizeof(T), alignof(T), kind); !why.empty())
    return poisoned_future<R>(why, kind);
  promise<R> pr;
  future<R> out = pr.get_future();
  send_to_home<S, E>(rank, addr, kind, op, promise_sink<R>{pr.ref()}, args...);
  return out;
}

// run_at_home_ff's path when the element is not on the spot: a bad range, or a message to the
// home. Out of line, so that the hot path stays small enough to inline into the caller's loop.
template <serialised S, class E, class Op, class... A>
[[gnu::noinline]] void run_at_home_ff_away(home_op kind, completion_counter& done, int rank, std::uintptr_t addr,
                                           const Op& op, const A&... args) {
  if (std::string why = spot_refusal(rank, addr, sizeof(E), alignof(E), kind); !why.empty()) {
    done.failed_here(why);
    return;
  }
  done.issued();
  send_to_home<S, E>(rank, addr, kind, op, counter_sink{rank_me(), reinterpret_cast<std::uintptr_t>(&done)}, args...);
}

// The feed-forward form: runs op where p lives without a future; `done` counts it until the home
// has applied it, and records its error, if any. Always inlined: GUPS-like loops call it per
// update, and a call's stores in front of an atomic that misses the cache serialise the misses.
template <serialised S, class T, class Op, class... A>
[[gnu::always_inline]] inline void run_at_home_ff(home_op kind, completion_counter& done, global_ptr<T> p, Op op,
                                                  A... args) {
  using E = std::remove_const_t<T>;
  const int rank = p.where();
  const std::uintptr_t addr = p.tagged_address();
  if (void* here = spot_address(rank, addr, sizeof(T), alignof(T), kind)) [[likely]] {
    try {
      apply_here<S>(static_cast<E*>(here), rank, addr, op, args...);
    } catch (const std::exception& e) {
      done.failed_here(threw_text(kind, rank, e));
    }
    return;
  }
  run_at_home_ff_away<S, E>(kind, done, rank, addr, op, args...);
}

}  // namespace rill::detail
