// A fiber: a Boost.Context continuation plus what the sanitizers need to follow stack switches.
#pragma once

#include <boost/context/fiber.hpp>

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define RILL_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define RILL_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RILL_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define RILL_TSAN 1
#endif
#endif

namespace rill::detail {

struct fiber_rec {
  boost::context::fiber cont;       // where to resume this fiber while it is not running
  const void* stack_bottom = nullptr;  // lowest address of its stack (for ASan)
  std::size_t stack_size = 0;
  void* tsan_fiber = nullptr;
  fiber_rec* next = nullptr;        // ready-queue link
};

// Fills in the calling thread's own stack as a fiber record (the thread's original context).
void init_thread_fiber(fiber_rec& main);
void destroy_thread_fiber(fiber_rec& main);

// Suspends `from` (the running fiber) and runs `to`.
void switch_fiber(fiber_rec* from, fiber_rec* to);

// Called first thing in a new fiber's entry function.
void fiber_started();
// Called by a fiber about to finish, right before it returns `to`'s continuation.
void fiber_finishing(fiber_rec* to);
// Sanitizer bookkeeping for a new fiber record, given its stack, and for its end.
void fiber_created(fiber_rec& f, const void* stack_bottom, std::size_t size);
void fiber_destroyed(fiber_rec& f);

}  // namespace rill::detail
