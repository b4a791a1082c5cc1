// Copies into and out of external instances (transfer.hpp, rill/external.hpp), on I/O threads.
// A resource reads and writes a field's elements at a rect's points densely, in index-space
// order: into the memory instance's own rows when they lie that way too (one read straight into
// place), else through a buffer that the rows are packed from or unpacked into. Rects are cut so
// that a buffer holds at most piece_bytes.
#include <cstring>
#include <vector>

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

}  // namespace

std::size_t move_domain_io(const io_side& to, const std::vector<const field_placement*>& to_f, const io_side& from,
                           const std::vector<const field_placement*>& from_f, const index_space<3>& domain) {
  std::vector<std::byte> buffer;
  std::size_t moved = 0;
  for (std::size_t i = 0; i < from_f.size(); ++i) {
    const field_placement& tf = *to_f[i];
    const field_placement& ff = *from_f[i];
    for (const rect<3>& r : cut(domain, ff.bytes)) {
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
                     const std::vector<rect<3>>& rects, std::byte* out) {
  for (const field_placement* f : fields)
    for (const rect<3>& r : rects) {
      const std::uint64_t start = trace::span_begin();
      from.read(*f, r, out);
      trace::span_end<trace::kind::io>(start, 0, r.volume() * f->bytes, 0);
      out += r.volume() * f->bytes;
    }
}

void unpack_into_store(external_store& to, const std::vector<const field_placement*>& fields,
                       const std::vector<rect<3>>& rects, const std::byte* in) {
  for (const field_placement* f : fields)
    for (const rect<3>& r : rects) {
      const std::uint64_t start = trace::span_begin();
      to.write(*f, r, in);
      trace::span_end<trace::kind::io>(start, 0, r.volume() * f->bytes, 0);
      in += r.volume() * f->bytes;
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
