// Phase barriers (Realm): a barrier is a sequence of phases, each an event that triggers once the
// phase has received its expected number of arrivals, optionally reducing a value carried by them.
//
//   rill::barrier b = rill::barrier::create<rill::reduce::sum<long>>(rill::rank_n());
//   // on every rank r:  b.arrive(1, rill::event::none(), long{r});
//   b.wait();                          // the phase's event: b is an event
//   long total = b.result<long>();     // the reduced value of this phase, from any rank
//   rill::barrier next = b.advance();  // the next phase: arrive and wait on it the same way
//
// A barrier is 16 bytes, trivially copyable and valid on every rank: owner rank, id, phase. It is
// an event (its current phase's), so it can be waited on, merged and used as a precondition. Each
// phase is a generation of one slot of the owner's event table that is pinned to the barrier, so
// any rank names any phase without communication and "a later phase triggered" implies the
// earlier ones did.
//
// Arrivals may come from any rank, before or after anyone waits, and for later phases before the
// current one completes; phases complete in order. An arrival with a poisoned precondition
// poisons its phase at once (with the precondition's cause); the phase still takes its remaining
// arrivals. Too many arrivals for a phase is an error: rill::misuse_error for an arrival on the
// owner rank, a fatal error naming the barrier and the ranks otherwise. See docs/barriers.md.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "rill/detail/type_id.hpp"
#include "rill/event.hpp"
#include "rill/reduce.hpp"

namespace rill {

class barrier;

namespace detail {

// A barrier's reduction, type-erased; only its owner applies it.
struct barrier_redop {
  std::size_t size = 0;         // bytes of a value; 0: the barrier reduces nothing
  std::uint64_t type = 0;       // fingerprint of the value type, checked on every value
  std::string type_name;        // for error messages
  std::vector<std::byte> init;  // every phase starts from this value
  std::function<void(std::byte* acc, const std::byte* value)> fold;
};

template <class T, class Op>
barrier_redop make_redop(Op op, const T& init) {
  static_assert(std::is_trivially_copyable_v<T>, "rill::barrier: reduction values must be trivially copyable");
  barrier_redop r;
  r.size = sizeof(T);
  r.type = value_type_id<T>();
  r.type_name = typeid(T).name();
  r.init.resize(sizeof(T));
  std::memcpy(r.init.data(), &init, sizeof(T));
  r.fold = [op = std::move(op)](std::byte* acc_bytes, const std::byte* value_bytes) mutable {
    T acc;
    T v;
    std::memcpy(&acc, acc_bytes, sizeof(T));
    std::memcpy(&v, value_bytes, sizeof(T));
    apply_reduction(op, acc, v);
    std::memcpy(acc_bytes, &acc, sizeof(T));
  };
  return r;
}

event barrier_create(std::uint32_t expected, barrier_redop redop);
void barrier_arrive(event phase, std::uint32_t count, event after, std::uint64_t type, const void* value,
                    std::size_t size);
event barrier_get_result(event phase, std::uint64_t type, void* out, std::size_t size);

}  // namespace detail

class barrier : public event {
 public:
  // No barrier.
  constexpr barrier() = default;

  // A barrier owned by the calling rank whose phases each expect `expected_arrivals` arrivals
  // (counted with their `count`). No communication. The handle names its first phase.
  static barrier create(std::uint32_t expected_arrivals) {
    return barrier(detail::barrier_create(expected_arrivals, {}));
  }
  // ... reducing the values carried by the arrivals with R (rill::reduce::sum<long>, ...).
  template <reduction_op R>
  static barrier create(std::uint32_t expected_arrivals) {
    using T = typename R::value_type;
    return barrier(detail::barrier_create(expected_arrivals, detail::make_redop<T>(R{}, static_cast<T>(R::identity))));
  }
  // ... reducing with op: a reduction_op object, a callable T(const T&, const T&) returning the
  // combination, or a callable void(T& acc, const T& v) folding in place; every phase starts from
  // init. op runs on the owner rank only.
  template <class T, class Op>
  static barrier create(std::uint32_t expected_arrivals, Op op, T init) {
    return barrier(detail::barrier_create(expected_arrivals, detail::make_redop<T>(std::move(op), init)));
  }

  // Counts `count` arrivals at this phase once `after` has triggered (at once when it has). A
  // poisoned `after` poisons the phase. Never blocks.
  void arrive(std::uint32_t count = 1, event after = event::none()) const {
    detail::barrier_arrive(*this, count, after, 0, nullptr, 0);
  }
  // ... contributing `value` to the phase's reduction (T must be the barrier's value type).
  template <class T>
  void arrive(std::uint32_t count, event after, const T& value) const {
    static_assert(std::is_trivially_copyable_v<T>, "rill::barrier: reduction values must be trivially copyable");
    detail::barrier_arrive(*this, count, after, detail::value_type_id<T>(), &value, sizeof(T));
  }

  // The next phase of the same barrier.
  barrier advance() const {
    return barrier(event::from_parts(static_cast<std::uint32_t>(owner()), slot(), generation() + 1));
  }

  // Writes this phase's reduced value to *out, on the calling rank, once the phase has triggered;
  // returns the event that triggers once it is written (poisoned with the phase's cause when the
  // phase is poisoned, or when the result cannot be given: no reduction, another type, or a phase
  // older than the owner keeps). *out must stay valid until then. Never blocks.
  template <class T>
  event get_result(T* out) const {
    static_assert(std::is_trivially_copyable_v<T>, "rill::barrier: reduction values must be trivially copyable");
    return detail::barrier_get_result(*this, detail::value_type_id<T>(), out, sizeof(T));
  }
  // This phase's reduced value: waits for the phase (and the value) like event::wait(); throws
  // rill::poisoned_error when the phase is poisoned or the value cannot be given.
  template <class T>
  T result() const {
    T v{};
    get_result(&v).wait();
    return v;
  }

  // The barrier's id: the same for all its phases (its slot in the owner's event table).
  std::uint32_t id() const { return slot(); }

  // Results of this many latest phases are kept by the owner for get_result().
  static constexpr std::size_t kept_results = 64;

 private:
  explicit constexpr barrier(event e) : event(e) {}
};
static_assert(std::is_trivially_copyable_v<barrier> && sizeof(barrier) == 16);

}  // namespace rill
