#include "scheduler/fiber.hpp"

#include <pthread.h>

namespace rill::detail {

namespace bc = boost::context::detail;

namespace {

void trampoline(bc::transfer_t t) {
  after_switch(nullptr);
  auto* h = static_cast<fiber_handoff*>(t.data);
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

void exit_fiber(fiber_rec* self, fiber_rec* to) {
  before_switch(to, nullptr);  // a null fake-stack slot tells ASan this stack is finished
  fiber_handoff h{self, to};
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
