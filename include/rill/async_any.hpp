// Tasks that any rank may run: distributed work stealing (Grappa's global load balancing).
//
//   rill::finish([] {
//     rill::async_any(visit, root);    // queued here; an idle rank may steal it
//   });
//
// async_any(fn, args...) queues fn(args...) on the calling worker's deque, like spawn. The rank's
// own workers run it as any other task (newest first: depth first); an idle rank asks a victim
// for some and gets the oldest ones (the biggest pieces of a divide-and-conquer computation). A stolen
// task runs on the thief as if it had been sent there with async_at: in the caller's finish scope,
// which covers stolen tasks and everything they start.
//
// fn must be shippable (a function, a capture-less lambda or one with trivially copyable
// captures) and args anything rill::am::send carries, since the task may move to another rank.
//
// The policy is a start-up option (docs/finish.md, --rill:steal): off, random (a victim chosen
// at random) or hierarchical (ranks on the same node first); --rill:steal-batch caps how many
// tasks one steal takes (at most half of the victim's queue).
#pragma once

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rill/finish.hpp"

namespace rill {

namespace detail {

// The callable and arguments of an async_any task.
template <class Fn, class... Args>
struct stealable_call {
  Fn fn;
  std::tuple<Args...> args;
  void operator()() { std::apply(fn, std::move(args)); }
};

// The record policy of async_any tasks: run here (in the record's scope, as every record), or ship
// to a thief (counted in the scope as a send until the thief acknowledges it, and then out as a
// local task).
struct run_stealable {
  static constexpr bool ships = true;
  template <class Call>
  static void run(task_record*, Call& c) {
    c();
  }
  template <class Call>
  static void ship(task_record* r, Call& c, int dest) {
    auto* scope = static_cast<finish_proxy*>(r->scope);
    std::apply([&](auto&... a) { ship_task(dest, finish_ship_from(scope), c.fn, std::move(a)...); }, c.args);
    if (scope) finish_task_ended(scope, nullptr);
  }
};

// Tells other ranks, the first time since a thief last found nothing here, that this rank holds
// tasks to steal.
void stealable_queued();

}  // namespace detail

// Runs fn(args...) as a task of the calling task's finish scope, on this rank or on a rank that
// steals it.
template <class F, class... Args>
void async_any(F&& fn, Args&&... args) {
  using Fn = std::decay_t<F>;
  static_assert(detail::shippable<Fn>,
                "rill::async_any: the task may move to another rank, so the callable must be a function, a "
                "capture-less lambda or a lambda with trivially copyable captures; pass data as arguments");
  static_assert(std::is_invocable_v<Fn&, std::decay_t<Args>&&...>,
                "rill::async_any: the callable cannot be called with these arguments");
  detail::task_submit(detail::make_counted_task<detail::run_stealable>(
      "rill::async_any", detail::stealable_call<Fn, std::decay_t<Args>...>{
                             std::forward<F>(fn), std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)}));
  detail::stealable_queued();
}

// Counters of the calling rank's distributed work stealing.
struct steal_counts {
  std::uint64_t requests_sent = 0;   // steal requests this rank sent as a thief
  std::uint64_t requests_empty = 0;  // ... that came back with nothing
  std::uint64_t tasks_stolen = 0;    // tasks victims sent this rank
  std::uint64_t tasks_given = 0;     // tasks this rank sent to thieves
};
steal_counts steal_stats();

}  // namespace rill
