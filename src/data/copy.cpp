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
// local one. Otherwise it splits the points into pieces of at most piece_bytes. When the
// destination's rank maps this rank's segment (a node neighbour's system memory), it packs them
// (fields one after another, points in index-space order) into room staged there, a window at a
// time, and the destination's rank unpacks each from the mapped segment (staged_transfer).
// Otherwise it sends each as a zero-copy message: straight from the instance when the piece is
// one field's contiguous range, else packed while the previous piece travels. The destination's
// rank unpacks each piece into the instance and counts them; the last one triggers the copy's
// event. Any error before the first byte moves poisons the
// event and writes nothing. A fill runs as one piece of work on the instance's rank.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>

#include "data/data_module.hpp"
#include "data/field_rows.hpp"
#include "data/started_at.hpp"
#include "rill/am.hpp"
#include "rill/copy.hpp"
#include "rill/task.hpp"
#include "rill/view.hpp"
#include "trace/hooks.hpp"

namespace rill::detail {
namespace {

// The most one message of a copy carries: large enough that a message's own cost vanishes
// against its bytes, small enough that packing the next piece overlaps sending this one.
constexpr std::size_t piece_bytes = std::size_t{1} << 20;

// What a copy or reduction moves, as its messages carry it: fields of the source to fields of
// the destination, at the points of `over` (or of the source's whole space), combined how.
struct transfer {
  std::vector<field_id> src_fields;
  std::vector<field_id> dst_fields;
  std::intptr_t op = 0;  // code offset of the row_op; 0: copy
  std::uint64_t src_bytes = 0, dst_bytes = 0;
  bool whole = true;
  index_space<3> over;
  const char* what() const { return op ? "rill::reduce" : "rill::copy"; }
  row_op combine() const { return op ? reinterpret_cast<row_op>(const_cast<void*>(code_address(op))) : nullptr; }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(src_fields, dst_fields, op, src_bytes, dst_bytes, whole, over);
  }
};

// Closes the trace span of a stretch of a transfer's work: `bytes` moved to or from rank `peer`.
void end_transfer_span(std::uint64_t start, const transfer& t, std::size_t bytes, int peer) {
  if (t.op)
    trace::span_end<trace::kind::reduction>(start, 0, bytes, static_cast<std::uint64_t>(peer));
  else
    trace::span_end<trace::kind::copy>(start, 0, bytes, static_cast<std::uint64_t>(peer));
}

std::vector<const field_placement*> placements(const instance_record& rec, const std::vector<field_id>& fields,
                                               const char* role, const transfer& t) {
  std::vector<const field_placement*> out;
  for (field_id f : fields) {
    const field_placement* p = rec.placement.find(f);
    if (!p)
      throw misuse_error(fmt::format("{}: the {} instance {:#x} has no field {}; nothing was written", t.what(), role,
                                     rec.handle.id(), f));
    out.push_back(p);
  }
  return out;
}

void check_sizes(const transfer& t, const std::vector<std::uint64_t>& src, const std::vector<std::uint64_t>& dst) {
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (!t.op && src[i] != dst[i])
      throw misuse_error(
          fmt::format("rill::copy: field {} has {} bytes in the source and {} in the destination; nothing was copied",
                      t.src_fields[i], src[i], dst[i]));
    if (t.op && (src[i] != t.src_bytes || dst[i] != t.dst_bytes))
      throw misuse_error(fmt::format(
          "rill::reduce: the operator reduces {}-byte values into {}-byte elements, but field {} of the source has {} "
          "bytes and field {} of the destination {}; nothing was written",
          t.src_bytes, t.dst_bytes, t.src_fields[i], src[i], t.dst_fields[i], dst[i]));
  }
}

std::vector<std::uint64_t> sizes_of(const std::vector<const field_placement*>& p) {
  std::vector<std::uint64_t> out;
  for (const field_placement* f : p) out.push_back(f->bytes);
  return out;
}

void check_inside(const index_space<3>& domain, const index_space<3>& space, const char* role, instance inst,
                  const transfer& t) {
  const std::size_t outside = domain.subtract(space).volume();
  if (outside != 0)
    throw misuse_error(
        fmt::format("{}: {} point(s) to {} are not in the index space of the {} instance {:#x}; nothing was written",
                    t.what(), outside, t.op ? "reduce" : "copy", role, inst.id()));
}

// One row of elements from a source to a destination: copied, or combined by the transfer's op.
void move_row(row_op op, std::byte* to, std::ptrdiff_t to_step, const std::byte* from, std::ptrdiff_t from_step,
              std::size_t count, std::size_t bytes) {
  if (op)
    op(to, to_step, from, from_step, count);
  else
    copy_row(to, to_step, from, from_step, count, bytes);
}

// r cut in halves along its slowest dimension wider than one point until each part has at most
// `limit` points (or is one point).
void split(const rect<3>& r, std::size_t limit, std::vector<rect<3>>& out) {
  if (r.volume() <= limit || r.volume() == 1) {
    out.push_back(r);
    return;
  }
  int d = 2;
  while (r.hi[d] == r.lo[d]) --d;
  const coord_t mid = r.lo[d] + (r.hi[d] - r.lo[d]) / 2;
  rect<3> low = r, high = r;
  low.hi[d] = mid;
  high.lo[d] = mid + 1;
  split(low, limit, out);
  split(high, limit, out);
}

// The domain's rects, cut and grouped into pieces of at most piece_bytes each.
std::vector<std::vector<rect<3>>> plan_pieces(const index_space<3>& domain, std::size_t bytes_per_point) {
  const std::size_t limit = std::max<std::size_t>(1, piece_bytes / bytes_per_point);
  std::vector<rect<3>> parts;
  for (const rect<3>& r : domain.rects()) split(r, limit, parts);
  std::vector<std::vector<rect<3>>> pieces;
  std::size_t in_last = limit;
  for (const rect<3>& r : parts) {
    if (in_last + r.volume() > limit) {
      pieces.emplace_back();
      in_last = 0;
    }
    pieces.back().push_back(r);
    in_last += r.volume();
  }
  return pieces;
}

std::size_t points_in(const std::vector<rect<3>>& rects) {
  std::size_t n = 0;
  for (const rect<3>& r : rects) n += r.volume();
  return n;
}

// A piece's bytes: each field in turn, its points in index-space order.
void pack(const storage& from, const std::vector<const field_placement*>& fields, const std::vector<rect<3>>& rects,
          std::byte* out) {
  for (const field_placement* f : fields)
    for (const rect<3>& r : rects)
      for_each_row_start(r, [&](const point<3>& p) {
        const std::size_t n = row_length(r);
        copy_row(out, static_cast<std::ptrdiff_t>(f->bytes), field_at(from, *f, p), f->strides[0], n, f->bytes);
        out += n * f->bytes;
      });
}

// A piece's bytes (packed as pack() does, with the source's field sizes) into the destination.
void unpack(row_op op, const storage& to, const std::vector<const field_placement*>& fields,
            const std::vector<std::size_t>& packed_bytes, const std::vector<rect<3>>& rects, const std::byte* in) {
  for (std::size_t i = 0; i < fields.size(); ++i)
    for (const rect<3>& r : rects)
      for_each_row_start(r, [&](const point<3>& p) {
        const std::size_t n = row_length(r), b = packed_bytes[i];
        move_row(op, field_at(to, *fields[i], p), fields[i]->strides[0], in, static_cast<std::ptrdiff_t>(b), n, b);
        in += n * b;
      });
}

// Moves every field of the domain's points, row by row; returns the source bytes moved.
std::size_t move_domain(row_op op, const storage& to, const std::vector<const field_placement*>& to_f,
                        const storage& from, const std::vector<const field_placement*>& from_f,
                        const index_space<3>& domain) {
  std::size_t moved = 0;
  for (std::size_t i = 0; i < from_f.size(); ++i)
    for (const rect<3>& r : domain.rects())
      for_each_row_start(r, [&](const point<3>& p) {
        const std::size_t n = row_length(r);
        move_row(op, field_at(to, *to_f[i], p), to_f[i]->strides[0], field_at(from, *from_f[i], p),
                 from_f[i]->strides[0], n, from_f[i]->bytes);
        moved += n * from_f[i]->bytes;
      });
  return moved;
}

std::size_t bytes_per_point(const std::vector<const field_placement*>& fields) {
  std::size_t b = 0;
  for (const field_placement* f : fields) b += f->bytes;
  return b;
}

poison_ptr failure_of(const transfer& t, const std::string& why) {
  return std::make_shared<const poison_info>(poison_info{why, rank_me(), t.what()});
}

// At the destination's rank: a piece of the transfer whose event is `done` has been written (or
// failed, saying why): the last one triggers or poisons the event.
void count_piece(data_module& here, const transfer& t, std::uint32_t total, event done, const std::string& failure) {
  switch (here.piece_arrived(done, total, !failure.empty())) {
    case data_module::copy_outcome::trigger: event_trigger(done); break;
    case data_module::copy_outcome::poison: event_poison(done, failure_of(t, failure)); break;
    case data_module::copy_outcome::wait: break;
  }
}

// At the destination's rank: one piece of a transfer from rank `from`.
void receive_piece(instance dst, const transfer& t, const std::vector<rect<3>>& rects, std::uint32_t total, event done,
                   int from, std::span<const std::byte> bytes) {
  data_module& here = data_here(t.what());
  std::string failure;
  try {
    const std::shared_ptr<const instance_record> rec = here.find(dst, t.what());
    const std::vector<const field_placement*> f = placements(*rec, t.dst_fields, "destination", t);
    std::vector<std::size_t> packed_bytes;
    std::size_t per_point = 0;
    for (const field_placement* p : f) {
      packed_bytes.push_back(t.op ? static_cast<std::size_t>(t.src_bytes) : p->bytes);
      per_point += packed_bytes.back();
    }
    for (const rect<3>& r : rects)
      if (!rec->space.bounds().contains(r))
        throw misuse_error(
            fmt::format("{}: a piece from rank {} lies outside instance {:#x}", t.what(), from, dst.id()));
    if (bytes.size() != points_in(rects) * per_point)
      throw misuse_error(fmt::format("{}: a piece from rank {} has {} bytes for {} points", t.what(), from,
                                     bytes.size(), points_in(rects)));
    const std::uint64_t start = trace::span_begin();
    unpack(t.combine(), storage_of(*rec), f, packed_bytes, rects, bytes.data());
    end_transfer_span(start, t, bytes.size(), from);
  } catch (const misuse_error& e) {
    failure = e.what();
  }
  count_piece(here, t, total, done, failure);
}

// What the source's rank needs to know of the destination: its fields' sizes and places, its
// index space, and where its storage starts on its rank.
struct destination_info {
  std::vector<field_placement> fields;
  index_space<3> space;
  std::uintptr_t address = 0;
  std::uint64_t bytes = 0;  // of its storage
  template <class Archive>
  void serialize(Archive& ar) {
    ar(fields, space, address, bytes);
  }
};

// At the source's rank: one piece as a zero-copy message, straight from the instance when it is
// one field's contiguous range, else packed first.
void send_piece(const std::shared_ptr<const instance_record>& rec, const std::vector<const field_placement*>& f,
                instance src, instance dst, const transfer& t, const std::vector<rect<3>>& piece, std::uint32_t total,
                event done) {
  const storage from = storage_of(*rec);
  const std::size_t size = points_in(piece) * bytes_per_point(f);
  std::shared_ptr<std::vector<std::byte>> packed;
  const std::byte* bytes = nullptr;
  if (f.size() == 1 && piece.size() == 1 && contiguous(from, *f[0], piece[0])) {
    bytes = field_at(from, *f[0], piece[0].lo);  // travels as it lies in the instance
  } else {
    packed = std::make_shared<std::vector<std::byte>>(size);
    const std::uint64_t start = trace::span_begin();
    pack(from, f, piece, packed->data());
    end_transfer_span(start, t, size, dst.owner());
    bytes = packed->data();
  }
  const event sent = am::send_zero_copy(
      dst.owner(),
      [](instance d, const transfer& tr, const std::vector<rect<3>>& rs, std::uint32_t n, event e, int from_rank,
         rill::view<std::byte> b) { receive_piece(d, tr, rs, n, e, from_rank, std::span(b.data(), b.size())); },
      dst, t, piece, total, done, src.owner(), rill::view<std::byte>(bytes, size));
  // The message reads the piece where it is: keep it (and the source instance) until it is sent.
  when_triggered(sent, [keep = std::move(packed), hold = rec](const poison_ptr&) {});
}

// A transfer to a rank that cannot address the destination's storage but maps this rank's
// segment (a node neighbour's system memory): its pieces are packed into room staged in the
// segment, a window at a time (data_module::staging_budget), and the destination's rank unpacks
// each from there and acknowledges it, which frees the room for the next. Each rank makes one
// copy and the two overlap, where a message would leave both the transport's copy and the
// unpacking to the destination. A piece that finds no room while none of the transfer's is
// staged goes as a message instead. Acknowledgements come back to this process and carry the
// state's address; while pieces are staged the state keeps itself alive (`self`).
struct staged_transfer {
  staged_transfer(std::shared_ptr<const instance_record> r, std::vector<const field_placement*> f, instance from,
                  instance to, const transfer& tr, std::vector<std::vector<rect<3>>> p, event e)
      : rec(std::move(r)),
        fields(std::move(f)),
        src(from),
        dst(to),
        t(tr),
        pieces(std::move(p)),
        total(static_cast<std::uint32_t>(pieces.size())),
        done(e),
        per_point(bytes_per_point(fields)) {}

  std::shared_ptr<const instance_record> rec;
  std::vector<const field_placement*> fields;
  instance src, dst;
  transfer t;
  std::vector<std::vector<rect<3>>> pieces;
  std::uint32_t total;
  event done;
  std::size_t per_point;
  std::mutex lock;
  std::size_t next = 0;                   // the first piece not yet sent, under lock
  std::size_t in_flight = 0;              // pieces staged and not acknowledged, under lock
  std::shared_ptr<staged_transfer> self;  // while in_flight > 0, under lock
};

void read_staged_piece(instance dst, const transfer& t, const std::vector<rect<3>>& rects, std::uint32_t total,
                       event done, int from, std::uintptr_t at, std::uint64_t bytes, std::uint8_t tag,
                       std::uintptr_t state);

// Stages (or, without room, sends) pieces until the window is full or none is left.
void stage_more(const std::shared_ptr<staged_transfer>& s) {
  data_module& here = data_here(s->t.what());
  for (;;) {
    std::size_t i = 0;
    {
      std::lock_guard g(s->lock);
      if (s->next == s->pieces.size()) return;
      i = s->next;
    }
    const std::vector<rect<3>>& piece = s->pieces[i];
    const std::size_t size = points_in(piece) * s->per_point;
    const segment::allocation room = here.stage(size);
    {
      std::lock_guard g(s->lock);
      if (s->next != i || (!room.at && s->in_flight > 0)) {
        // Another thread took this piece, or the window is full: an acknowledgement goes on.
        if (room.at) here.unstage(room.at, room.tag, size);
        if (s->next != i) continue;
        return;
      }
      s->next = i + 1;
      if (room.at && s->in_flight++ == 0) s->self = s;
    }
    if (!room.at) {
      send_piece(s->rec, s->fields, s->src, s->dst, s->t, piece, s->total, s->done);
      continue;
    }
    const std::uint64_t start = trace::span_begin();
    pack(storage_of(*s->rec), s->fields, piece, static_cast<std::byte*>(room.at));
    end_transfer_span(start, s->t, size, s->dst.owner());
    am::send(
        s->dst.owner(),
        [](instance d, const transfer& tr, const std::vector<rect<3>>& rs, std::uint32_t n, event e, int from,
           std::uintptr_t at, std::uint64_t bytes, std::uint8_t tag,
           std::uintptr_t state) { read_staged_piece(d, tr, rs, n, e, from, at, bytes, tag, state); },
        s->dst, s->t, piece, s->total, s->done, s->src.owner(), reinterpret_cast<std::uintptr_t>(room.at),
        static_cast<std::uint64_t>(size), room.tag, reinterpret_cast<std::uintptr_t>(s.get()));
    // Now, not when this loop ends: the destination unpacks this piece while the next is packed.
    am::flush();
  }
}

// At the source's rank: the destination has read a staged piece.
void staged_piece_read(std::uintptr_t state, std::uintptr_t at, std::uint8_t tag, std::uint64_t bytes) {
  auto* raw = reinterpret_cast<staged_transfer*>(state);
  std::shared_ptr<staged_transfer> s;
  {
    std::lock_guard g(raw->lock);
    s = raw->self;  // alive: this piece was in flight
    if (--raw->in_flight == 0) raw->self.reset();
  }
  data_here(s->t.what()).unstage(reinterpret_cast<void*>(at), tag, static_cast<std::size_t>(bytes));
  stage_more(s);
}

// At the destination's rank: a piece rank `from` staged in its segment at `at`.
void read_staged_piece(instance dst, const transfer& t, const std::vector<rect<3>>& rects, std::uint32_t total,
                       event done, int from, std::uintptr_t at, std::uint64_t bytes, std::uint8_t tag,
                       std::uintptr_t state) {
  data_module& here = data_here(t.what());
  const std::byte* in = nullptr;
  try {
    in = here.staged_at(from, at, static_cast<std::size_t>(bytes));
  } catch (const misuse_error& e) {
    count_piece(here, t, total, done, e.what());
  }
  if (in) receive_piece(dst, t, rects, total, done, from, std::span(in, static_cast<std::size_t>(bytes)));
  am::send(
      from,
      [](std::uintptr_t st, std::uintptr_t a, std::uint8_t tg, std::uint64_t b) { staged_piece_read(st, a, tg, b); },
      state, at, tag, bytes);
}

// At the source's rank: checks the whole transfer, then moves it into the destination's storage
// when this rank can address it, or sends the points piece by piece.
void move_from_source(instance src, instance dst, const transfer& t, const destination_info& to, event done) {
  data_module& here = data_here(t.what());
  std::shared_ptr<const instance_record> rec;
  std::vector<const field_placement*> f;
  index_space<3> domain;
  try {
    rec = here.find(src, t.what());
    f = placements(*rec, t.src_fields, "source", t);
    std::vector<std::uint64_t> dst_sizes;
    for (const field_placement& p : to.fields) dst_sizes.push_back(p.bytes);
    check_sizes(t, sizes_of(f), dst_sizes);
    domain = t.whole ? rec->space : t.over;
    check_inside(domain, rec->space, "source", src, t);
    check_inside(domain, to.space, "destination", dst, t);
  } catch (const misuse_error& e) {
    event_poison(done, failure_of(t, e.what()));
    return;
  }
  const storage from = storage_of(*rec);
  if (std::byte* there = here.reachable(dst, to.address, static_cast<std::size_t>(to.bytes))) {
    std::vector<const field_placement*> to_f;
    for (const field_placement& p : to.fields) to_f.push_back(&p);
    const std::uint64_t start = trace::span_begin();
    const std::size_t moved = move_domain(t.combine(), storage{there, to.space.bounds()}, to_f, from, f, domain);
    end_transfer_span(start, t, moved, dst.owner());
    event_trigger(done);
    return;
  }
  const std::size_t per_point = bytes_per_point(f);
  const std::vector<std::vector<rect<3>>> pieces = plan_pieces(domain, per_point);
  if (pieces.empty()) {
    event_trigger(done);
    return;
  }
  const auto total = static_cast<std::uint32_t>(pieces.size());
  if (here.maps_my_segment(dst.owner())) {
    stage_more(std::make_shared<staged_transfer>(rec, f, src, dst, t, pieces, done));
    return;
  }
  for (const std::vector<rect<3>>& piece : pieces) send_piece(rec, f, src, dst, t, piece, total, done);
}

// At the destination's rank, once the transfer's precondition has triggered.
void start_at_destination(instance src, instance dst, const transfer& t, event done) {
  data_module& here = data_here(t.what());
  const std::shared_ptr<const instance_record> d = here.find(dst, t.what());
  const std::vector<const field_placement*> df = placements(*d, t.dst_fields, "destination", t);
  if (src.owner() != here.id()) {
    destination_info to{{}, d->space, reinterpret_cast<std::uintptr_t>(d->data), d->placement.bytes};
    for (const field_placement* p : df) to.fields.push_back(*p);
    am::send(
        src.owner(),
        [](instance s, instance ds, const transfer& tr, const destination_info& info, event e) {
          on_channel([=] { move_from_source(s, ds, tr, info, e); });
        },
        src, dst, t, to, done);
    return;
  }
  const std::shared_ptr<const instance_record> s = here.find(src, t.what());
  const std::vector<const field_placement*> sf = placements(*s, t.src_fields, "source", t);
  check_sizes(t, sizes_of(sf), sizes_of(df));
  const index_space<3>& domain = t.whole ? s->space : t.over;
  check_inside(domain, s->space, "source", src, t);
  check_inside(domain, d->space, "destination", dst, t);
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
  return started_at(
      dst.owner(), after,
      [](instance s, instance d, const transfer& tr, event e) { start_at_destination(s, d, tr, e); }, src, dst, t);
}

event fill_padded(instance inst, field_id f, std::vector<std::byte> value, const index_space<3>* over, int dims,
                  event after) {
  check_handles(inst, inst, over, dims, "rill::fill");
  return started_at(
      inst.owner(), after,
      [](instance i, field_id id, const std::vector<std::byte>& v, bool whole, const index_space<3>& o, event done) {
        data_module& here = data_here("rill::fill");
        const std::shared_ptr<const instance_record> rec = here.find(i, "rill::fill");
        const field_placement* p = rec->placement.find(id);
        if (!p) throw misuse_error(fmt::format("rill::fill: instance {:#x} has no field {}", i.id(), id));
        if (p->bytes != v.size())
          throw misuse_error(fmt::format("rill::fill: field {} of instance {:#x} has {} bytes, the value {}", id,
                                         i.id(), p->bytes, v.size()));
        const index_space<3>& domain = whole ? rec->space : o;
        const std::size_t outside = domain.subtract(rec->space).volume();
        if (outside != 0)
          throw misuse_error(fmt::format(
              "rill::fill: {} point(s) to fill are not in the index space of instance {:#x}; nothing was written",
              outside, i.id()));
        const std::uint64_t start = trace::span_begin();
        for (const rect<3>& r : domain.rects())
          for_each_row_start(r, [&](const point<3>& q) {
            std::byte* at = field_at(storage_of(*rec), *p, q);
            for (std::size_t k = 0, n = row_length(r); k < n; ++k, at += p->strides[0])
              std::memcpy(at, v.data(), v.size());
          });
        trace::span_end<trace::kind::fill>(start, 0, domain.volume() * v.size());
        event_trigger(done);
      },
      inst, f, value, over == nullptr, over ? *over : index_space<3>());
}

}  // namespace rill::detail
