// Local control objects (HPX-5): objects that live on one rank, take inputs from any rank, and
// fire once -- waking whatever waits on them, anywhere.
//
//   auto sum = rill::reduce_lco<long>::create(rill::rank_n());   // n contributions, summed
//   // on every rank:   sum.set(long{rill::rank_me()});
//   long total = sum.get().get();                                  // a future, from any rank
//
//   rill::and_gate all = rill::and_gate::create(3);               // fires after 3 arrivals
//   rill::semaphore slots = rill::semaphore::create(2);           // 2 units
//   slots.acquire().wait();  ...  slots.release();
//
// A handle is a value (home rank, id, and the event that fires): copy it, send it to any rank.
// Operations from the home rank run at once; from other ranks they are one message to the home.
// An LCO fires once; its event (`fired()`) can be waited on, merged or used as a precondition
// anywhere. A new kind of LCO is a class with
//     using input_type = ...;   using value_type = ...;   (either may be void)
//     void set(input_type v);   bool ready() const;   value_type value() const;
// used as rill::lco<Kind>; Rill calls set() under the LCO's lock on its home rank and fires the
// LCO the first time ready() is true. A set() that throws (e.g. too many inputs) is an error of
// the caller on the home rank and a fatal error when the input came from another rank.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>

#include "rill/am.hpp"
#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/future.hpp"
#include "rill/reduce.hpp"

namespace rill {

namespace detail {

// What an LCO's home keeps: its lock and the event that fires it.
struct lco_box_base {
  virtual ~lco_box_base() = default;
  std::mutex lock;
  event fired;
  bool has_fired = false;
};

// The calling rank's LCOs, by id.
std::uint64_t lco_register(std::shared_ptr<lco_box_base> box);
// The LCO `id` of the calling rank; misuse_error naming `what` when there is none (destroyed, or
// a handle of another rank's LCO used on the wrong rank).
std::shared_ptr<lco_box_base> lco_find(std::uint64_t id, const char* what);
void lco_forget(std::uint64_t id, const char* what);

template <class Kind>
struct lco_box final : lco_box_base {
  template <class... A>
  explicit lco_box(A&&... args) : kind(std::forward<A>(args)...) {}
  Kind kind;
};

}  // namespace detail

template <class Kind>
class lco {
 public:
  using input_type = typename Kind::input_type;
  using value_type = typename Kind::value_type;

  lco() = default;
  // A new LCO on the calling rank, Kind constructed from args.
  template <class... A>
  static lco create(A&&... args) {
    auto box = std::make_shared<detail::lco_box<Kind>>(std::forward<A>(args)...);
    box->fired = user_event::create();
    lco out;
    out.home_ = rank_me();
    out.fired_ = box->fired;
    const bool ready = box->kind.ready();
    out.id_ = detail::lco_register(box);
    if (ready) fire(*box);
    return out;
  }

  int home() const { return home_; }
  // Triggers when the LCO fires; on any rank.
  event fired() const { return fired_; }

  // An input, from any rank.
  template <class U = input_type>
  requires(!std::is_void_v<U>) void set(U v) const {
    if (home_ == rank_me())
      set_here(id_, input_type(std::move(v)));
    else
      am::send(
          home_, [](std::uint64_t id, input_type x) { set_here(id, std::move(x)); }, id_, input_type(std::move(v)));
  }
  void set() const requires std::is_void_v<input_type> {
    if (home_ == rank_me())
      set_here(id_);
    else
      am::send(
          home_, [](std::uint64_t id) { set_here(id); }, id_);
  }

  // The value once the LCO has fired, from any rank.
  future<value_type> get() const {
    if (home_ == rank_me()) {
      return future<void>::from_event(fired_).then([b = box_of(id_, "rill::lco::get")] { return read(*b); });
    }
    return rpc(
        home_,
        [](std::uint64_t id) {
          auto b = box_of(id, "rill::lco::get");
          b->fired.wait();
          return read(*b);
        },
        id_);
  }

  // Forgets the LCO on its home (from any rank); handles to it become invalid.
  void destroy() const {
    if (home_ == rank_me())
      detail::lco_forget(id_, "rill::lco::destroy");
    else
      am::send(
          home_, [](std::uint64_t id) { detail::lco_forget(id, "rill::lco::destroy"); }, id_);
  }

 private:
  using box_type = detail::lco_box<Kind>;
  static std::shared_ptr<box_type> box_of(std::uint64_t id, const char* what) {
    return std::static_pointer_cast<box_type>(detail::lco_find(id, what));
  }
  static value_type read(box_type& b) {
    std::lock_guard g(b.lock);
    if constexpr (!std::is_void_v<value_type>) return b.kind.value();
  }
  static void fire(box_type& b) { detail::event_trigger(b.fired); }
  template <class... X>
  static void set_here(std::uint64_t id, X&&... x) {
    auto b = box_of(id, "rill::lco::set");
    bool fire_now = false;
    {
      std::lock_guard g(b->lock);
      b->kind.set(std::forward<X>(x)...);
      if (!b->has_fired && b->kind.ready()) fire_now = b->has_fired = true;
    }
    if (fire_now) fire(*b);
  }

  int home_ = -1;
  std::uint64_t id_ = 0;
  event fired_;
};

namespace lco_kinds {

// n contributions folded with op from init.
template <class T, class Op>
struct reduction {
  using input_type = T;
  using value_type = T;
  reduction(std::uint32_t n, T init = Op::identity, Op op = {}) : acc(init), remaining(n), fold(std::move(op)) {}
  void set(const T& v) {
    if (remaining == 0) throw misuse_error("rill::reduce_lco: more contributions than it was created for");
    detail::apply_reduction(fold, acc, v);
    --remaining;
  }
  bool ready() const { return remaining == 0; }
  T value() const { return acc; }
  T acc;
  std::uint32_t remaining;
  Op fold;
};

// n arrivals.
struct gate {
  using input_type = void;
  using value_type = void;
  explicit gate(std::uint32_t n) : remaining(n) {}
  void set() {
    if (remaining == 0) throw misuse_error("rill::and_gate: more arrivals than it was created for");
    --remaining;
  }
  bool ready() const { return remaining == 0; }
  void value() const {}
  std::uint32_t remaining;
};

}  // namespace lco_kinds

// A reduction LCO: create(n, [init, op]); n set(v) calls, then get() gives the folded value.
template <class T, class Op = reduce::sum<T>>
using reduce_lco = lco<lco_kinds::reduction<T, Op>>;
// An and-gate: create(n); fires after n set() calls.
using and_gate = lco<lco_kinds::gate>;

// A counting semaphore on its home rank: acquire() from any rank returns an event that triggers
// when a unit is granted to the caller (first come, first served at the home); release() returns
// units. Both take a precondition, like every deferred operation. A remote release() is one-way;
// destroy() after one must first take the units back with acquire() so that it cannot overtake it.
class semaphore {
 public:
  semaphore() = default;
  static semaphore create(std::int64_t units);
  event acquire(event after = event::none()) const;
  void release(std::int64_t units = 1, event after = event::none()) const;
  void destroy() const;
  int home() const { return home_; }

 private:
  int home_ = -1;
  std::uint64_t id_ = 0;
};
static_assert(std::is_trivially_copyable_v<semaphore> && std::is_trivially_copyable_v<and_gate>);

}  // namespace rill
