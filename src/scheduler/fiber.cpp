#include "scheduler/fiber.hpp"

#include <pthread.h>

#include <utility>

#if RILL_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#if RILL_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace rill::detail {

namespace ctx = boost::context;

void init_thread_fiber(fiber_rec& main) {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    main.stack_bottom = addr;
    main.stack_size = size;
    pthread_attr_destroy(&attr);
  }
#if RILL_TSAN
  main.tsan_fiber = __tsan_get_current_fiber();
#endif
}

void destroy_thread_fiber(fiber_rec&) {}

void fiber_created(fiber_rec& f, const void* stack_bottom, std::size_t size) {
  f.stack_bottom = stack_bottom;
  f.stack_size = size;
#if RILL_TSAN
  f.tsan_fiber = __tsan_create_fiber(0);
#endif
}

void fiber_destroyed([[maybe_unused]] fiber_rec& f) {
#if RILL_TSAN
  if (f.tsan_fiber) __tsan_destroy_fiber(f.tsan_fiber);
  f.tsan_fiber = nullptr;
#endif
}

void switch_fiber(fiber_rec* from, fiber_rec* to) {
#if RILL_ASAN
  void* fake_stack = nullptr;  // this fiber's fake stack, kept on its own stack while it is away
  __sanitizer_start_switch_fiber(&fake_stack, to->stack_bottom, to->stack_size);
#endif
#if RILL_TSAN
  __tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
  std::move(to->cont).resume_with([from](ctx::fiber&& prev) {
    from->cont = std::move(prev);
    return ctx::fiber{};
  });
#if RILL_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

void fiber_started() {
#if RILL_ASAN
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
}

void fiber_finishing([[maybe_unused]] fiber_rec* to) {
#if RILL_ASAN
  // A null save slot tells ASan this stack is going away.
  __sanitizer_start_switch_fiber(nullptr, to->stack_bottom, to->stack_size);
#endif
#if RILL_TSAN
  __tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
}

}  // namespace rill::detail
