// One-sided puts and gets through global pointers (rill/global_ptr.hpp), deferred: each starts
// once `after` has triggered and returns a future that is ready when it is complete.
//
//   rill::rput(3.5, p).wait();                                  // one value into p
//   double x = rill::rget(p).get();                             // one value from p
//   rill::rput(buf.data(), p, n);                               // n elements from a local buffer
//   rill::rget(p, buf.data(), n, /*after=*/ready);              // n elements into a local buffer
//   rill::rget_strided(p, 8, col.data(), 1, /*block=*/1, /*blocks=*/8);   // a column of an 8x8 tile
//
// Where the calling rank addresses the owner's segment (its own; on the local transport every
// rank's) a put or get is a load or store, done by the time the call returns when `after` is
// none. Otherwise it is one message to the owner, which checks the range against its segment (a
// range outside it poisons the future, naming it) and, for a get, one message back.
//
// Local buffers: a put reads its source when it starts (at the call when `after` is none, else
// when `after` triggers), a get writes its destination before its future is ready; keep them
// valid until then. Strided forms move `blocks` blocks of `block` elements; strides are in
// elements, at least `block`. A single-value put or get is not atomic with respect to
// rill::atomics on the same element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rill/detail/at_home.hpp"
#include "rill/event.hpp"
#include "rill/future.hpp"
#include "rill/global_ptr.hpp"

namespace rill {

namespace detail {
// The shape of a strided transfer, in bytes: `blocks` blocks of `block` bytes, `local_stride`
// apart in the local buffer and `remote_stride` apart at the global pointer.
struct transfer_shape {
  std::size_t block = 0;
  std::size_t blocks = 0;
  std::ptrdiff_t local_stride = 0;
  std::ptrdiff_t remote_stride = 0;
};
future<void> put_bytes(const void* src, int rank, std::uintptr_t dst, transfer_shape shape, event after);
future<void> get_bytes(int rank, std::uintptr_t src, void* dst, transfer_shape shape, event after);

template <class T>
transfer_shape shape_of(std::size_t block, std::size_t blocks, std::ptrdiff_t local_stride,
                        std::ptrdiff_t remote_stride) {
  const auto size = static_cast<std::ptrdiff_t>(sizeof(T));
  return {block * sizeof(T), blocks, local_stride * size, remote_stride * size};
}
}  // namespace detail

template <class T>
future<void> rput(std::type_identity_t<T> value, global_ptr<T> dst, event after = event::none()) {
  return detail::run_at_home<detail::serialised::no>(
      detail::home_op::rput, dst, after, [](T* t, T v) { *t = v; }, value);
}

template <class T>
future<std::remove_const_t<T>> rget(global_ptr<T> src, event after = event::none()) {
  return detail::run_at_home<detail::serialised::no>(detail::home_op::rget, src, after,
                                                     [](std::remove_const_t<T>* t) { return *t; });
}

template <class T>
future<void> rput(const T* src, global_ptr<T> dst, std::size_t count, event after = event::none()) {
  return detail::put_bytes(
      src, dst.where(), dst.tagged_address(),
      detail::shape_of<T>(count, 1, static_cast<std::ptrdiff_t>(count), static_cast<std::ptrdiff_t>(count)), after);
}

template <class T>
future<void> rget(global_ptr<T> src, std::remove_const_t<T>* dst, std::size_t count, event after = event::none()) {
  return detail::get_bytes(
      src.where(), src.tagged_address(), dst,
      detail::shape_of<T>(count, 1, static_cast<std::ptrdiff_t>(count), static_cast<std::ptrdiff_t>(count)), after);
}

template <class T>
future<void> rput_strided(const T* src, std::ptrdiff_t src_stride, global_ptr<T> dst, std::ptrdiff_t dst_stride,
                          std::size_t block, std::size_t blocks, event after = event::none()) {
  return detail::put_bytes(src, dst.where(), dst.tagged_address(),
                           detail::shape_of<T>(block, blocks, src_stride, dst_stride), after);
}

template <class T>
future<void> rget_strided(global_ptr<T> src, std::ptrdiff_t src_stride, std::remove_const_t<T>* dst,
                          std::ptrdiff_t dst_stride, std::size_t block, std::size_t blocks,
                          event after = event::none()) {
  return detail::get_bytes(src.where(), src.tagged_address(), dst,
                           detail::shape_of<T>(block, blocks, dst_stride, src_stride), after);
}

}  // namespace rill
