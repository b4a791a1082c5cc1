// Calls from threads that are not Rill workers: a std::thread that a task started, a library's
// I/O thread. Such a thread belongs to no rank, so what it asks of a rank runs as a task on that
// rank, and the thread blocks until the task is done (Realm lets any thread wait on and trigger
// events; so does Rill).
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace rill::detail {

class rank_core;

// The ranks this process holds, from just before their workers start until they have all stopped.
void register_process_ranks(const std::vector<rank_core*>& ranks);
void withdraw_process_ranks();

// Runs fn in a task on `rank` when this process holds it, else on this process's first rank, and
// blocks the calling thread until fn has returned; rethrows what fn threw. Throws misuse_error
// (naming `what`) when no runtime is running, or when it stops before the task could start.
void run_outside_call(int rank, const char* what, const std::function<void()>& fn);

// run_outside_call for a function with a result.
template <class F>
auto call_from_outside(int rank, const char* what, F&& fn) {
  using R = decltype(fn());
  if constexpr (std::is_void_v<R>) {
    run_outside_call(rank, what, std::forward<F>(fn));
  } else {
    std::optional<R> result;
    run_outside_call(rank, what, [&] { result.emplace(fn()); });
    return std::move(*result);
  }
}

}  // namespace rill::detail
