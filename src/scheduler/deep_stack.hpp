// Deep calls: code that needs a large stack, run from a fiber with a small one.
//
// Fiber stacks are small (--rill:stack, 64 KiB by default): enough for Rill's own code, not for
// every library a worker calls into. MPICH 4.0's UCX path, for one, packs a non-contiguous send
// into a 128 KiB buffer on the stack of whichever MPI call moves it. The MPI transport makes its
// MPI calls through deep_call: on a worker's fiber that switches to the thread's deep-stack fiber
// (created on first use, deep_stack_bytes with a guard page), runs the work there and switches
// back -- two fiber switches per call, paid only by code that asks.
#pragma once

#include <cstddef>

namespace rill::detail {

inline constexpr std::size_t deep_stack_bytes = std::size_t{1} << 20;

// Runs work(arg) on a stack of at least deep_stack_bytes: where it is called when the thread
// already runs on one (a thread's own stack, a large fiber stack, a deep call), otherwise on the
// calling thread's deep-stack fiber. An exception thrown by the work reaches the caller. The
// work must not wait or yield (it runs off the worker's books: the worker still sees the fiber
// that called deep_call as the running one).
void deep_call(void (*work)(void* arg), void* arg);

}  // namespace rill::detail
