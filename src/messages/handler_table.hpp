// The process-wide handler table (static, identical in every rank of one binary).
#pragma once

#include <cstddef>
#include <cstdint>

#include "rill/detail/handler_table.hpp"

namespace rill::detail {

std::size_t handler_count();
handler_fn handler_at(std::uint16_t id);
const char* handler_name(std::uint16_t id);
// Whether handler `id` may run on a progress thread (rill::am::send_inline, control messages).
bool handler_on_progress(std::uint16_t id);
// A hash of every handler's name in id order, combined with the binary's build id.
std::uint64_t build_fingerprint();

}  // namespace rill::detail
