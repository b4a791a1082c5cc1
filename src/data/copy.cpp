// Deferred copies and fills of instances (rill/copy.hpp).
//
// Every step of a copy below runs on a data-movement channel of its rank (started_at.hpp), not on
// a worker. A copy starts at the destination's rank, once its precondition has triggered: there it
// looks up the destination. When the source is on the same rank it copies row by row and is done.
// Otherwise it asks the source's rank, sending what the source needs to check the copy whole
// before a byte moves (the destination's field sizes and index space) and to reach it (where its
// storage starts, its bounds and its fields' places). The source's rank checks fields and points.
// If it can address the destination's storage -- a rank of the same process, or registered
// memory of a node neighbour, mapped -- it copies row by row into it itself: one copy, like a
// local one. Otherwise it splits the points into pieces. When the destination's rank maps this
// rank's segment (a node neighbour's system memory), pieces of at most staged_piece_bytes, packed
// (fields one after another, points in index-space order) into room staged there, a window at a
// time; the destination's rank unpacks each from the mapped segment (staged_transfer.hpp).
// Otherwise pieces of at most piece_bytes, each sent as a zero-copy message: straight from the
// instance when the piece is one field's contiguous range, else packed while the previous piece
// travels. The destination's rank unpacks each piece into the instance and counts them; the last
// one triggers the copy's event. Any error before the first byte moves poisons the event and
// writes nothing. A fill runs as one piece of work on the instance's rank.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "data/staged_transfer.hpp"
#include "data/started_at.hpp"
#include "data/transfer.hpp"
#include "rill/am.hpp"
#include "rill/copy.hpp"
#include "trace/hooks.hpp"

namespace rill::detail {
namespace {

using namespace transfers;

// What the source's rank needs to know of the destination: its fields' sizes and places, its
// index space, and where its storage starts on its rank.
struct destination_info {
  std::vector<field_placement> fields;
  index_space<3> space;
  std::uintptr_t address = 0;
  std::uint64_t bytes = 0;  // of its storage
  bool external = false;    // an attached resource: written by its rank's I/O threads, from pieces
  template <class Archive>
  void serialize(Archive& ar) {
    ar(fields, space, address, bytes, external);
  }
};

// Where the transfer's I/O on `ext`, an instance attached on this rank, lies (io_queue.hpp): at
// the first of `fields` over the transfer's points. Nowhere for one not found here (the transfer
// says why as it runs).
io_place io_place_of(instance ext, const std::vector<field_id>& fields, const transfer& t) {
  if (fields.empty()) return {};
  std::shared_ptr<const instance_record> rec;
  try {
    rec = data_here(t.what()).find_any(ext, t.what());
  } catch (const misuse_error&) {
    return {};
  }
  const field_placement* f = rec->placement.find(fields.front());
  const index_space<3>& domain = t.whole ? rec->space : t.over;
  if (!f || !rec->external || domain.empty()) return {};
  io_place where = rec->external->place(*f, domain.rects().front());
  where.end = where.begin + domain.volume() * f->bytes;
  return where;
}

// The I/O of a copy between a memory instance and a resource on this rank as a run the I/O queue
// may fuse with others (io_queue.hpp): one field over one rect, dense in memory and one range of
// the resource; none for any other.
std::shared_ptr<io_run> run_between(const instance_record& s, const std::vector<const field_placement*>& sf,
                                    const instance_record& d, const std::vector<const field_placement*>& df,
                                    const index_space<3>& domain) {
  const bool writing = d.external != nullptr;
  if (writing == (s.external != nullptr) || sf.size() != 1 || domain.rects().size() != 1) return {};
  const rect<3>& r = domain.rects().front();
  const storage memory = storage_of(writing ? s : d);
  const field_placement& in_memory = *(writing ? sf : df).front();
  if (!contiguous(memory, in_memory, r)) return {};  // (run_of refuses opaque fields: both sides' kinds agree)
  return run_of(writing ? *d.external : *s.external, *(writing ? df : sf).front(), r, field_at(memory, in_memory, r.lo),
                writing);
}

// At the source's rank: checks the whole transfer, then moves it into the destination's storage
// when this rank can address it, or sends the points piece by piece.
void move_from_source(instance src, instance dst, const transfer& t, const destination_info& to, event done) {
  data_module& here = data_here(t.what());
  std::shared_ptr<const instance_record> rec;
  std::vector<const field_placement*> f;
  index_space<3> domain;
  try {
    rec = here.find_any(src, t.what());
    f = placements(*rec, t.src_fields, "source", t);
    std::vector<const field_placement*> to_f;
    for (const field_placement& p : to.fields) to_f.push_back(&p);
    check_sizes(t, sizes_of(f), sizes_of(to_f));
    check_kinds(t, f, to_f);
    domain = t.whole ? rec->space : t.over;
    check_inside(domain, rec->space, "source", src, t);
    check_inside(domain, to.space, "destination", dst, t);
  } catch (const misuse_error& e) {
    event_poison(done, failure_of(t, e.what()));
    return;
  }
  const storage from = storage_of(*rec);
  // Objects of opaque fields always travel serialized, in messages, as Iris moves them: a pointer
  // is only good in the process that made it.
  const bool opaque = any_opaque(f);
  std::byte* there =
      to.external || opaque ? nullptr : here.reachable(dst, to.address, static_cast<std::size_t>(to.bytes));
  if (there) {
    std::vector<const field_placement*> to_f;
    for (const field_placement& p : to.fields) to_f.push_back(&p);
    const storage to_mem{there, to.space.bounds()};
    const std::uint64_t start = trace::span_begin();
    std::size_t moved = 0;
    try {
      moved = rec->external ? move_domain_io({&to_mem, nullptr}, to_f, {nullptr, rec->external.get()}, f, domain)
                            : move_domain(t.combine(), to_mem, to_f, from, f, domain);
    } catch (const misuse_error& e) {  // (a resource that failed a read)
      event_poison(done, failure_of(t, e.what()));
      return;
    }
    end_transfer_span(start, t, moved, dst.owner());
    event_trigger(done);
    return;
  }
  const bool staged = here.maps_my_segment(dst.owner()) && !to.external && !rec->external && !opaque;
  std::vector<std::vector<rect<3>>> pieces;
  try {
    pieces = plan_pieces(domain, rec->external ? bytes_per_point(f) : packed_per_point(from, f, domain),
                         staged ? staged_piece_bytes : piece_bytes);
  } catch (const misuse_error& e) {  // (an opaque field's size() that threw)
    event_poison(done, failure_of(t, e.what()));
    return;
  }
  if (pieces.empty()) {
    event_trigger(done);
    return;
  }
  const auto total = static_cast<std::uint32_t>(pieces.size());
  if (staged) {
    stage_pieces(rec, f, src, dst, t, pieces, done);
    return;
  }
  for (const std::vector<rect<3>>& piece : pieces) send_piece(rec, f, src, dst, t, piece, total, done);
}

// At the destination's rank, once the transfer's precondition has triggered.
void start_at_destination(instance src, instance dst, const transfer& t, event done) {
  data_module& here = data_here(t.what());
  const std::shared_ptr<const instance_record> d = here.find_any(dst, t.what());
  const std::vector<const field_placement*> df = placements(*d, t.dst_fields, "destination", t);
  if (src.owner() != here.id()) {
    destination_info to{
        {}, d->space, reinterpret_cast<std::uintptr_t>(d->data), d->placement.bytes, d->external != nullptr};
    for (const field_placement* p : df) to.fields.push_back(*p);
    am::send(
        src.owner(),
        [](instance s, instance ds, const transfer& tr, const destination_info& info, event e) {
          if (s.location().kind() == memory_kind::external)
            on_io(io_place_of(s, tr.src_fields, tr), [=] { move_from_source(s, ds, tr, info, e); });
          else
            on_channel([=] { move_from_source(s, ds, tr, info, e); });
        },
        src, dst, t, to, done);
    return;
  }
  const std::shared_ptr<const instance_record> s = here.find_any(src, t.what());
  const std::vector<const field_placement*> sf = placements(*s, t.src_fields, "source", t);
  check_sizes(t, sizes_of(sf), sizes_of(df));
  check_kinds(t, sf, df);
  const index_space<3>& domain = t.whole ? s->space : t.over;
  check_inside(domain, s->space, "source", src, t);
  check_inside(domain, d->space, "destination", dst, t);
  if (s->external || d->external) {
    // (The records hold the fields' placements and the storage while the I/O waits its turn.)
    if (std::shared_ptr<io_run> run = run_between(*s, sf, *d, df, domain)) {
      const std::size_t bytes = domain.volume() * sf.front()->bytes;
      on_io(run, [s, d, t, done, run, bytes, rank = here.id()] {
        auto finish = [&] {
          if (run->failure) std::rethrow_exception(run->failure);
          end_transfer_span(run->started, t, bytes, rank);
        };
        if (run_guarded(done, finish)) event_trigger(done);
      });
      return;
    }
    on_io(io_place_of(s->external ? src : dst, s->external ? t.src_fields : t.dst_fields, t),
          [s, d, df, sf, domain, t, done, rank = here.id()] {
            auto move = [&] {
              const std::uint64_t start = trace::span_begin();
              const storage dm = storage_of(*d), sm = storage_of(*s);
              const std::size_t moved = move_domain_io({d->external ? nullptr : &dm, d->external.get()}, df,
                                                       {s->external ? nullptr : &sm, s->external.get()}, sf, domain);
              end_transfer_span(start, t, moved, rank);
            };
            if (run_guarded(done, move)) event_trigger(done);
          });
    return;
  }
  const std::uint64_t start = trace::span_begin();
  const std::size_t moved = move_domain(t.combine(), storage_of(*d), df, storage_of(*s), sf, domain);
  end_transfer_span(start, t, moved, here.id());
  event_trigger(done);
}

void check_handles(instance a, instance b, const index_space<3>* over, int dims, const char* what) {
  if (!a.exists() || !b.exists())
    throw misuse_error(fmt::format("{}: no instance (a default-constructed handle)", what));
  if (a.dimensions() != b.dimensions())
    throw misuse_error(fmt::format("{}: instances of {} and {} dimensions", what, a.dimensions(), b.dimensions()));
  if (over && dims != a.dimensions())
    throw misuse_error(
        fmt::format("{}: an index space of {} dimension(s) for instances of {}", what, dims, a.dimensions()));
}

}  // namespace

event transfer_padded(instance src, std::vector<field_id> src_fields, instance dst, std::vector<field_id> dst_fields,
                      const index_space<3>* over, int dims, row_combiner how, event after, const char* what) {
  (void)data_here(what);
  check_handles(src, dst, over, dims, what);
  if (src_fields.empty()) throw misuse_error(fmt::format("{}: no fields", what));
  if (src_fields.size() != dst_fields.size())
    throw misuse_error(
        fmt::format("{}: {} source field(s) for {} destination field(s)", what, src_fields.size(), dst_fields.size()));
  for (const auto& fields : {src_fields, dst_fields})
    for (field_id f : fields)
      if (std::count(fields.begin(), fields.end(), f) > 1)
        throw misuse_error(fmt::format("{}: field {} is named twice", what, f));
  transfer t{std::move(src_fields),
             std::move(dst_fields),
             how.op ? code_offset(reinterpret_cast<const void*>(how.op)) : 0,
             how.src_bytes,
             how.dst_bytes,
             over == nullptr,
             over ? *over : index_space<3>()};
  // A poisoned precondition, or an error found at the destination, poisons the transfer.
  const auto start = [](instance s, instance d, const transfer& tr, event e) { start_at_destination(s, d, tr, e); };
  if (src.location().kind() == memory_kind::external || dst.location().kind() == memory_kind::external) {
    if (how.op)
      throw misuse_error(
          fmt::format("{}: instance {:#x} is in external memory, which takes copies only: reduce into "
                      "an instance in memory, then copy it",
                      what, (src.location().kind() == memory_kind::external ? src : dst).id()));
    // (Checked and looked up on an I/O thread too, never needing a worker or a channel; the I/O
    // itself goes back to the I/O queue, at its place.)
    return io_started_at(dst.owner(), after, start, src, dst, t);
  }
  return started_at(dst.owner(), after, start, src, dst, t);
}

event fill_padded(instance inst, field_id f, std::vector<std::byte> value, const index_space<3>* over, int dims,
                  event after) {
  check_handles(inst, inst, over, dims, "rill::fill");
  const auto start = [](instance i, field_id id, const std::vector<std::byte>& v, bool whole, const index_space<3>& o,
                        event done) {
    data_module& here = data_here("rill::fill");
    const std::shared_ptr<const instance_record> rec = here.find_any(i, "rill::fill");
    const field_placement* p = rec->placement.find(id);
    if (!p) throw misuse_error(fmt::format("rill::fill: instance {:#x} has no field {}", i.id(), id));
    if (p->opaque)
      throw misuse_error(fmt::format(
          "rill::fill: field {} of instance {:#x} holds opaque objects, which are copied, not filled", id, i.id()));
    if (p->bytes != v.size())
      throw misuse_error(fmt::format("rill::fill: field {} of instance {:#x} has {} bytes, the value {}", id, i.id(),
                                     p->bytes, v.size()));
    const index_space<3>& domain = whole ? rec->space : o;
    const std::size_t outside = domain.subtract(rec->space).volume();
    if (outside != 0)
      throw misuse_error(fmt::format(
          "rill::fill: {} point(s) to fill are not in the index space of instance {:#x}; nothing was written", outside,
          i.id()));
    if (rec->external) {
      const rect<3> first = domain.empty() ? rect<3>{} : domain.rects().front();
      io_place where = rec->external->place(*p, first);
      where.end = where.begin + domain.volume() * p->bytes;
      on_io(where, [rec, p, v, domain, done] {
        auto fill = [&] {
          const std::uint64_t start = trace::span_begin();
          fill_store(*rec->external, *p, v, domain);
          trace::span_end<trace::kind::fill>(start, 0, domain.volume() * v.size());
        };
        if (run_guarded(done, fill)) event_trigger(done);
      });
      return;
    }
    const std::uint64_t start = trace::span_begin();
    for (const rect<3>& r : domain.rects())
      for_each_row_start(r, [&](const point<3>& q) {
        std::byte* at = field_at(storage_of(*rec), *p, q);
        for (std::size_t k = 0, n = row_length(r); k < n; ++k, at += p->strides[0]) std::memcpy(at, v.data(), v.size());
      });
    trace::span_end<trace::kind::fill>(start, 0, domain.volume() * v.size());
    event_trigger(done);
  };
  if (inst.location().kind() == memory_kind::external)
    return io_started_at(inst.owner(), after, start, inst, f, value, over == nullptr, over ? *over : index_space<3>());
  return started_at(inst.owner(), after, start, inst, f, value, over == nullptr, over ? *over : index_space<3>());
}

}  // namespace rill::detail
