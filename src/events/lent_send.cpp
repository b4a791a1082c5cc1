// rill::am::send of a payload with rill::view parts: a large one leaves without a copy, and its
// completion (the lent bytes may be reused) is an event, so this lives on the events layer.
#include <vector>

#include "messages/message_flow.hpp"
#include "messages/messenger.hpp"
#include "messages/wire_format.hpp"
#include "rill/event.hpp"
#include "rill/zero_copy.hpp"

namespace rill::detail {

event am_send_lent(int dest, std::uint32_t id, std::vector<std::byte>&& bytes, std::vector<lent_piece>&& lent) {
  messenger& m = current_messenger("rill::am::send");
  m.check_destination(dest);
  std::size_t lent_bytes = 0;
  for (const auto& piece : lent) lent_bytes += piece.bytes.size();
  const std::size_t payload = bytes.size() - am_payload_offset + lent_bytes;
  m.check_payload_fits(payload);
  lent_buffer b;
  b.parts.reserve(2 * lent.size() + 1);  // an owned part around every lent piece
  std::size_t from = 0;
  for (const auto& piece : lent) {
    b.parts.emplace_back(bytes.data() + from, piece.at - from);
    b.parts.push_back(piece.bytes);
    from = piece.at;
  }
  b.parts.emplace_back(bytes.data() + from, bytes.size() - from);
  if (payload <= m.large_bytes()) {  // a small message: copied into an aggregation buffer
    am_send_bytes(dest, id, b.gather());
    return event::none();
  }
  worker_counters::bump(current_worker()->counters().messages_sent);
  const std::uint32_t sequence = m.agg().take_single_sequence(dest);
  wire::frame_single(bytes, static_cast<std::uint32_t>(m.id()), sequence, static_cast<std::uint16_t>(id), payload);
  trace::instant<trace::kind::message_send>(message_flow(m.id(), dest, sequence), static_cast<std::uint64_t>(dest),
                                            payload);
  b.owned = std::move(bytes);  // (the parts that point into it stay valid: its storage moves along)
  const user_event sent = user_event::create();
  b.done = [sent] { sent.trigger(); };
  m.out().transmit_lent(dest, std::move(b));
  return sent;
}

}  // namespace rill::detail
