// Runtime-internal control messages: like active messages, but flagged so that termination
// detection does not count them, flushed at once, and run on the progress thread where a rank has
// one (their handlers do not wait).
#pragma once

#include <cstring>

#include "messages/messenger.hpp"
#include "messages/wire_format.hpp"
#include "rill/am.hpp"

namespace rill::detail {

template <class F, class... Args>
void control_send(messenger& from, int dest, F, Args... args) {
  static_assert(std::is_empty_v<F> && (std::is_trivially_copyable_v<Args> && ...));
  using H = am_inline_handler<F, Args...>;
  const auto id = static_cast<std::uint16_t>(handler_id<H>::value | wire::control_bit);
  constexpr std::size_t bytes = (std::size_t{0} + ... + sizeof(Args));
  std::byte* out = from.agg().reserve(dest, id, bytes);
  std::size_t at = 0;
  ((std::memcpy(out + at, &args, sizeof(Args)), at += sizeof(Args)), ...);
  from.agg().mark_control(dest);
  from.agg().commit(dest);
  from.agg().flush(dest);
}

}  // namespace rill::detail
