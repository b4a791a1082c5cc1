// A Dekker handshake whose sides run at very different rates: each side stores, then loads what
// the other stored, and at least one must see the other's store. Sequentially consistent stores,
// read-modify-writes and loads on both sides do it, at the price of a locked instruction on each
// store. Here the frequent side (an AGAS visit, rill/detail/gas_index.hpp) may store plainly and
// put only a compiler barrier before its loads, if the rare side (a block's freeze) issues a
// membarrier(2) system call between its store and its loads: that makes every running thread of
// every process that registered execute a full barrier before it returns, so either the frequent
// side's store was visible before the rare side loads, or the frequent side's loads come after
// that barrier and see the rare side's store. Where the kernel does not offer it, and under
// ThreadSanitizer (which does not model it), both sides stay sequentially consistent.
#pragma once

#include <atomic>

#if defined(__SANITIZE_THREAD__)
#define RILL_ASYMMETRIC_FENCES 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RILL_ASYMMETRIC_FENCES 0
#endif
#endif
#ifndef RILL_ASYMMETRIC_FENCES
#define RILL_ASYMMETRIC_FENCES 1
#endif

namespace rill::detail {

inline std::atomic<bool> light_fences_enabled{false};

// Registers the calling process for membarrier(2) and, if the kernel took it, lets the frequent
// side store plainly from now on. Once per process; later calls return the first answer. Every
// process whose threads may be on either side calls it before the handshakes start (the kernel
// of one machine answers every process alike, so the processes of a node agree).
bool enable_light_fences();

// The frequent side's store, ordered before the loads that follow it (sequentially consistent
// loads).
template <class T>
inline void store_before_loads(std::atomic<T>& a, T v) {
#if RILL_ASYMMETRIC_FENCES
  if (light_fences_enabled.load(std::memory_order_relaxed)) {
    a.store(v, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return;
  }
#endif
  a.store(v, std::memory_order_seq_cst);
}

// The rare side, between its sequentially consistent store (or read-modify-write) and its
// sequentially consistent loads: a membarrier(2) where the frequent side may store plainly
// (about a microsecond), nothing otherwise.
void heavy_fence();

}  // namespace rill::detail
