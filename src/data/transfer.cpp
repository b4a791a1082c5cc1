// The pieces of a copy or reduction between instances (transfer.hpp): checks, packing and
// unpacking, and a piece's message from the source's rank to the destination's.
#include "data/transfer.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "data/opaque_elements.hpp"
#include "data/started_at.hpp"
#include "rill/view.hpp"
#include "rill/zero_copy.hpp"
#include "trace/hooks.hpp"

namespace rill::detail::transfers {
namespace {

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

// The same for a piece packed by pack_serialized(): its length is only known by reading it.
void unpack_serialized(const storage& to, const std::vector<const field_placement*>& fields,
                       const std::vector<rect<3>>& rects, std::span<const std::byte> bytes) {
  const std::byte* in = bytes.data();
  const std::byte* const end = in + bytes.size();
  for (const field_placement* f : fields)
    for (const rect<3>& r : rects)
      for_each_row_start(r, [&](const point<3>& p) {
        const std::size_t n = row_length(r);
        if (f->opaque) {
          in = deserialize_row(entry_of(*f), field_at(to, *f, p), f->strides[0], n, in, end);
          return;
        }
        if (static_cast<std::size_t>(end - in) < n * f->bytes)
          throw misuse_error("rill::copy: a piece of serialized objects ends early");
        copy_row(field_at(to, *f, p), f->strides[0], in, static_cast<std::ptrdiff_t>(f->bytes), n, f->bytes);
        in += n * f->bytes;
      });
  if (in != end) throw misuse_error("rill::copy: a piece of serialized objects has bytes left over");
}

}  // namespace

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

void check_kinds(const transfer& t, const std::vector<const field_placement*>& src,
                 const std::vector<const field_placement*>& dst) {
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (t.op && (src[i]->opaque || dst[i]->opaque))
      throw misuse_error(
          fmt::format("rill::reduce: field {} holds opaque objects, which are copied, not reduced; nothing was written",
                      src[i]->opaque ? t.src_fields[i] : t.dst_fields[i]));
    if (src[i]->opaque != dst[i]->opaque)
      throw misuse_error(fmt::format(
          "rill::copy: field {} of the source holds {} and field {} of the destination {}; nothing was copied",
          t.src_fields[i], src[i]->opaque ? "opaque objects" : "bytes", t.dst_fields[i],
          !dst[i]->opaque  ? "bytes"
          : src[i]->opaque ? "objects of another type"
                           : "opaque objects"));
  }
}

bool any_opaque(const std::vector<const field_placement*>& fields) {
  return std::any_of(fields.begin(), fields.end(), [](const field_placement* f) { return f->opaque != 0; });
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

std::vector<std::vector<rect<3>>> plan_pieces(const index_space<3>& domain, std::size_t bytes_per_point,
                                              std::size_t most) {
  const std::size_t limit = std::max<std::size_t>(1, most / bytes_per_point);
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

std::vector<std::byte> pack_serialized(const storage& from, const std::vector<const field_placement*>& fields,
                                       const std::vector<rect<3>>& rects) {
  std::vector<std::byte> out;
  for (const field_placement* f : fields)
    for (const rect<3>& r : rects)
      for_each_row_start(r, [&](const point<3>& p) {
        const std::size_t n = row_length(r);
        if (f->opaque) {
          serialize_row(entry_of(*f), field_at(from, *f, p), f->strides[0], n, out);
          return;
        }
        const std::size_t at = out.size();
        out.resize(at + n * f->bytes);
        copy_row(out.data() + at, static_cast<std::ptrdiff_t>(f->bytes), field_at(from, *f, p), f->strides[0], n,
                 f->bytes);
      });
  return out;
}

std::size_t packed_per_point(const storage& from, const std::vector<const field_placement*>& fields,
                             const index_space<3>& domain) {
  if (!any_opaque(fields)) return bytes_per_point(fields);
  std::size_t total = 0;
  for (const field_placement* f : fields)
    for (const rect<3>& r : domain.rects()) {
      if (!f->opaque) {
        total += r.volume() * f->bytes;
        continue;
      }
      for_each_row_start(r, [&](const point<3>& p) {
        total += serialized_size(entry_of(*f), field_at(from, *f, p), f->strides[0], row_length(r));
      });
    }
  return std::max<std::size_t>(1, total / std::max<std::size_t>(1, domain.volume()));
}

std::size_t move_domain(row_op op, const storage& to, const std::vector<const field_placement*>& to_f,
                        const storage& from, const std::vector<const field_placement*>& from_f,
                        const index_space<3>& domain) {
  std::size_t moved = 0;
  for (std::size_t i = 0; i < from_f.size(); ++i)
    for (const rect<3>& r : domain.rects())
      for_each_row_start(r, [&](const point<3>& p) {
        const std::size_t n = row_length(r);
        if (to_f[i]->opaque) {
          moved += deep_copy_row(entry_of(*to_f[i]), field_at(to, *to_f[i], p), to_f[i]->strides[0],
                                 field_at(from, *from_f[i], p), from_f[i]->strides[0], n);
          return;
        }
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

void count_piece(data_module& here, const transfer& t, std::uint32_t total, event done, const std::string& failure) {
  switch (here.piece_arrived(done, total, !failure.empty())) {
    case data_module::copy_outcome::trigger: event_trigger(done); break;
    case data_module::copy_outcome::poison: event_poison(done, failure_of(t, failure)); break;
    case data_module::copy_outcome::wait: break;
  }
}

void receive_piece(instance dst, const transfer& t, const std::vector<rect<3>>& rects, std::uint32_t total, event done,
                   int from, std::span<const std::byte> bytes) {
  data_module& here = data_here(t.what());
  std::string failure;
  try {
    const std::shared_ptr<const instance_record> rec = here.find_any(dst, t.what());
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
    const bool serialized = any_opaque(f);
    if (!serialized && bytes.size() != points_in(rects) * per_point)
      throw misuse_error(fmt::format("{}: a piece from rank {} has {} bytes for {} points", t.what(), from,
                                     bytes.size(), points_in(rects)));
    if (rec->external) {
      // Written by an I/O thread, from a copy of the message's bytes (they are the handler's).
      std::vector<std::byte> in(bytes.begin(), bytes.end());
      std::shared_ptr<io_run> run;
      if (f.size() == 1 && rects.size() == 1 && !serialized &&
          bytes.size() == rects.front().volume() * f.front()->bytes)
        run = run_of(*rec->external, *f.front(), rects.front(), in.data(), true);
      if (run) {
        // One range of a file: the I/O queue writes it, perhaps in one call with the pieces beside
        // it. (The closure holds the resource and the bytes.)
        on_io(run, [rec, run, t, total, done, &here, in = std::move(in)] {
          std::string failed;
          try {
            if (run->failure) std::rethrow_exception(run->failure);
          } catch (const std::exception& e) {
            failed = e.what();
          }
          count_piece(here, t, total, done, failed);
        });
        return;
      }
      io_place where = rec->external->place(*f.front(), rects.empty() ? rect<3>{} : rects.front());
      where.end = where.begin + in.size();
      on_io(where, [=, &here, in = std::move(in)] {
        std::string failed;
        try {
          unpack_into_store(*rec->external, f, rects, in.data(), in.data() + in.size());
        } catch (const misuse_error& e) {
          failed = e.what();
        }
        count_piece(here, t, total, done, failed);
      });
      return;
    }
    const std::uint64_t start = trace::span_begin();
    if (serialized)
      unpack_serialized(storage_of(*rec), f, rects, bytes);
    else
      unpack(t.combine(), storage_of(*rec), f, packed_bytes, rects, bytes.data());
    end_transfer_span(start, t, bytes.size(), from);
  } catch (const misuse_error& e) {
    failure = e.what();
  }
  count_piece(here, t, total, done, failure);
}

void send_piece(const std::shared_ptr<const instance_record>& rec, const std::vector<const field_placement*>& f,
                instance src, instance dst, const transfer& t, const std::vector<rect<3>>& piece, std::uint32_t total,
                event done) {
  const storage from = storage_of(*rec);
  std::size_t size = points_in(piece) * bytes_per_point(f);
  std::shared_ptr<std::vector<std::byte>> packed;
  const std::byte* bytes = nullptr;
  if (rec->external || any_opaque(f)) {
    packed = std::make_shared<std::vector<std::byte>>();
    try {
      const std::uint64_t start = trace::span_begin();
      if (rec->external)
        pack_from_store(*rec->external, f, piece, *packed);  // (on an I/O thread: move_from_source)
      else
        *packed = pack_serialized(from, f, piece);
      if (!rec->external) end_transfer_span(start, t, packed->size(), dst.owner());
    } catch (const misuse_error& e) {
      // The piece counts as arrived, failed: the copy's event is poisoned with the resource's error.
      am::send(
          dst.owner(),
          [](const transfer& tr, std::uint32_t n, event e, const std::string& why) {
            count_piece(data_here(tr.what()), tr, n, e, why);
          },
          t, total, done, std::string(e.what()));
      return;
    }
    bytes = packed->data();
    size = packed->size();
  } else if (f.size() == 1 && piece.size() == 1 && contiguous(from, *f[0], piece[0])) {
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

}  // namespace rill::detail::transfers
