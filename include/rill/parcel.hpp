// Parcels (HPX-5 §II): an action, a target address, a payload, and where the result goes.
//
//   auto sum = rill::reduce_lco<long>::create(n);                  // an LCO on this rank
//   auto at = rill::gas::place(sum);                               // ...at a global address
//   for (int i = 0; i < n; ++i)
//     rill::make_parcel<Cell>(cells + i * sizeof(Cell), [](Cell& c, long k) { return c.weight * k; }, 3L)
//         .send(at);                                               // each result set into the LCO
//   long total = sum.get().get();
//
// send() runs action(T& target, payload...) where the target's block is now (rill/gas.hpp: the
// parcel follows a moving block) and delivers its result to the continuation: an LCO placed at a
// global address (its set()), or any address with an action of its own, cont(U& there, result),
// that runs where *that* block is. The returned event triggers once the continuation has run (the
// action, without one); it is poisoned with the cause when either fails -- an address that is
// freed, unknown or out of range, or an action that throws. Actions are delegates: short, run
// inside the message handler with the block pinned, never suspending. Parcels are values:
// trivially copyable when the action and payload are, so they can be stored and sent on.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "rill/gas.hpp"

namespace rill {

namespace detail {

// Delivers an action's result to a continuation address, then answers `finished`.
template <class U, class G, class R>
struct continuation_sink {
  gaddr cont;
  shipped_callable<G> action;
  promise_ref<void> finished;
  template <class... V>
  void done(V&&... result) const {
    using Op = rill::delegate::detail::on_element<G>;
    gas_route<serialised::yes, U, gas_runs::at_owner>(cont, 1, 0, rank_me(), Op{action.unpack()},
                                                      promise_sink<void>{finished}, std::forward<V>(result)...);
  }
  void fail(const std::string& why, home_op kind) const { finished.poison(why, home_op_name(kind)); }
};

template <class Kind>
struct set_lco {
  template <class... V>
  void operator()(lco<Kind>& l, V... v) const {
    l.set(v...);
  }
};

}  // namespace detail

template <class T, class F, class... A>
class parcel {
 public:
  using result_type = rill::detail::home_result_t<rill::delegate::detail::on_element<F>, T, A...>;

  parcel(gaddr target, F action, A... payload) : target_(target), action_(action), payload_(payload...) {}

  gaddr target() const { return target_; }

  // Runs the action; its result is dropped.
  event send() const {
    promise<void> p;
    event out = p.get_future();
    route(rill::delegate::detail::on_element<dropping>{dropping{{action_}}}, rill::detail::promise_sink<void>{p.ref()});
    return out;
  }

  // Runs the action and sets its result into the LCO at `cont`.
  template <class Kind>
  event send(gas::lco_address<Kind> cont) const {
    return send<lco<Kind>>(cont.addr, rill::detail::set_lco<Kind>{});
  }

  // Runs the action, then cont(U& at_cont, result) where cont's block is.
  template <class U, class G>
  event send(gaddr cont, G action) const {
    static_assert(
        rill::detail::shippable<G>,
        "rill::parcel: the continuation must be a function or a lambda whose captures are trivially copyable");
    promise<void> p;
    event out = p.get_future();
    route(rill::delegate::detail::on_element<F>{action_},
          rill::detail::continuation_sink<U, G, result_type>{cont, rill::detail::shipped_callable<G>::pack(action),
                                                             p.ref()});
    return out;
  }

 private:
  // The action with its result dropped (a parcel without a continuation).
  struct dropping {
    rill::delegate::detail::on_element<F> fn;
    template <class... V>
    void operator()(T& target, V&... v) {
      fn(&target, v...);
    }
  };
  template <class Op, class Sink>
  void route(const Op& op, const Sink& sink) const {
    std::apply(
        [&](const A&... payload) {
          rill::detail::gas_route<rill::detail::serialised::yes, T, rill::detail::gas_runs::at_owner>(
              target_, 1, 0, rank_me(), op, sink, payload...);
        },
        payload_);
  }

  gaddr target_;
  F action_;
  std::tuple<A...> payload_;
};

// A parcel for action(T& target, payload...) at `target`.
template <class T, class F, class... A>
parcel<T, F, A...> make_parcel(gaddr target, F action, A... payload) {
  return parcel<T, F, A...>(target, action, payload...);
}

}  // namespace rill
