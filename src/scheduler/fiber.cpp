#include "scheduler/fiber.hpp"

#include <pthread.h>

#if RILL_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#if RILL_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace rill::detail {

namespace bc = boost::context::detail;

namespace {

// Lives on the switching fiber's stack for the duration of a switch: the resumed side reads it
// first thing, while the switching fiber is certainly suspended.
struct handoff {
  fiber_rec* from;
  fiber_rec* to;
};

void before_switch([[maybe_unused]] fiber_rec* to, [[maybe_unused]] void** fake_stack) {
#if RILL_ASAN
  __sanitizer_start_switch_fiber(fake_stack, to->stack_bottom, to->stack_size);
#endif
#if RILL_TSAN
  __tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
}

void after_switch([[maybe_unused]] void* fake_stack) {
#if RILL_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

void trampoline(bc::transfer_t t) {
  after_switch(nullptr);
  auto* h = static_cast<handoff*>(t.data);
  h->from->ctx = t.fctx;
  fiber_rec* self = h->to;
  self->entry(self);  // never returns: the entry ends with exit_fiber()
  __builtin_trap();
}

}  // namespace

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

void make_fiber(fiber_rec& f, boost::context::stack_context stack) {
  f.stack = stack;
  f.stack_bottom = static_cast<char*>(stack.sp) - stack.size;
  f.stack_size = stack.size;
  f.ctx = bc::make_fcontext(stack.sp, stack.size, &trampoline);
#if RILL_TSAN
  f.tsan_fiber = __tsan_create_fiber(0);
#endif
}

void switch_fiber(fiber_rec* from, fiber_rec* to) {
  void* fake_stack = nullptr;  // this fiber's ASan fake stack, kept on its own stack while away
  before_switch(to, &fake_stack);
  handoff h{from, to};
  const bc::transfer_t t = bc::jump_fcontext(to->ctx, &h);
  // Resumed: store the context of whoever switched to us.
  auto* back = static_cast<handoff*>(t.data);
  back->from->ctx = t.fctx;
  after_switch(fake_stack);
}

void exit_fiber(fiber_rec* self, fiber_rec* to) {
  before_switch(to, nullptr);  // a null fake-stack slot tells ASan this stack is finished
  handoff h{self, to};
  bc::jump_fcontext(to->ctx, &h);
  __builtin_trap();  // nobody resumes an ended fiber
}

void forget_fiber([[maybe_unused]] fiber_rec& f) {
#if RILL_TSAN
  if (f.tsan_fiber) __tsan_destroy_fiber(f.tsan_fiber);
#endif
  f.tsan_fiber = nullptr;
  f.ctx = nullptr;
}

}  // namespace rill::detail
