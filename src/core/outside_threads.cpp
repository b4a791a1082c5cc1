#include "core/outside_threads.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <semaphore>
#include <utility>

#include "core/rank_core.hpp"
#include "rill/detail/task_record.hpp"
#include "rill/error.hpp"

namespace rill::detail {

namespace {

std::mutex registry_lock;
std::vector<rank_core*> registered;  // guarded by registry_lock

// One call, shared by the blocked thread and the task that serves it.
struct outside_call {
  enum state : int { pending, started, abandoned };
  std::atomic<int> at{pending};
  std::binary_semaphore done{0};
  std::exception_ptr error;
};

bool still_running(rank_core* r) {
  std::lock_guard g(registry_lock);
  for (rank_core* s : registered)
    if (s == r) return !r->stopping();
  return false;
}

}  // namespace

void register_process_ranks(const std::vector<rank_core*>& ranks) {
  std::lock_guard g(registry_lock);
  registered = ranks;
}

void withdraw_process_ranks() {
  std::lock_guard g(registry_lock);
  registered.clear();
}

void run_outside_call(int rank, const char* what, const std::function<void()>& fn) {
  auto call = std::make_shared<outside_call>();
  rank_core* r = nullptr;
  {
    // Injected under the lock: a registered rank is not destroyed before it is withdrawn.
    std::lock_guard g(registry_lock);
    if (registered.empty())
      throw misuse_error(fmt::format("{} called from a thread outside Rill while no Rill runtime runs", what));
    r = registered.front();
    for (rank_core* s : registered)
      if (s->id() == rank) r = s;
    r->pool().inject(make_task([call, &fn] {
      int expected = outside_call::pending;
      if (!call->at.compare_exchange_strong(expected, outside_call::started)) return;  // the caller gave up
      try {
        fn();
      } catch (...) {
        call->error = std::current_exception();
      }
      call->done.release();
    }));
  }
  // A runtime that stops drops tasks it has not started: then the caller must not wait forever.
  while (!call->done.try_acquire_for(std::chrono::milliseconds(20))) {
    if (still_running(r)) continue;
    int expected = outside_call::pending;
    if (call->at.compare_exchange_strong(expected, outside_call::abandoned)) {
      throw misuse_error(fmt::format("{} called from a thread outside Rill, but the runtime stopped first", what));
    }
  }
  // Take the error out of the shared call: the serving task may drop its reference to `call`
  // after ours, and the exception object must then not be released on its thread while this
  // thread still reads it (its reference count lives in libstdc++, which ThreadSanitizer does
  // not see).
  if (std::exception_ptr error = std::exchange(call->error, nullptr)) std::rethrow_exception(error);
}

}  // namespace rill::detail
