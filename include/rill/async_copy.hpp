// Copies between global pointers (rill/global_ptr.hpp), deferred: HabaneroUPC++'s async_copy.
//
//   rill::future<void> done = rill::async_copy(src, dst, n);          // n elements, any two ranks
//   rill::async_copy(src, dst, n, /*after=*/ready).then([] { ... });   // starts once `ready` triggers
//
// The copy starts once `after` has triggered and the future is ready once every byte is at dst.
// Source and destination may be on any ranks, the calling one included. Memory the calling rank
// can address is copied directly; otherwise the bytes travel in messages, straight from the
// source's rank to the destination's rank. Large copies go in 4 MiB pieces. Inside
// rill::finish, the copy belongs to the scope: finish returns only once it is complete.
//
// Errors are values: a range outside its owner's segment (checked at the owner), or a poisoned
// `after`, poisons the future, and get()/wait() throw rill::poisoned_error naming the cause. A rank
// that does not exist, or a null pointer, throws rill::misuse_error at the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rill/event.hpp"
#include "rill/future.hpp"
#include "rill/global_ptr.hpp"

namespace rill {

namespace detail {
future<void> copy_bytes(int src_rank, std::uintptr_t src, int dst_rank, std::uintptr_t dst, std::size_t bytes,
                        event after);
}  // namespace detail

template <class S, class T>
requires std::is_same_v<std::remove_const_t<S>, T> future<void> async_copy(global_ptr<S> src, global_ptr<T> dst,
                                                                           std::size_t count,
                                                                           event after = event::none()) {
  return detail::copy_bytes(src.where(), src.tagged_address(), dst.where(), dst.tagged_address(), count * sizeof(T),
                            after);
}

}  // namespace rill
