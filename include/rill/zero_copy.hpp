// Active messages whose rill::view arguments the network reads in place (rill/am.hpp sends a
// copy). Their completion is an event, so this is the events layer's part of active messages.
//
//   rill::event sent = rill::am::send_zero_copy(rank, fn, rill::view(v));  // v unchanged until sent
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "rill/am.hpp"
#include "rill/event.hpp"

namespace rill::detail {

// am_send_bytes for a payload whose views' elements are `lent` (serialize_lending): a large one
// leaves with the network reading them in place; returns when they may be reused.
event am_send_lent(int dest, std::uint32_t id, std::vector<std::byte>&& bytes, std::vector<lent_piece>&& lent);
}  // namespace rill::detail

namespace rill::am {

// send() without copying the elements of its rill::view arguments into the message: the network
// reads them from the caller's memory, which must stay unchanged until the returned event
// triggers (source completion, as UPC++'s source_cx). The handler sees the views as with send().
// A payload at or below the large-payload threshold (--rill:large-bytes) is copied like any
// other, and so is one to this rank or through a node ring; the event has then triggered already.
template <class F, class... Args>
event send_zero_copy(int dest, F&& fn, Args&&... args) {
  using Fn = std::decay_t<F>;
  detail::check_sendable<Fn, Args...>();
  static_assert((detail::is_view<std::decay_t<Args>>::value || ...),
                "rill::am::send_zero_copy: no rill::view argument, nothing to leave in place (use send)");
  detail::check_captures(dest, fn);
  using H = detail::am_handler<Fn, std::decay_t<Args>...>;
  detail::check_payload_before_encoding(dest, H::fn_bytes, static_cast<const std::decay_t<Args>&>(args)...);
  std::vector<std::byte> buf(detail::am_payload_offset + H::fn_bytes);
  detail::store_callable<Fn>(buf.data() + detail::am_payload_offset, fn);
  std::vector<detail::lent_piece> lent;
  detail::serialize_lending(buf, lent, static_cast<const std::decay_t<Args>&>(args)...);
  return detail::am_send_lent(dest, detail::handler_id<H>::value, std::move(buf), std::move(lent));
}

}  // namespace rill::am
