// One rank's reservations: the record it keeps of every reservation it has seen, and the handlers
// of the migration protocol (Realm §6.1). Read src/sync/README.md for the invariants.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/small_vector.hpp"
#include "common/spinlock.hpp"
#include "rill/event.hpp"
#include "rill/reservation.hpp"

namespace rill::detail {

class reservation_table {
 public:
  // Local grants in a row while another rank waits, before ownership moves on anyway: local
  // waiters are preferred (fewer transfers, Realm's throughput argument) but never forever.
  static constexpr std::uint32_t max_local_streak = 32;

  reservation_table(int me, int ranks) : me_(me), ranks_(ranks) {}
  reservation_table(const reservation_table&) = delete;
  reservation_table& operator=(const reservation_table&) = delete;

  // The public API, called on this rank.
  reservation create(std::size_t payload_bytes);
  // shared: a reader's acquire (readers on the owning rank hold it together).
  event acquire(reservation r, event after, bool shared);
  void release(reservation r, event after);
  void destroy(reservation r, event after);
  void* payload(reservation r);
  reservation_counts counts();

  // Message handlers (run on this rank; `from` is the sender).
  void on_request(reservation r, int requester);
  void on_transfer(reservation r, int from, const std::vector<std::byte>& payload,
                   const std::vector<std::int32_t>& queue, bool destroy_pending);
  void on_destroy(reservation r, int from);
  void on_destroyed(reservation r);
  // From r's creator, which never made r (a handle built from bits or kept from another run).
  void on_unknown(reservation r);

 private:
  struct record;

  // An acquire or a release waiting for its precondition event. Each one sits on that event's
  // waiter list; once it has run, its node goes back to its record (under the record's lock, which
  // the step takes anyway) for the next acquire or release of that reservation on this rank: the
  // grant path allocates nothing.
  // Small (64 bytes; packed, not aligned to lines, measured faster in R3): a chain of N acquires
  // keeps 2N of them waiting.
  struct deferred_op final : event_waiter {
    deferred_op() { fn = &run_deferred; }
    record* rec = nullptr;
    event grant;  // an acquire's grant
    bool release = false;
    bool shared = false;
  };
  static void run_deferred(event_waiter* w, bool discard);

  // What this rank knows of one reservation. Every rank keeps one per reservation it has seen;
  // fields marked "owner" mean something only while `owner` is set.
  struct record {
    record(reservation_table* t, reservation r) : table(t), self(r) {}
    record(const record&) = delete;
    record& operator=(const record&) = delete;
    ~record() { drop_spare_ops(); }
    reservation_table* const table;
    const reservation self;
    spinlock m;                     // held for a few instructions per step: a mutex's calls cost more than the step
    int hint = 0;                   // the rank believed to own it: this rank when owner, else who it was given to
    bool owner = false;             // this rank owns it
    std::uint32_t holders = 0;      // owner: this rank's acquires granted and not yet released
    bool held_shared = false;       // owner, holders > 0: they are readers
    bool requested = false;         // not owner: one request of this rank is on its way or queued at the owner
    bool destroy_pending = false;   // owner: destroy once nobody holds or waits
    bool destroyed = false;         // destroyed (this rank is the tombstone, or was told so)
    bool destroyed_here = false;    // destroy() was called on this rank: later calls are misuse
    bool buffered_destroy = false;  // a destroy reached this rank while it awaited ownership
    poison_ptr unknown;             // its creator never made it (on_unknown): why every later call fails
    std::uint32_t streak = 0;       // owner: local grants in a row while `remote` was not empty
    std::int64_t outstanding = 0;   // acquire() calls on this rank minus release() calls
    std::uint64_t skipped = 0;      // acquires of this rank that did not acquire (poisoned), unpaired
    std::uint32_t bytes = 0;
    std::unique_ptr<std::byte[]> payload;  // this rank's copy (operator new's alignment)
    struct waiting {
      event grant;
      bool shared;
    };
    std::deque<waiting> local;  // this rank's acquires not yet granted, in order
    std::deque<int> remote;     // owner: ranks with a request, in arrival order
    std::vector<int> buffered;  // requests that reached this rank while it awaited ownership
    // Nodes of deferred operations that have run, linked through `next`: as many as this rank
    // ever had waiting at once for this reservation, as the event table keeps its peak of slots.
    event_waiter* spare_ops = nullptr;

    // Under m: a node for a new deferred operation, and one back after it has run.
    deferred_op* take_op();
    void give_back(deferred_op* op);
    void drop_spare_ops();
  };

  // What a step decided under the record's lock, done after it is released (a send can suspend
  // the fiber, a trigger runs waiters that may come back here).
  struct outbox {
    small_vector<event, 4> grants;  // to trigger (one, most often: no allocation per grant)
    std::vector<event> poisoned;
    poison_ptr poison;
    int transfer_to = -1;
    std::vector<std::byte> payload;
    std::vector<std::int32_t> queue;
    bool transfer_destroy = false;
    int request_to = -1;
    int forward_request_to = -1;  // with forward_from
    int forward_from = -1;
    int destroy_to = -1;
    int destroy_from = -1;
    std::vector<int> tell_destroyed;
    bool tell_unknown = false;  // tell_destroyed's ranks are told that r does not exist instead
  };

  static std::uint64_t key_of(reservation r) { return (static_cast<std::uint64_t>(r.creator()) << 44) | r.id(); }
  // The record of r, created on first sight (hint: the creator). Throws misuse_error naming
  // `what` for the null reservation, an unknown creator, or one this rank's creator never made.
  record& find(reservation r, const char* what);
  // Under rec.m, for a call of the API: throws misuse_error naming `what` when r turned out not to
  // exist or was destroyed from this rank.
  static void check_api_use(const record& rec, reservation r, const char* what);
  // find() without the last check: nullptr when this rank is r's creator and never made it.
  record* lookup(reservation r, const char* what);
  void allocate_payload(record& rec, std::uint32_t bytes);

  // `spent`: the deferred operation that called, given back to rec under the step's lock.
  // Puts an acquire (release = false, with its grant) or a release of rec's reservation behind `after`, in `op`
  // (a spare node of rec, or nullptr for a new one).
  void defer(event after, deferred_op* op, record& rec, bool release, event grant, bool shared);
  void do_acquire(reservation r, record& rec, event grant, bool shared, deferred_op* spent = nullptr);
  // Returns false when this rank does not hold r (and has no skipped acquire to pair with).
  bool do_release(reservation r, record& rec, bool poisoned, deferred_op* spent = nullptr);
  void do_destroy(reservation r, record& rec, int from);
  // The owner's reservation is free: hand it to the next local waiter (with the readers queued
  // right behind a reader), else the first remote one (with the payload and the other remote
  // waiters), else keep it idle or finish a destroy.
  void hand_on(reservation r, record& rec, outbox& out);
  void finish_destroy(record& rec);
  void send(reservation r, outbox& out);
  void send_messages(reservation r, outbox& out);  // all but the grants
  // Ends every wait for r on this rank with `cause` (default: r was destroyed) and passes the news
  // on to the ranks whose requests this rank held.
  void poison_destroyed(reservation r, record& rec, outbox& out, poison_ptr cause = nullptr);
  // For a message from `to` about r: r's record, or nullptr after answering `to` that this rank,
  // r's creator, never made it (the sender's waits fail).
  record* find_or_refuse(reservation r, int to, const char* what);

  const int me_;
  const int ranks_;

  static constexpr int shard_count = 16;
  struct shard {
    spinlock m;  // a lookup's few instructions
    std::unordered_map<std::uint64_t, std::unique_ptr<record>> records;
  };
  std::array<shard, shard_count> shards_;

  std::atomic<std::uint64_t> next_id_{1};
  std::atomic<std::uint64_t> created_{0};
  std::atomic<std::uint64_t> grants_{0};
  std::atomic<std::uint64_t> requests_sent_{0};
  std::atomic<std::uint64_t> requests_forwarded_{0};
  std::atomic<std::uint64_t> transfers_sent_{0};
  std::atomic<std::uint64_t> transfers_received_{0};
};

}  // namespace rill::detail
