// rill/detail/waiter.hpp: how anything waits. A task parks its fiber and its worker runs other
// work; a thread that is not a worker blocks on a semaphore of its own. A wake-up goes to the
// waiter's own worker (make_ready), since a fiber never moves between workers.
#include <semaphore>

#include "rill/detail/waiter.hpp"
#include "scheduler/worker.hpp"

namespace rill::detail {

namespace {
thread_local std::binary_semaphore* tls_sem = nullptr;
std::binary_semaphore& thread_semaphore() {
  thread_local std::binary_semaphore sem{0};
  tls_sem = &sem;
  return sem;
}
}  // namespace

bool in_task() { return tls_worker != nullptr; }

void prepare_wait(waiter& w) {
  if (worker* me = tls_worker) {
    w.owner = me;
    w.fiber = me->current_fiber();
    w.thread_sem = nullptr;
  } else {
    w.owner = nullptr;
    w.thread_sem = &thread_semaphore();
  }
}

void park(waiter& w) {
  if (w.owner) {
    static_cast<worker*>(w.owner)->park(w);
  } else {
    static_cast<std::binary_semaphore*>(w.thread_sem)->acquire();
  }
}

void wake(waiter* w) {
  if (w->owner) {
    auto* owner = static_cast<worker*>(w->owner);
    auto* f = static_cast<fiber_rec*>(w->fiber);
    owner->make_ready(f);
  } else {
    static_cast<std::binary_semaphore*>(w->thread_sem)->release();
  }
}

}  // namespace rill::detail
