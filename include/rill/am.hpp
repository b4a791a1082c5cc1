// Active messages: run a callable on another rank.
//
//   rill::am::send(rank, fn, args...);
//
// `fn` is a function, a capture-less lambda, or a lambda whose captures are trivially copyable; the
// same binary runs on every rank, so no registration is needed. `args` are copied with memcpy when
// trivially copyable and serialized with cereal otherwise (strings, vectors, maps, tuples, types with
// a serialize() member). Messages to one destination are aggregated into buffers that leave when
// full, when their oldest message is older than the age threshold, when the sender's workers go
// idle, or on flush(). Delivery is exactly once, in no guaranteed order, even between one pair.
#pragma once

#include <cstring>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rill/detail/handler_table.hpp"
#include "rill/serialization.hpp"

namespace rill::am {

// The rank that sent the message whose handler is running on this thread (-1 outside a handler).
int sender();

// Sends every buffered message of the calling rank now, whatever the thresholds.
void flush();

// The largest payload (serialized arguments and captures) one message carries: 4 GiB - 1 bytes, or
// less where the transport carries less (under mpi 2^31 - 25: MPI counts an int of bytes, and the
// message header takes 24). send and send_zero_copy throw rill::misuse_error for a larger one,
// before anything is sent. Call it from a Rill task.
std::size_t max_payload_bytes();

}  // namespace rill::am

namespace rill::detail {

// Reserves `bytes` of payload for handler `id` to `dest`; write them, then call am_commit().
// Between the two calls the destination's buffer is locked: write only, do not call Rill.
std::byte* am_reserve(int dest, std::uint32_t id, std::size_t bytes);
// Throws rill::misuse_error when a payload of at least `bytes` cannot travel to `dest`.
void am_check_payload(int dest, std::size_t bytes);
// Before encoding a message's arguments: refuses one that is known to be too large (see
// payload_check_bytes) without copying it first.
template <class... Args>
void check_payload_before_encoding(int dest, std::size_t fn_bytes, const Args&... args) {
  const std::size_t least = fn_bytes + (std::size_t{0} + ... + least_encoded_bytes(args));
  if (least > payload_check_bytes) [[unlikely]]
    am_check_payload(dest, least);
}
void am_commit(int dest);
// Sends a serialized payload that starts `am_payload_offset` bytes into `bytes` (the room in front
// lets a large payload leave as a buffer of its own without being copied); small payloads are
// copied into the destination's aggregation buffer.
inline constexpr std::size_t am_payload_offset = 24;
void am_send_bytes(int dest, std::uint32_t id, std::vector<std::byte>&& bytes);
// A per-thread scratch vector for serialization, reused to avoid an allocation per message.
std::vector<std::byte>& am_scratch();
// Throws rill::misuse_error when a word of the `bytes` of a callable sent to `dest`, another rank,
// holds an address on the sending task's stack: a local captured by reference, which means
// nothing on `dest` (under MPI; the local transport shares one address space and hides it).
void check_no_stack_captures(int dest, const void* bytes, std::size_t size);

// In a debug build of the program (NDEBUG unset, as UPC++'s debug codemode): checks the callable
// of every message to another rank for captured stack addresses; nothing in a release build.
template <class F>
void check_captures([[maybe_unused]] int dest, [[maybe_unused]] const F& fn) {
#ifndef NDEBUG
  if constexpr (!std::is_pointer_v<F> && !std::is_empty_v<F> && sizeof(F) >= sizeof(void*))
    check_no_stack_captures(dest, static_cast<const void*>(&fn), sizeof(F));
#endif
}

template <class F>
constexpr std::size_t callable_bytes() {
  if constexpr (std::is_pointer_v<F>)
    return sizeof(std::intptr_t);
  else if constexpr (std::is_empty_v<F>)
    return 0;
  else
    return sizeof(F);
}

template <class F>
void store_callable(std::byte* out, const F& fn) {
  if constexpr (std::is_pointer_v<F>) {
    const std::intptr_t off = code_offset(reinterpret_cast<const void*>(fn));
    std::memcpy(out, &off, sizeof off);
  } else if constexpr (!std::is_empty_v<F>) {
    std::memcpy(out, static_cast<const void*>(&fn), sizeof(F));
  }
}

template <class F>
F load_callable(const std::byte* in) {
  if constexpr (std::is_pointer_v<F>) {
    return reinterpret_cast<F>(const_cast<void*>(code_address(load_trivial<std::intptr_t>(in))));
  } else if constexpr (std::is_empty_v<F>) {
    alignas(F) std::byte storage[sizeof(F)] = {};
    return *std::launder(reinterpret_cast<F*>(storage));
  } else {
    return load_trivial<F>(in);
  }
}

template <class F, class... Args>
struct am_handler {
  static constexpr std::size_t fn_bytes = callable_bytes<F>();
  static constexpr std::size_t heap_args_bytes = 1024;

  static void invoke(const std::byte* p, std::size_t n) {
    if (n < fn_bytes) throw decode_error("payload shorter than its callable");
    F fn = load_callable<F>(p);
    p += fn_bytes;
    n -= fn_bytes;
    if constexpr (all_trivially_copyable<Args...>) {
      constexpr std::size_t expected = (std::size_t{0} + ... + sizeof(Args));
      if (n != expected) throw decode_error("payload size does not match the handler's arguments");
      std::size_t at = 0;
      if constexpr (expected > heap_args_bytes && (std::is_default_constructible_v<Args> && ...)) {
        // Large arguments go to the heap, not onto the handler's fiber stack (64 KiB by default).
        auto args = std::make_unique<std::tuple<Args...>>();
        std::apply(
            [&](auto&... e) { ((std::memcpy(static_cast<void*>(&e), p + at, sizeof(e)), at += sizeof(e)), ...); },
            *args);
        std::apply(fn, std::move(*args));
      } else {
        // Braced init guarantees left-to-right evaluation of the loads.
        std::tuple<Args...> args{load_next<Args>(p, at)...};
        std::apply(fn, std::move(args));
      }
    } else {
      std::apply(fn, deserialize_tuple<std::tuple<Args...>>(p, n));
    }
  }

  template <class T>
  static T load_next(const std::byte* p, std::size_t& at) {
    T v = load_trivial<T>(p + at);
    at += sizeof(T);
    return v;
  }
};

// The same, for a message that may run on the receiving rank's progress thread (am::send_inline).
template <class F, class... Args>
struct am_inline_handler : am_handler<F, Args...> {
  static constexpr bool on_progress = true;
};

// What am::send and am::send_zero_copy require of their callable (decayed) and arguments.
template <class Fn, class... Args>
constexpr void check_sendable() {
  static_assert(std::is_pointer_v<Fn> || std::is_trivially_copyable_v<Fn>,
                "rill::am::send ships functions and lambdas whose captures are trivially copyable; "
                "pass other data as arguments");
  static_assert(std::is_invocable_v<Fn&, std::decay_t<Args>&&...>,
                "rill::am::send: the callable cannot be called with these arguments");
  static_assert((sendable_value<std::decay_t<Args>> && ...),
                "rill: an argument of this message cannot be sent to another rank (see `Args` in the "
                "instantiation above): give its type a `template <class A> void serialize(A& a) { a(field, ...); }` "
                "member (cereal), make it trivially copyable, or send its fields instead");
}

}  // namespace rill::detail

namespace rill::detail {

// Sends fn(args...) to `dest` as a message of handler type H (am_handler or am_inline_handler).
template <class H, class Fn, class F, class... Args>
void send_as(int dest, F&& fn, Args&&... args) {
  check_sendable<Fn, Args...>();
  check_captures(dest, fn);
  const std::uint32_t id = handler_id<H>::value;
  if constexpr (all_trivially_copyable<std::decay_t<Args>...>) {
    constexpr std::size_t bytes = H::fn_bytes + (std::size_t{0} + ... + sizeof(std::decay_t<Args>));
    std::byte* out = am_reserve(dest, id, bytes);
    store_callable<Fn>(out, fn);
    std::size_t at = H::fn_bytes;
    ((std::memcpy(out + at, static_cast<const void*>(&args), sizeof(std::decay_t<Args>)),
      at += sizeof(std::decay_t<Args>)),
     ...);
    am_commit(dest);
  } else {
    check_payload_before_encoding(dest, H::fn_bytes, static_cast<const std::decay_t<Args>&>(args)...);
    std::vector<std::byte>& buf = am_scratch();
    buf.resize(am_payload_offset + H::fn_bytes);
    store_callable<Fn>(buf.data() + am_payload_offset, fn);
    serialize_into(buf, static_cast<const std::decay_t<Args>&>(args)...);
    am_send_bytes(dest, id, std::move(buf));
  }
}

}  // namespace rill::detail

namespace rill::am {

template <class F, class... Args>
void send(int dest, F&& fn, Args&&... args) {
  using Fn = std::decay_t<F>;
  detail::send_as<detail::am_handler<Fn, std::decay_t<Args>...>, Fn>(dest, std::forward<F>(fn),
                                                                     std::forward<Args>(args)...);
}

// As send, for a handler that the destination may run at once, on its progress thread
// (--rill:progress=thread), while every one of its workers runs a long task: what must not wait
// for them -- a reply, a counter, a flag. (With --rill:progress=worker it runs on a worker, as
// send's do.) Such a handler runs beside the rank's tasks, so it guards what it shares with them
// (atomics, a lock), and it must not wait: it may send messages, trigger events, count down a
// latch or spawn tasks, but a wait (rill::event::wait, a latch's wait, rill::yield) on the
// progress thread ends the program naming the handler. Rill's own protocols (events, reservations,
// finish, AGAS, remote operations, steals) send their messages this way.
template <class F, class... Args>
void send_inline(int dest, F&& fn, Args&&... args) {
  using Fn = std::decay_t<F>;
  detail::send_as<detail::am_inline_handler<Fn, std::decay_t<Args>...>, Fn>(dest, std::forward<F>(fn),
                                                                            std::forward<Args>(args)...);
}

}  // namespace rill::am
