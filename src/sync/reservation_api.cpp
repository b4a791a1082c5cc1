// The non-template half of rill::reservation: each call goes to the calling rank's table.
#include <fmt/format.h>

#include "rill/error.hpp"
#include "rill/reservation.hpp"
#include "sync/reservation_table.hpp"
#include "sync/sync_module.hpp"

namespace rill {

namespace {
detail::reservation_table& table(const char* what) { return detail::sync_here(what).reservations(); }
}  // namespace

reservation reservation::create(std::size_t payload_bytes) {
  return table("rill::reservation::create").create(payload_bytes);
}

event reservation::acquire(event after) const {
  return table("rill::reservation::acquire").acquire(*this, after, false);
}

event reservation::acquire_shared(event after) const {
  return table("rill::reservation::acquire_shared").acquire(*this, after, true);
}

void reservation::release(event after) const { table("rill::reservation::release").release(*this, after); }

void reservation::destroy(event after) const { table("rill::reservation::destroy").destroy(*this, after); }

void* reservation::payload_data() const { return table("rill::reservation::payload").payload(*this); }

void reservation::check_payload_type(std::size_t size, std::size_t align) const {
  if (size > bytes_) {
    throw misuse_error(fmt::format(
        "rill::reservation::payload: a type of {} bytes does not fit the payload of {} bytes", size, bytes_));
  }
  if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
    throw misuse_error(fmt::format("rill::reservation::payload: alignment {} exceeds {}", align,
                                   std::size_t{__STDCPP_DEFAULT_NEW_ALIGNMENT__}));
  }
}

reservation_counts reservation_stats() { return table("rill::reservation_stats").counts(); }

}  // namespace rill
