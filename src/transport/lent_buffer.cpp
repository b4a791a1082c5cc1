// Zero-copy sends where the network cannot read in place: the parts are copied into one buffer.
#include "transport/transport.hpp"

namespace rill::detail {

std::size_t lent_buffer::size() const {
  std::size_t n = 0;
  for (const auto& p : parts) n += p.size();
  return n;
}

buffer lent_buffer::gather() const {
  buffer b;
  b.reserve(size());  // (no zero-fill of bytes about to be overwritten)
  for (const auto& p : parts) b.insert(b.end(), p.begin(), p.end());
  return b;
}

bool endpoint::try_send_lent(int dest, lent_buffer& b) {
  buffer copy = b.gather();
  if (!try_send(dest, copy)) return false;
  auto done = std::move(b.done);
  b = {};
  if (done) done();
  return true;
}

}  // namespace rill::detail
