#include "sync/reservation_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/log.hpp"
#include "rill/am.hpp"
#include "rill/error.hpp"
#include "sync/sync_module.hpp"

namespace rill::detail {

namespace {

reservation_table& table_here() { return sync_here("a reservation message").reservations(); }

std::string name_of(reservation r) { return fmt::format("reservation (rank {}, id {})", r.creator(), r.id()); }

poison_ptr destroyed_cause(reservation r, int rank) {
  return std::make_shared<const poison_info>(
      poison_info{name_of(r) + " was destroyed before this acquire reached it", rank, "reservation::acquire"});
}

// ---- messages ---------------------------------------------------------------------------------
// Every handler runs on a worker of the receiving rank.

// "Rank `requester` wants r": to the presumed owner, forwarded until it reaches the owner.
void send_request(int to, reservation r, int requester) {
  am::send_inline(
      to, [](reservation res, std::int32_t who) { table_here().on_request(res, who); }, r,
      static_cast<std::int32_t>(requester));
}

// Ownership, the payload and the queue of remote waiters, to the next owner.
void send_transfer(int to, reservation r, const std::vector<std::byte>& payload, const std::vector<std::int32_t>& queue,
                   bool destroy_pending) {
  if (payload.empty() && queue.empty()) {
    am::send_inline(
        to, [](reservation res, bool d) { table_here().on_transfer(res, am::sender(), {}, {}, d); }, r,
        destroy_pending);
  } else {
    am::send_inline(
        to,
        [](reservation res, bool d, const std::vector<std::byte>& p, const std::vector<std::int32_t>& q) {
          table_here().on_transfer(res, am::sender(), p, q, d);
        },
        r, destroy_pending, payload, queue);
  }
}

// "Destroy r" (issued on rank `from`): to the presumed owner, forwarded like a request.
void send_destroy(int to, reservation r, int from) {
  am::send_inline(
      to, [](reservation res, std::int32_t who) { table_here().on_destroy(res, who); }, r,
      static_cast<std::int32_t>(from));
}

// "r no longer exists": from the last owner to a rank whose request reached it too late.
void send_destroyed(int to, reservation r) {
  am::send_inline(
      to, [](reservation res) { table_here().on_destroyed(res); }, r);
}

// "r does not exist": from r's creator, which never made it, to a rank that sent it a request or
// a destroy for r.
void send_unknown(int to, reservation r) {
  am::send_inline(
      to, [](reservation res) { table_here().on_unknown(res); }, r);
}

poison_ptr unknown_cause(reservation r) {
  return std::make_shared<const poison_info>(
      poison_info{fmt::format("rank {} never created {}: the handle was not made by Rill in this run (built from "
                              "bits, or kept from another run)",
                              r.creator(), name_of(r)),
                  r.creator(), "reservation::acquire"});
}

}  // namespace

// ---- records ------------------------------------------------------------------------------------

reservation_table::record& reservation_table::find(reservation r, const char* what) {
  record* rec = lookup(r, what);
  if (!rec) throw misuse_error(fmt::format("{}: rank {} never created {}", what, me_, name_of(r)));
  return *rec;
}

void reservation_table::check_api_use(const record& rec, reservation r, const char* what) {
  if (rec.unknown) throw misuse_error(fmt::format("{}: {}", what, rec.unknown->reason));
  if (rec.destroyed_here) throw misuse_error(fmt::format("{}: {} was destroyed on this rank", what, name_of(r)));
}

reservation_table::record* reservation_table::lookup(reservation r, const char* what) {
  if (r.is_null()) throw misuse_error(fmt::format("{}: the null reservation", what));
  if (r.creator() < 0 || r.creator() >= ranks_ || r.payload_bytes() > reservation::max_payload_bytes ||
      r.id() >= (std::uint64_t{1} << 44)) {
    throw misuse_error(
        fmt::format("{}: {} is not a reservation of this program (ranks 0..{})", what, name_of(r), ranks_ - 1));
  }
  const std::uint64_t key = key_of(r);
  shard& sh = shards_[key % shard_count];
  std::lock_guard g(sh.m);
  auto it = sh.records.find(key);
  if (it == sh.records.end()) {
    if (r.creator() == me_) return nullptr;
    auto fresh = std::make_unique<record>(this, r);
    fresh->hint = r.creator();
    fresh->bytes = r.payload_bytes();
    it = sh.records.emplace(key, std::move(fresh)).first;
  }
  return it->second.get();
}

void reservation_table::allocate_payload(record& rec, std::uint32_t bytes) {
  rec.bytes = bytes;
  if (bytes == 0 || rec.payload) return;
  rec.payload = std::make_unique<std::byte[]>(bytes);  // zero-filled
}

reservation reservation_table::create(std::size_t payload_bytes) {
  if (payload_bytes > reservation::max_payload_bytes) {
    throw misuse_error(fmt::format("rill::reservation::create: a payload of {} bytes; at most {}", payload_bytes,
                                   reservation::max_payload_bytes));
  }
  const std::uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  if (id >= (std::uint64_t{1} << 44)) throw std::length_error("rill: too many reservations created on one rank");
  const reservation r(static_cast<std::uint32_t>(me_), static_cast<std::uint32_t>(payload_bytes), id);
  auto rec = std::make_unique<record>(this, r);
  rec->hint = me_;
  rec->owner = true;
  allocate_payload(*rec, static_cast<std::uint32_t>(payload_bytes));
  const std::uint64_t key = key_of(r);
  {
    shard& sh = shards_[key % shard_count];
    std::lock_guard g(sh.m);
    sh.records.emplace(key, std::move(rec));
  }
  created_.fetch_add(1, std::memory_order_relaxed);
  return r;
}

void* reservation_table::payload(reservation r) {
  record& rec = find(r, "rill::reservation::payload");
  std::lock_guard g(rec.m);
  check_api_use(rec, r, "rill::reservation::payload");
  if (rec.destroyed) throw misuse_error(fmt::format("rill::reservation::payload: {} was destroyed", name_of(r)));
  if (rec.bytes == 0) throw misuse_error(fmt::format("rill::reservation::payload: {} has no payload", name_of(r)));
  allocate_payload(rec, rec.bytes);
  return rec.payload.get();
}

// ---- the operations -----------------------------------------------------------------------------

event reservation_table::acquire(reservation r, event after, bool shared) {
  record& rec = find(r, "rill::reservation::acquire");
  deferred_op* op = nullptr;
  {
    std::lock_guard g(rec.m);
    check_api_use(rec, r, "rill::reservation::acquire");
    if (rec.destroyed) throw misuse_error(fmt::format("rill::reservation::acquire: {} was destroyed", name_of(r)));
    ++rec.outstanding;
    if (!after.is_none()) op = rec.take_op();
  }
  const event grant = event_create();
  if (after.is_none()) {
    do_acquire(r, rec, grant, shared);
    return grant;
  }
  defer(after, op, rec, false, grant, shared);
  return grant;
}

void reservation_table::defer(event after, deferred_op* op, record& rec, bool release, event grant, bool shared) {
  std::unique_ptr<deferred_op> owned(op ? op : new deferred_op);
  op = owned.get();
  op->rec = &rec;
  op->grant = grant;
  op->release = release;
  op->shared = shared;
  event_on_trigger(after, op);  // (throws for a handle that is not an event: the node is freed)
  owned.release();
}

void reservation_table::run_deferred(event_waiter* w, bool discard) {
  auto* op = static_cast<deferred_op*>(w);
  if (discard) {  // the rank is stopping: its records may be gone already
    delete op;
    return;
  }
  record& rec = *op->rec;
  reservation_table& t = *rec.table;
  const reservation r = rec.self;
  const event grant = op->grant;
  poison_ptr cause = std::move(op->cause);
  if (op->release) {
    if (!t.do_release(r, rec, cause != nullptr, op)) {
      fatal(
          "rill::reservation::release: a release of {} took effect on rank {}, which does not hold it: chain each "
          "release after its acquire's grant event",
          name_of(r), t.me_);
    }
    return;
  }
  if (cause) {
    // Poisoned precondition: no acquire; the release that follows pairs with this skip.
    {
      std::lock_guard g(rec.m);
      rec.give_back(op);
      ++rec.skipped;
    }
    event_poison(grant, cause);
    return;
  }
  t.do_acquire(r, rec, grant, op->shared, op);
}

reservation_table::deferred_op* reservation_table::record::take_op() {
  auto* op = static_cast<deferred_op*>(spare_ops);
  if (op) spare_ops = std::exchange(op->next, nullptr);
  return op;
}

void reservation_table::record::give_back(deferred_op* op) {
  if (destroyed) {
    delete op;
    return;
  }
  op->next = spare_ops;
  spare_ops = op;
}

void reservation_table::record::drop_spare_ops() {
  while (event_waiter* w = spare_ops) {
    spare_ops = w->next;
    delete static_cast<deferred_op*>(w);
  }
}

void reservation_table::do_acquire(reservation r, record& rec, event grant, bool shared, deferred_op* spent) {
  outbox out;
  {
    std::lock_guard g(rec.m);
    if (spent) rec.give_back(spent);
    if (rec.destroyed) {
      ++rec.skipped;
      out.poisoned.push_back(grant);
      out.poison = destroyed_cause(r, me_);
    } else if (rec.owner) {
      if (rec.holders == 0) {
        // Owner and free: no waiters can exist (hand_on would have served them).
        rec.holders = 1;
        rec.held_shared = shared;
        rec.streak = 0;
        out.grants.push_back(grant);
      } else if (shared && rec.held_shared && rec.local.empty() && rec.remote.empty()) {
        // Another reader joins the readers holding it; not past anyone waiting (so a writer, or
        // another rank, is not starved by a stream of readers).
        ++rec.holders;
        out.grants.push_back(grant);
      } else {
        rec.local.push_back({grant, shared});
      }
    } else {
      rec.local.push_back({grant, shared});
      if (!rec.requested) {
        rec.requested = true;
        out.request_to = rec.hint;
      }
    }
  }
  send(r, out);
}

void reservation_table::release(reservation r, event after) {
  record& rec = find(r, "rill::reservation::release");
  deferred_op* op = nullptr;
  {
    std::lock_guard g(rec.m);
    check_api_use(rec, r, "rill::reservation::release");
    if (rec.outstanding <= 0) {
      throw misuse_error(fmt::format(
          "rill::reservation::release: rank {} has no acquire of {} left to release (release on the rank that "
          "acquired, once per acquire)",
          me_, name_of(r)));
    }
    --rec.outstanding;
    if (!after.is_none()) op = rec.take_op();
  }
  if (after.is_none()) {
    if (!do_release(r, rec, false)) {
      {
        std::lock_guard g(rec.m);
        ++rec.outstanding;
      }
      throw misuse_error(
          fmt::format("rill::reservation::release: rank {} does not hold {} (its acquire has not been granted yet: "
                      "release after the grant event)",
                      me_, name_of(r)));
    }
    return;
  }
  defer(after, op, rec, true, event::none(), false);
}

bool reservation_table::do_release(reservation r, record& rec, bool poisoned, deferred_op* spent) {
  outbox out;
  {
    std::lock_guard g(rec.m);
    if (spent) rec.give_back(spent);
    const bool holds = rec.owner && rec.holders > 0;
    if ((poisoned || !holds) && rec.skipped > 0) {
      // Pairs with an acquire that did not acquire (its precondition was poisoned).
      --rec.skipped;
      return true;
    }
    if (!holds) return false;
    if (--rec.holders == 0) hand_on(r, rec, out);  // the last reader (or the writer) is out
  }
  send(r, out);
  return true;
}

void reservation_table::destroy(reservation r, event after) {
  record& rec = find(r, "rill::reservation::destroy");
  {
    std::lock_guard g(rec.m);
    check_api_use(rec, r, "rill::reservation::destroy");
    rec.destroyed_here = true;  // every later call on this rank is misuse
  }
  if (after.is_none()) {
    do_destroy(r, rec, me_);
    return;
  }
  record* p = &rec;
  // Poisoned or not, the destroy goes ahead: nothing else would ever free the reservation.
  when_triggered(after, [this, r, p](const poison_ptr&) { do_destroy(r, *p, me_); });
}

void reservation_table::do_destroy(reservation r, record& rec, int from) {
  outbox out;
  {
    std::lock_guard g(rec.m);
    if (rec.destroyed || (rec.owner && rec.destroy_pending) || (!rec.owner && rec.requested && rec.buffered_destroy)) {
      fatal("rill::reservation::destroy: {} destroyed twice (again from rank {})", name_of(r), from);
    }
    if (rec.owner) {
      rec.destroy_pending = true;
      if (rec.holders == 0) finish_destroy(rec);
    } else if (rec.requested) {
      rec.buffered_destroy = true;  // ownership is on its way here (invariant 3)
    } else {
      out.destroy_to = rec.hint;
      out.destroy_from = from;
    }
  }
  send(r, out);
}

// ---- the protocol -------------------------------------------------------------------------------

void reservation_table::hand_on(reservation r, record& rec, outbox& out) {
  if (!rec.local.empty() && (rec.remote.empty() || rec.streak < max_local_streak)) {
    // Local waiters first: no transfer, and the payload is already here. A reader takes the
    // readers queued right behind it along.
    rec.streak = rec.remote.empty() ? 0 : rec.streak + 1;
    rec.held_shared = rec.local.front().shared;
    rec.holders = 0;
    do {
      out.grants.push_back(rec.local.front().grant);
      rec.local.pop_front();
      ++rec.holders;
    } while (rec.held_shared && !rec.local.empty() && rec.local.front().shared);
    return;
  }
  if (!rec.remote.empty()) {
    out.transfer_to = rec.remote.front();
    rec.remote.pop_front();
    out.queue.assign(rec.remote.begin(), rec.remote.end());
    rec.remote.clear();
    if (!rec.local.empty()) {
      // This rank still has waiters: it joins the end of the queue that travels with ownership.
      out.queue.push_back(me_);
      rec.requested = true;
    }
    if (rec.payload) {
      const std::byte* bytes = rec.payload.get();
      out.payload.assign(bytes, bytes + rec.bytes);
    }
    out.transfer_destroy = rec.destroy_pending;
    rec.owner = false;
    rec.holders = 0;
    rec.destroy_pending = false;
    rec.streak = 0;
    rec.hint = out.transfer_to;
    return;
  }
  rec.holders = 0;
  rec.streak = 0;
  if (rec.destroy_pending) finish_destroy(rec);
  (void)r;
}

void reservation_table::finish_destroy(record& rec) {
  // This rank stays the owner, as a tombstone: requests that reach it are told "destroyed".
  rec.destroyed = true;
  rec.destroy_pending = false;
  rec.payload.reset();
  rec.drop_spare_ops();
}

void reservation_table::poison_destroyed(reservation r, record& rec, outbox& out, poison_ptr cause) {
  rec.destroyed = true;
  rec.requested = false;
  rec.skipped += rec.local.size();
  for (const auto& w : rec.local) out.poisoned.push_back(w.grant);
  out.poison = cause ? std::move(cause) : destroyed_cause(r, me_);
  rec.local.clear();
  out.tell_destroyed = std::move(rec.buffered);
  rec.buffered.clear();
  rec.payload.reset();
  rec.drop_spare_ops();
}

void reservation_table::on_request(reservation r, int requester) {
  if (requester < 0 || requester >= ranks_ || requester == me_) {
    throw decode_error(fmt::format("a request for {} from rank {} names rank {}", name_of(r), am::sender(), requester));
  }
  record* found = find_or_refuse(r, requester, "a reservation request");
  if (!found) return;
  record& rec = *found;
  outbox out;
  {
    std::lock_guard g(rec.m);
    if (rec.destroyed) {
      out.tell_destroyed.push_back(requester);
    } else if (rec.owner) {
      if (rec.holders > 0) {
        rec.remote.push_back(requester);
      } else {
        rec.remote.push_back(requester);
        hand_on(r, rec, out);  // nothing local waits (owner and free), so ownership moves now
      }
    } else if (rec.requested) {
      // Ownership is on its way to this rank (or will be: its own request is queued): keep the
      // request for then rather than bounce it between stale hints.
      rec.buffered.push_back(requester);
    } else {
      out.forward_request_to = rec.hint;
      out.forward_from = requester;
    }
  }
  if (out.forward_request_to >= 0) requests_forwarded_.fetch_add(1, std::memory_order_relaxed);
  send(r, out);
}

void reservation_table::on_transfer(reservation r, int from, const std::vector<std::byte>& payload,
                                    const std::vector<std::int32_t>& queue, bool destroy_pending) {
  if (payload.size() != r.payload_bytes()) {
    throw decode_error(fmt::format("a transfer of {} from rank {} carries {} payload bytes, not {}", name_of(r), from,
                                   payload.size(), r.payload_bytes()));
  }
  for (std::int32_t q : queue) {
    if (q < 0 || q >= ranks_ || q == me_)
      throw decode_error(fmt::format("a transfer of {} from rank {} queues rank {}", name_of(r), from, q));
  }
  record& rec = find(r, "a reservation transfer");
  transfers_received_.fetch_add(1, std::memory_order_relaxed);
  outbox out;
  {
    std::lock_guard g(rec.m);
    if (rec.owner || !rec.requested || rec.destroyed) {
      fatal("rill: rank {} received ownership of {} from rank {} without awaiting it (protocol error)", me_, name_of(r),
            from);
    }
    rec.owner = true;
    rec.requested = false;
    rec.hint = me_;
    allocate_payload(rec, r.payload_bytes());
    if (!payload.empty()) std::memcpy(rec.payload.get(), payload.data(), payload.size());
    rec.remote.assign(queue.begin(), queue.end());
    rec.remote.insert(rec.remote.end(), rec.buffered.begin(), rec.buffered.end());
    rec.buffered.clear();
    rec.destroy_pending = destroy_pending || rec.buffered_destroy;
    if (destroy_pending && rec.buffered_destroy) {
      fatal("rill::reservation::destroy: {} destroyed twice (a second destroy reached rank {})", name_of(r), me_);
    }
    rec.buffered_destroy = false;
    rec.holders = 0;
    rec.streak = 0;
    hand_on(r, rec, out);
  }
  send(r, out);
}

void reservation_table::on_destroy(reservation r, int from) {
  if (from < 0 || from >= ranks_) throw decode_error(fmt::format("a destroy of {} names rank {}", name_of(r), from));
  if (record* rec = find_or_refuse(r, from, "a reservation destroy")) do_destroy(r, *rec, from);
}

reservation_table::record* reservation_table::find_or_refuse(reservation r, int to, const char* what) {
  if (to == me_) return &find(r, what);  // (this rank's own caller hears it)
  record* rec = lookup(r, what);
  if (!rec) send_unknown(to, r);
  return rec;
}

void reservation_table::on_unknown(reservation r) {
  if (r.creator() != am::sender()) {
    throw decode_error(
        fmt::format("rank {} says {} does not exist, but only its creator can", am::sender(), name_of(r)));
  }
  record& rec = find(r, "a reservation's non-existence");
  outbox out;
  {
    std::lock_guard g(rec.m);
    rec.unknown = unknown_cause(r);
    poison_destroyed(r, rec, out, rec.unknown);
    out.tell_unknown = true;
  }
  // A destroy waits on nothing here: say so, as the acquires' poison says it for them.
  if (out.poisoned.empty()) log().error("rank {}: {}", me_, rec.unknown->reason);
  send(r, out);
}

void reservation_table::on_destroyed(reservation r) {
  record& rec = find(r, "a reservation's destruction");
  outbox out;
  {
    std::lock_guard g(rec.m);
    if (rec.buffered_destroy) {
      fatal("rill::reservation::destroy: {} destroyed twice (a second destroy reached rank {})", name_of(r), me_);
    }
    poison_destroyed(r, rec, out);
  }
  send(r, out);
}

// Everything decided under a record's lock, done without it.
void reservation_table::send(reservation r, outbox& out) {
  // Most steps only grant: test for the rest at once.
  if (out.request_to >= 0 || out.forward_request_to >= 0 || out.transfer_to >= 0 || out.destroy_to >= 0 ||
      !out.tell_destroyed.empty() || !out.poisoned.empty())
    send_messages(r, out);
  if (out.grants.empty()) return;  // (a step that only queued: no atomic add for nothing)
  grants_.fetch_add(out.grants.size(), std::memory_order_relaxed);
  for (const event& g : out.grants) event_trigger(g);
}

void reservation_table::send_messages(reservation r, outbox& out) {
  if (out.request_to >= 0) {
    requests_sent_.fetch_add(1, std::memory_order_relaxed);
    send_request(out.request_to, r, me_);
  }
  if (out.forward_request_to >= 0) send_request(out.forward_request_to, r, out.forward_from);
  if (out.transfer_to >= 0) {
    transfers_sent_.fetch_add(1, std::memory_order_relaxed);
    send_transfer(out.transfer_to, r, out.payload, out.queue, out.transfer_destroy);
  }
  if (out.destroy_to >= 0) send_destroy(out.destroy_to, r, out.destroy_from);
  for (int to : out.tell_destroyed) out.tell_unknown ? send_unknown(to, r) : send_destroyed(to, r);
  for (const event& e : out.poisoned) event_poison(e, out.poison);
}

reservation_counts reservation_table::counts() {
  reservation_counts c;
  c.created = created_.load(std::memory_order_relaxed);
  c.grants = grants_.load(std::memory_order_relaxed);
  c.requests_sent = requests_sent_.load(std::memory_order_relaxed);
  c.requests_forwarded = requests_forwarded_.load(std::memory_order_relaxed);
  c.transfers_sent = transfers_sent_.load(std::memory_order_relaxed);
  c.transfers_received = transfers_received_.load(std::memory_order_relaxed);
  for (auto& sh : shards_) {
    std::lock_guard g(sh.m);
    c.known += sh.records.size();
  }
  return c;
}

}  // namespace rill::detail
