// Reservations: Realm's deferred locks, whose ownership migrates between ranks with a payload.
//
//   rill::reservation r = rill::reservation::create(sizeof(counter));  // owned by this rank, no messages
//   rill::event granted = r.acquire(after);                              // never blocks
//   rill::event done = rill::proc::here().spawn(rill::after(granted), [r] { ++r.payload<counter>()->n; });
//   r.release(done);                                                     // releases once `done` triggers
//
// acquire() returns the grant event: it triggers once the calling rank holds the reservation
// (exclusively; acquire_shared() for readers, who share it on one rank). release(after) gives it up once `after` has
// triggered; it never blocks. Acquire and release on the same rank: the grant is to the rank, and release is checked
// against what the rank holds. A chain of events must lead from the grant to its release, as in Realm.
//
// The payload (up to 4 KiB) is a block of bytes that travels with ownership: payload<T>() is the
// calling rank's copy, coherent while this rank holds the reservation.
//
// Poisoning: an acquire whose `after` is poisoned does not acquire; its grant is poisoned with the
// same cause. A release whose `after` is poisoned still releases (otherwise the reservation would
// stay held forever), except that it first pairs with an acquire of this rank that was skipped
// because of poison: so the usual chain acquire(bad) → task → release(task) leaves the
// reservation as it found it. See docs/reservations.md for the migration protocol.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rill/event.hpp"

namespace rill {

namespace detail {
class reservation_table;
}

class reservation {
 public:
  // The largest payload, in bytes.
  static constexpr std::size_t max_payload_bytes = 4096;

  // The null reservation (operations on it throw rill::misuse_error).
  constexpr reservation() = default;

  // A new reservation owned by the calling rank with a zero-filled payload of `payload_bytes`
  // (more than max_payload_bytes is a rill::misuse_error). No communication.
  static reservation create(std::size_t payload_bytes = 0);

  // Requests the reservation for the calling rank once `after` has triggered; returns the event
  // that triggers when the rank holds it (poisoned, without acquiring, when `after` is poisoned or
  // the reservation was destroyed meanwhile). Never blocks.
  event acquire(event after = event::none()) const;
  // The same for a reader: readers on the rank that owns the reservation hold it together (their
  // grants trigger together), a writer (acquire) holds it alone. Readers on different ranks take
  // turns, as ownership moves with the payload. A reader queued behind a writer, or behind another
  // rank's request, waits for it; the readers queued right behind a reader are granted with it.
  // Readers must not write the payload. Released with release(), like acquire.
  event acquire_shared(event after = event::none()) const;
  // Releases the reservation held by the calling rank once `after` has triggered. Never blocks.
  // Throws rill::misuse_error when this rank has no acquire left to release.
  void release(event after = event::none()) const;
  // Destroys the reservation once `after` has triggered and every acquire its owner knows of has
  // been granted and released. Later operations on this rank throw rill::misuse_error; acquires
  // from other ranks that reach it afterwards get a poisoned grant.
  void destroy(event after = event::none()) const;

  // This rank's copy of the payload, coherent while this rank holds the reservation.
  void* payload_data() const;
  template <class T>
  T* payload() const {
    static_assert(std::is_trivially_copyable_v<T>, "rill::reservation::payload: the payload travels as bytes");
    check_payload_type(sizeof(T), alignof(T));
    return static_cast<T*>(payload_data());
  }

  std::size_t payload_bytes() const { return bytes_; }
  // The rank that created the reservation (its first owner).
  int creator() const { return static_cast<int>(creator_); }
  bool is_null() const { return id_ == 0; }
  std::uint64_t id() const { return id_; }

  friend bool operator==(const reservation&, const reservation&) = default;

 private:
  friend class detail::reservation_table;
  constexpr reservation(std::uint32_t creator, std::uint32_t bytes, std::uint64_t id)
      : creator_(creator), bytes_(bytes), id_(id) {}
  void check_payload_type(std::size_t size, std::size_t align) const;

  std::uint32_t creator_ = 0;
  std::uint32_t bytes_ = 0;
  std::uint64_t id_ = 0;  // unique per creator, never reused; 0: null
};
static_assert(std::is_trivially_copyable_v<reservation> && sizeof(reservation) == 16);

// Counters of the calling rank's reservations.
struct reservation_counts {
  std::uint64_t created = 0;             // reservations created here
  std::uint64_t known = 0;               // reservations this rank has a record of
  std::uint64_t grants = 0;              // acquires granted on this rank
  std::uint64_t requests_sent = 0;       // requests for ownership sent to a presumed owner
  std::uint64_t requests_forwarded = 0;  // requests this rank passed on because it no longer owned
  std::uint64_t transfers_sent = 0;      // ownership (with payload and waiters) given to another rank
  std::uint64_t transfers_received = 0;
};
reservation_counts reservation_stats();

}  // namespace rill
