#include "messages/messenger.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "messages/wire_format.hpp"
#include "rill/error.hpp"

namespace rill::detail {

// A message's length travels as 32 bits (wire_format.hpp), and a transport may carry less (MPI
// counts an int of bytes).
std::size_t messenger::max_payload() const {
  return std::min<std::size_t>(std::numeric_limits<std::uint32_t>::max(),
                               max_buffer_bytes() - wire::single_prefix_bytes);
}

void messenger::check_payload_fits(std::size_t payload) const {
  if (payload > max_payload())
    throw rill::misuse_error(
        fmt::format("rill: a message payload of {} bytes is larger than a message carries ({} bytes; see "
                    "rill::am::max_payload_bytes)",
                    payload, max_payload()));
}

void messenger::check_destination(int dest) const {
  if (dest < 0 || dest >= size_)
    throw rill::misuse_error(fmt::format("rill::am::send to rank {}, but the ranks are 0..{}", dest, size_ - 1));
}

}  // namespace rill::detail
