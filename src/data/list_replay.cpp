// Replaying a reduction list instance into an instance (rill/reduction.hpp, replay_into).
//
// Like a copy, a replay starts at the destination's rank once its precondition has triggered:
// there it checks the destination's field and, unless the list is on the same rank, asks the
// list's rank, telling it the destination's bounds and where its field lies. The list's rank
// reads the log's length and checks every entry's point against those bounds before anything is
// applied. When it can address the destination's storage (a rank of its process, or registered
// memory of a node neighbour) it applies the entries there itself, with the operator's atomic
// apply, as the destination's rank would. Otherwise it sends them in pieces of at most
// piece_bytes (zero-copy: they travel as they lie in the log); the destination's rank applies
// each piece's entries and triggers the event with the last. The entries' function (the operator, the dimension and the
// exclusivity) travels as a code offset.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>

#include "data/data_module.hpp"
#include "data/field_rows.hpp"
#include "data/started_at.hpp"
#include "data/transfer.hpp"
#include "rill/proc.hpp"
#include "rill/reduction.hpp"
#include "rill/task.hpp"
#include "rill/view.hpp"
#include "rill/zero_copy.hpp"
#include "trace/hooks.hpp"

namespace rill::detail {
namespace {

using transfers::piece_bytes;  // as copies
constexpr const char* what = "rill::replay_into";

struct replay {
  field_id list_field = 0;
  field_id dst_field = 0;
  std::uint64_t entry_bytes = 0, dst_bytes = 0;
  std::intptr_t fn = 0;  // code offset of the entries_fn
  entries_fn entries() const { return reinterpret_cast<entries_fn>(const_cast<void*>(code_address(fn))); }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(list_field, dst_field, entry_bytes, dst_bytes, fn);
  }
};

poison_ptr failure(const std::string& why) {
  return std::make_shared<const poison_info>(poison_info{why, rank_me(), what});
}

const field_placement& field_of(const instance_record& rec, field_id f, std::size_t bytes, const char* role) {
  const field_placement* p = rec.placement.find(f);
  if (!p)
    throw misuse_error(
        fmt::format("{}: the {} instance {:#x} has no field {}; nothing was written", what, role, rec.handle.id(), f));
  if (p->bytes != bytes)
    throw misuse_error(
        fmt::format("{}: field {} of the {} instance {:#x} has {} bytes, where the operator needs {}; "
                    "nothing was written",
                    what, f, role, rec.handle.id(), p->bytes, bytes));
  return *p;
}

// The log of a list instance: its entries (after element 0, which holds their number) and how many.
std::span<const std::byte> log_of(const instance_record& rec, const field_placement& f) {
  const std::byte* first = field_at(storage_of(rec), f, rec.space.bounds().lo);
  coord_t n = 0;
  std::memcpy(&n, first, sizeof n);  // element 0's point holds the number of entries
  const auto capacity = static_cast<coord_t>(rec.space.bounds().hi[0] - rec.space.bounds().lo[0]);
  n = std::clamp<coord_t>(n, 0, capacity);
  return {first + f.bytes, static_cast<std::size_t>(n) * f.bytes};
}

field_address address_of(const storage& s, const field_placement& f) {
  return {s.data + f.offset, f.strides, s.bounds};
}

// Checks every entry against the destination's bounds; throws naming the first outside.
void check_entries(const replay& r, const rect<3>& bounds, std::span<const std::byte> log) {
  const std::size_t count = log.size() / r.entry_bytes;
  const std::size_t bad = r.entries()(field_address{nullptr, {}, bounds}, log.data(), count, true);
  if (bad < count)
    throw misuse_error(
        fmt::format("{}: entry {} of the list reduces into a point outside the destination; nothing "
                    "was written",
                    what, bad));
}

void apply_piece(instance dst, const replay& r, std::uint32_t total, event done, int from,
                 std::span<const std::byte> bytes) {
  data_module& here = data_here(what);
  std::string why;
  try {
    const std::shared_ptr<const instance_record> rec = here.find(dst, what);
    const field_placement& f = field_of(*rec, r.dst_field, static_cast<std::size_t>(r.dst_bytes), "destination");
    check_entries(r, rec->space.bounds(), bytes);
    const std::uint64_t start = trace::span_begin();
    r.entries()(address_of(storage_of(*rec), f), bytes.data(), bytes.size() / r.entry_bytes, false);
    trace::span_end<trace::kind::reduction>(start, 0, bytes.size(), static_cast<std::uint64_t>(from));
  } catch (const misuse_error& e) {
    why = e.what();
  }
  switch (here.piece_arrived(done, total, !why.empty())) {
    case data_module::copy_outcome::trigger: event_trigger(done); break;
    case data_module::copy_outcome::poison: event_poison(done, failure(why)); break;
    case data_module::copy_outcome::wait: break;
  }
}

// What the list's rank needs to know of the destination: its bounds, and where its field and its
// storage lie on its rank.
struct replay_target {
  rect<3> bounds;
  field_placement field;
  std::uintptr_t address = 0;
  std::uint64_t bytes = 0;  // of its storage
  template <class Archive>
  void serialize(Archive& ar) {
    ar(bounds, field, address, bytes);
  }
};

// At the list's rank: checks the whole log against the destination, then applies it there
// directly when this rank can address it, or sends it in pieces.
void send_log(instance list, instance dst, const replay& r, const replay_target& to, event done) {
  data_module& here = data_here(what);
  std::shared_ptr<const instance_record> rec;
  std::span<const std::byte> log;
  try {
    rec = here.find(list, what);
    log = log_of(*rec, field_of(*rec, r.list_field, static_cast<std::size_t>(r.entry_bytes), "list"));
    check_entries(r, to.bounds, log);
  } catch (const misuse_error& e) {
    event_poison(done, failure(e.what()));
    return;
  }
  if (std::byte* there = here.reachable(dst, to.address, static_cast<std::size_t>(to.bytes))) {
    const std::uint64_t start = trace::span_begin();
    r.entries()(address_of(storage{there, to.bounds}, to.field), log.data(), log.size() / r.entry_bytes, false);
    trace::span_end<trace::kind::reduction>(start, 0, log.size(), static_cast<std::uint64_t>(dst.owner()));
    event_trigger(done);
    return;
  }
  const std::size_t per_piece = std::max<std::size_t>(1, piece_bytes / r.entry_bytes) * r.entry_bytes;
  if (log.empty()) {
    event_trigger(done);
    return;
  }
  const auto total = static_cast<std::uint32_t>((log.size() + per_piece - 1) / per_piece);
  for (std::size_t at = 0; at < log.size(); at += per_piece) {
    const std::size_t n = std::min(per_piece, log.size() - at);
    // (The view first: with it last, GCC 12 warns of a memcpy out of bounds that is not there.)
    const event sent = am::send_zero_copy(
        dst.owner(),
        [](rill::view<std::byte> b, instance d, const replay& rp, std::uint32_t t, event e, int from) {
          apply_piece(d, rp, t, e, from, std::span(b.data(), b.size()));
        },
        rill::view<std::byte>(log.data() + at, n), dst, r, total, done, list.owner());
    when_triggered(sent, [hold = rec](const poison_ptr&) {});  // the log stays until sent
  }
}

void start_at_destination(instance list, instance dst, const replay& r, event done) {
  data_module& here = data_here(what);
  const std::shared_ptr<const instance_record> d = here.find(dst, what);
  const field_placement& df = field_of(*d, r.dst_field, static_cast<std::size_t>(r.dst_bytes), "destination");
  if (list.owner() != here.id()) {
    am::send(
        list.owner(),
        [](instance l, instance ds, const replay& rp, const replay_target& to, event e) {
          on_channel([=] { send_log(l, ds, rp, to, e); });
        },
        list, dst, r,
        replay_target{d->space.bounds(), df, reinterpret_cast<std::uintptr_t>(d->data), d->placement.bytes}, done);
    return;
  }
  const std::shared_ptr<const instance_record> l = here.find(list, what);
  const std::span<const std::byte> log =
      log_of(*l, field_of(*l, r.list_field, static_cast<std::size_t>(r.entry_bytes), "list"));
  check_entries(r, d->space.bounds(), log);
  const std::uint64_t start = trace::span_begin();
  r.entries()(address_of(storage_of(*d), df), log.data(), log.size() / r.entry_bytes, false);
  trace::span_end<trace::kind::reduction>(start, 0, log.size(), static_cast<std::uint64_t>(here.id()));
  event_trigger(done);
}

}  // namespace

event replay_padded(instance list, field_id list_f, std::size_t entry_bytes, instance dst, field_id dst_f,
                    std::size_t dst_bytes, int dims, entries_fn fn, event after) {
  (void)data_here(what);
  if (!list.exists() || !dst.exists())
    throw misuse_error(fmt::format("{}: no instance (a default-constructed handle)", what));
  if (list.dimensions() != 1)
    throw misuse_error(fmt::format("{}: instance {:#x} is no list instance", what, list.id()));
  if (dst.dimensions() != dims)
    throw misuse_error(fmt::format("{}: a list of {}-dimensional points into an instance of {} dimension(s)", what,
                                   dims, dst.dimensions()));
  const replay r{list_f, dst_f, entry_bytes, dst_bytes, code_offset(reinterpret_cast<const void*>(fn))};
  return started_at(
      dst.owner(), after, [](instance l, instance d, const replay& rp, event e) { start_at_destination(l, d, rp, e); },
      list, dst, r);
}

}  // namespace rill::detail
