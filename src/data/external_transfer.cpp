// Copies into and out of external instances (transfer.hpp, rill/external.hpp), on I/O threads.
// A resource reads and writes a field's elements at a rect's points densely, in index-space
// order: into the memory instance's own rows when they lie that way too (one read straight into
// place), else through a buffer that the rows are packed from or unpacked into. Rects are cut so
// that a buffer holds at most piece_bytes.
#include <cstring>
#include <vector>

#include "data/opaque_elements.hpp"
#include "data/transfer.hpp"
#include "trace/hooks.hpp"

namespace rill::detail::transfers {
namespace {

// The domain's rects cut so that one field's elements of each fill at most piece_bytes.
std::vector<rect<3>> cut(const index_space<3>& domain, std::size_t bytes) {
  std::vector<rect<3>> out;
  for (const std::vector<rect<3>>& piece : plan_pieces(domain, bytes))
    out.insert(out.end(), piece.begin(), piece.end());
  return out;
}

// Rows of field f of r between memory and a dense buffer.
void rows_to_dense(const storage& s, const field_placement& f, const rect<3>& r, std::byte* out) {
  for_each_row_start(r, [&](const point<3>& p) {
    const std::size_t n = row_length(r);
    copy_row(out, static_cast<std::ptrdiff_t>(f.bytes), field_at(s, f, p), f.strides[0], n, f.bytes);
    out += n * f.bytes;
  });
}
void dense_to_rows(const storage& s, const field_placement& f, const rect<3>& r, const std::byte* in) {
  for_each_row_start(r, [&](const point<3>& p) {
    const std::size_t n = row_length(r);
    copy_row(field_at(s, f, p), f.strides[0], in, static_cast<std::ptrdiff_t>(f.bytes), n, f.bytes);
    in += n * f.bytes;
  });
}

// An opaque field of r between sides (a resource of opaque objects holds pointers: its own, lent
// to a read; handed over by a write): the objects are copied, never the pointers.
std::size_t move_objects(const io_side& to, const field_placement& tf, const io_side& from, const field_placement& ff,
                         const rect<3>& r) {
  const opaque_entry e = entry_of(tf);
  const auto dense = static_cast<std::ptrdiff_t>(sizeof(void*));
  object_row lent(nullptr, r.volume());  // the source's objects, not ours to destroy
  if (from.store) from.store->read(ff, r, lent.bytes());
  std::size_t moved = 0;
  if (to.mem) {
    for_each_row_start(r, [&, at = std::size_t{0}](const point<3>& p) mutable {
      const std::size_t n = row_length(r);
      moved += from.store ? deep_copy_row(e, field_at(*to.mem, tf, p), tf.strides[0], lent.bytes() + at, dense, n)
                          : deep_copy_row(e, field_at(*to.mem, tf, p), tf.strides[0], field_at(*from.mem, ff, p),
                                          ff.strides[0], n);
      at += n * sizeof(void*);
    });
  } else {
    object_row made(e, r.volume());  // new objects, handed to the resource by its write
    if (from.store) {
      moved = deep_copy_row(e, made.bytes(), dense, lent.bytes(), dense, r.volume());
    } else {
      for_each_row_start(r, [&, at = std::size_t{0}](const point<3>& p) mutable {
        const std::size_t n = row_length(r);
        moved += deep_copy_row(e, made.bytes() + at, dense, field_at(*from.mem, ff, p), ff.strides[0], n);
        at += n * sizeof(void*);
      });
    }
    to.store->write(tf, r, made.bytes());
    made.hand_over();
  }
  return moved;
}

}  // namespace

std::size_t move_domain_io(const io_side& to, const std::vector<const field_placement*>& to_f, const io_side& from,
                           const std::vector<const field_placement*>& from_f, const index_space<3>& domain) {
  std::vector<std::byte> buffer;
  std::size_t moved = 0;
  for (std::size_t i = 0; i < from_f.size(); ++i) {
    const field_placement& tf = *to_f[i];
    const field_placement& ff = *from_f[i];
    for (const rect<3>& r : cut(domain, ff.bytes)) {
      if (tf.opaque) {
        const std::uint64_t start = trace::span_begin();
        const std::size_t n = move_objects(to, tf, from, ff, r);
        trace::span_end<trace::kind::io>(start, 0, n, 0);
        moved += n;
        continue;
      }
      const std::size_t bytes = r.volume() * ff.bytes;
      const std::uint64_t start = trace::span_begin();
      // Where the dense elements go or come from: memory's own rows when they are dense already.
      std::byte* dense = nullptr;
      if (to.mem && contiguous(*to.mem, tf, r))
        dense = field_at(*to.mem, tf, r.lo);
      else if (from.mem && contiguous(*from.mem, ff, r))
        dense = field_at(*from.mem, ff, r.lo);
      else {
        buffer.resize(bytes);
        dense = buffer.data();
      }
      if (from.store)
        from.store->read(ff, r, dense);
      else if (dense == buffer.data())
        rows_to_dense(*from.mem, ff, r, dense);
      if (to.store)
        to.store->write(tf, r, dense);
      else if (dense == buffer.data())
        dense_to_rows(*to.mem, tf, r, dense);
      trace::span_end<trace::kind::io>(start, 0, bytes, 0);
      moved += bytes;
    }
  }
  return moved;
}

void pack_from_store(external_store& from, const std::vector<const field_placement*>& fields,
                     const std::vector<rect<3>>& rects, std::vector<std::byte>& out) {
  for (const field_placement* f : fields)
    for (const rect<3>& r : rects) {
      const std::uint64_t start = trace::span_begin();
      const std::size_t at = out.size();
      if (f->opaque) {
        object_row lent(nullptr, r.volume());
        from.read(*f, r, lent.bytes());
        serialize_row(entry_of(*f), lent.bytes(), sizeof(void*), r.volume(), out);
      } else {
        out.resize(at + r.volume() * f->bytes);
        from.read(*f, r, out.data() + at);
      }
      trace::span_end<trace::kind::io>(start, 0, out.size() - at, 0);
    }
}

void unpack_into_store(external_store& to, const std::vector<const field_placement*>& fields,
                       const std::vector<rect<3>>& rects, const std::byte* in, const std::byte* end) {
  for (const field_placement* f : fields)
    for (const rect<3>& r : rects) {
      const std::uint64_t start = trace::span_begin();
      const std::byte* const was = in;
      if (f->opaque) {
        object_row made(entry_of(*f), r.volume());
        in = deserialize_row(entry_of(*f), made.bytes(), sizeof(void*), r.volume(), in, end);
        to.write(*f, r, made.bytes());
        made.hand_over();
      } else {
        if (static_cast<std::size_t>(end - in) < r.volume() * f->bytes)
          throw misuse_error("rill::copy: a piece for a resource ends early");
        to.write(*f, r, in);
        in += r.volume() * f->bytes;
      }
      trace::span_end<trace::kind::io>(start, 0, static_cast<std::size_t>(in - was), 0);
    }
}

void fill_store(external_store& to, const field_placement& f, std::span<const std::byte> value,
                const index_space<3>& domain) {
  std::vector<std::byte> buffer;
  for (const rect<3>& r : cut(domain, f.bytes)) {
    buffer.resize(r.volume() * f.bytes);
    for (std::size_t k = 0; k < r.volume(); ++k) std::memcpy(buffer.data() + k * f.bytes, value.data(), f.bytes);
    const std::uint64_t start = trace::span_begin();
    to.write(f, r, buffer.data());
    trace::span_end<trace::kind::io>(start, 0, buffer.size(), 0);
  }
}

}  // namespace rill::detail::transfers
