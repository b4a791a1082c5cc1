// A fiber: a saved machine context (Boost.Context's fcontext, the layer its own fiber class is
// built on) plus what the sanitizers need to follow stack switches.
//
// Every switch passes the suspended fiber's record to the resumed one, which stores the suspended
// context in it before doing anything else; so a fiber's context is saved before any other thread
// can learn that it may be resumed (fibers only ever run on the worker that created them).
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <boost/context/stack_context.hpp>
#include <cstdint>

#include <cstddef>

#include "common/sanitizers.hpp"

#if RILL_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#if RILL_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace rill::detail {

// Sanitizers enlarge frames (ASan gives every local its own redzoned slot: one level of std::sort
// over events takes 3.5 KiB), so a stack size chosen for the plain build overflows under them.
// Fiber stacks are this many times --rill:stack in sanitizer builds.
#if defined(RILL_ASAN)
inline constexpr std::size_t sanitizer_stack_factor = 4;
#elif defined(RILL_TSAN)
inline constexpr std::size_t sanitizer_stack_factor = 2;
#else
inline constexpr std::size_t sanitizer_stack_factor = 1;
#endif

// What the layers above keep per running task; the scheduler only carries it (sync: scope is the
// task's finish_proxy, whose credit and errors go through task_scope_hooks; registrations are its
// phaser registrations; regions: launch_parent is the launched task whose sub-launches the
// fiber's launches are). A task run nested on the fiber sees none of them.
struct task_context {
  void* scope = nullptr;          // what task_scope_hooks act on; set by the worker around each task
  void* registrations = nullptr;  // non-null: the task is registered on something an inline task must not see
  void* launch_parent = nullptr;  // non-null: likewise
};

struct fiber_rec {
  boost::context::detail::fcontext_t ctx = nullptr;  // where to resume it while it is suspended
  boost::context::stack_context stack{};             // empty for a thread's own stack
  const void* stack_bottom = nullptr;                // lowest address of its stack (for ASan)
  std::size_t stack_size = 0;
  void* tsan_fiber = nullptr;
  void (*entry)(fiber_rec* self) = nullptr;  // what a new fiber runs; it must end in exit_fiber()
  void* owner = nullptr;                     // for the entry: the worker it belongs to
  fiber_rec* next = nullptr;                 // ready-queue link
  // The rank whose message handler runs on this fiber (-1: none). Per fiber, not per thread: a
  // handler that waits is resumed after other handlers ran on the same thread.
  int message_source = -1;
  std::uint16_t message_handler = 0;  // and its handler's id (for a crash's report)
  // How many rill::may_inline tasks run nested on this fiber now, each above its spawner's frames:
  // a wait among them that needs a spawner to go on is a deadlock (the hang report says so).
  std::uint32_t inline_depth = 0;
  // When the stretch of the task running on this fiber began (trace/hooks.hpp span_begin); 0: none.
  // A task that parks ends its stretch and starts another when resumed, so spans nest per worker.
  std::uint64_t trace_task_start = 0;
  // Where the closure of the task last started on this fiber lies: a hint for prefetching before
  // the fiber is resumed, never dereferenced (stale once that task ended).
  const void* task_data = nullptr;
  // What the layer above attaches to the task running on this fiber (task_context).
  task_context task;
};

// Describes the calling thread's own stack as a fiber record (the thread's original context).
void init_thread_fiber(fiber_rec& main);
// Prepares `f` to run f.entry(&f) on `stack` at its first switch.
void make_fiber(fiber_rec& f, boost::context::stack_context stack);

// Lives on the switching fiber's stack for the duration of a switch: the resumed side reads it
// first thing, while the switching fiber is certainly suspended.
struct fiber_handoff {
  fiber_rec* from;
  fiber_rec* to;
};

// What the sanitizers need told around a switch (nothing in other builds).
inline void before_switch([[maybe_unused]] fiber_rec* to, [[maybe_unused]] void** fake_stack) {
#if RILL_ASAN
  __sanitizer_start_switch_fiber(fake_stack, to->stack_bottom, to->stack_size);
#endif
#if RILL_TSAN
  __tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
}
inline void after_switch([[maybe_unused]] void* fake_stack) {
#if RILL_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

// Boost.Context's jump_fcontext, entered with a jump instead of a call. It ends with an indirect
// jump into the resumed fiber, not a return, so a call into it leaves an entry on the processor's
// return-address predictor that nothing takes off: every return the resumed fiber then makes (out
// of yield, park, the scheduling loop) is predicted from a stack one entry off, and mispredicted.
// That cost a switch between two fibers 13 ns where the switch itself takes 6 (M1). Here the
// return address is pushed by hand, so the predictor's stack stays in step with the real ones.
// Registers: jump_fcontext saves and restores the callee-saved ones on each side; the rest are
// clobbered as by a call. The red zone is stepped over, as the push would overwrite it.
inline boost::context::detail::transfer_t jump_to(boost::context::detail::fcontext_t to, void* data) {
#if defined(__x86_64__)
  register void* rdi asm("rdi") = to;
  register void* rsi asm("rsi") = data;
  register void* rax asm("rax");
  register void* rdx asm("rdx");
  asm volatile(
      "sub $128, %%rsp\n\t"
      "lea 1f(%%rip), %%rax\n\t"
      "push %%rax\n\t"
      "jmp jump_fcontext@PLT\n\t"
      "1:\n\t"
      "add $128, %%rsp"
      : "=a"(rax), "=d"(rdx), "+D"(rdi), "+S"(rsi)
      :
      : "rcx", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
        "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)",
        "st(5)", "st(6)", "st(7)");
  return {rax, rdx};
#else
  return boost::context::detail::jump_fcontext(to, data);
#endif
}

// Suspends `from` (the running fiber) and runs `to`. Inline: it is a sizeable part of the cost of
// a switch between two fibers that do little else.
inline void switch_fiber(fiber_rec* from, fiber_rec* to) {
  void* fake_stack = nullptr;  // this fiber's ASan fake stack, kept on its own stack while away
  before_switch(to, &fake_stack);
  fiber_handoff h{from, to};
  const boost::context::detail::transfer_t t = jump_to(to->ctx, &h);
  // Resumed: store the context of whoever switched to us.
  static_cast<fiber_handoff*>(t.data)->from->ctx = t.fctx;
  after_switch(fake_stack);
}
// Ends the running fiber `self` for good and runs `to`; `self`'s stack may be reused once `to` runs.
[[noreturn]] void exit_fiber(fiber_rec* self, fiber_rec* to);
// Sanitizer bookkeeping once an ended fiber's record is reused or dropped.
void forget_fiber(fiber_rec& f);

}  // namespace rill::detail
