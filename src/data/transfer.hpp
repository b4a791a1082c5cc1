// What copies and reductions between instances share (copy.cpp, staged_transfer.cpp): the
// transfer a message describes, the checks made before a byte moves, and its points cut into
// pieces that travel as messages and are unpacked at the destination.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/data_module.hpp"
#include "data/field_rows.hpp"
#include "rill/copy.hpp"
#include "rill/event.hpp"

namespace rill::detail::transfers {

// The most one message of a copy (or a replay) carries: large enough that a message's own cost
// vanishes against its bytes, small enough that packing the next piece overlaps sending this one.
constexpr std::size_t piece_bytes = std::size_t{1} << 20;
// The most one piece of a transfer staged in a node neighbour's view of this rank's segment
// (staged_transfer.hpp) holds: it travels as a message only when no staging room is left, so
// mostly only the pipeline between the source's packing and the destination's unpacking counts,
// and smaller pieces keep both ranks copying. Measured with COPY into a neighbour's system memory
// (16 MiB, 2 ranks, MPI 14-17 GB/s beside it): 1 MiB pieces 9.2-10.5 GB/s, 512 KiB 14.1-15.1,
// 256 KiB 13.0-15.7, 128 KiB 11.2-13.0.
constexpr std::size_t staged_piece_bytes = std::size_t{1} << 19;

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
void end_transfer_span(std::uint64_t start, const transfer& t, std::size_t bytes, int peer);

// The placements of `fields` in rec; an error naming the instance's `role` if one is missing.
std::vector<const field_placement*> placements(const instance_record& rec, const std::vector<field_id>& fields,
                                               const char* role, const transfer& t);
// Errors unless the source's and destination's field sizes suit the transfer.
void check_sizes(const transfer& t, const std::vector<std::uint64_t>& src, const std::vector<std::uint64_t>& dst);
// Errors unless each pair of fields holds the same thing (bytes, or objects of one
// serialization) and a reduction has no opaque field.
void check_kinds(const transfer& t, const std::vector<const field_placement*>& src,
                 const std::vector<const field_placement*>& dst);
bool any_opaque(const std::vector<const field_placement*>& fields);
std::vector<std::uint64_t> sizes_of(const std::vector<const field_placement*>& p);
// Errors unless every point of `domain` is in `space`, the index space of the `role` instance.
void check_inside(const index_space<3>& domain, const index_space<3>& space, const char* role, instance inst,
                  const transfer& t);

// The domain's rects, cut and grouped into pieces of at most `most` bytes each.
std::vector<std::vector<rect<3>>> plan_pieces(const index_space<3>& domain, std::size_t bytes_per_point,
                                              std::size_t most = piece_bytes);
std::size_t points_in(const std::vector<rect<3>>& rects);
std::size_t bytes_per_point(const std::vector<const field_placement*>& fields);
// A piece's bytes: each field in turn, its points in index-space order.
void pack(const storage& from, const std::vector<const field_placement*>& fields, const std::vector<rect<3>>& rects,
          std::byte* out);
// The same with opaque fields among them, their objects serialized (opaque_elements.hpp).
std::vector<std::byte> pack_serialized(const storage& from, const std::vector<const field_placement*>& fields,
                                       const std::vector<rect<3>>& rects);
// The bytes of the domain's points in the message pieces of a transfer, per point on average.
std::size_t packed_per_point(const storage& from, const std::vector<const field_placement*>& fields,
                             const index_space<3>& domain);
// Moves every field of the domain's points, row by row; returns the source bytes moved.
std::size_t move_domain(row_op op, const storage& to, const std::vector<const field_placement*>& to_f,
                        const storage& from, const std::vector<const field_placement*>& from_f,
                        const index_space<3>& domain);

// The same when one side or both are external (external_transfer.cpp), on an I/O thread: each
// side is memory (`mem`) or a resource (`store`, non-null). Copies only; returns the bytes moved.
struct io_side {
  const storage* mem = nullptr;
  external_store* store = nullptr;
};
std::size_t move_domain_io(const io_side& to, const std::vector<const field_placement*>& to_f, const io_side& from,
                           const std::vector<const field_placement*>& from_f, const index_space<3>& domain);
// A piece's bytes as pack() or pack_serialized() lay them out, read from a resource and appended
// to `out`; and written into one, from `in` (not past `end`).
void pack_from_store(external_store& from, const std::vector<const field_placement*>& fields,
                     const std::vector<rect<3>>& rects, std::vector<std::byte>& out);
void unpack_into_store(external_store& to, const std::vector<const field_placement*>& fields,
                       const std::vector<rect<3>>& rects, const std::byte* in, const std::byte* end);
// Writes `value` into field f of the domain's points of a resource.
void fill_store(external_store& to, const field_placement& f, std::span<const std::byte> value,
                const index_space<3>& domain);

poison_ptr failure_of(const transfer& t, const std::string& why);
// At the destination's rank: a piece of the transfer whose event is `done` has been written (or
// failed, saying why): the last one triggers or poisons the event.
void count_piece(data_module& here, const transfer& t, std::uint32_t total, event done, const std::string& failure);
// At the destination's rank: one piece of a transfer from rank `from`, unpacked and counted.
void receive_piece(instance dst, const transfer& t, const std::vector<rect<3>>& rects, std::uint32_t total, event done,
                   int from, std::span<const std::byte> bytes);
// At the source's rank: one piece as a zero-copy message, straight from the instance when it is
// one field's contiguous range, else packed first.
void send_piece(const std::shared_ptr<const instance_record>& rec, const std::vector<const field_placement*>& f,
                instance src, instance dst, const transfer& t, const std::vector<rect<3>>& piece, std::uint32_t total,
                event done);

}  // namespace rill::detail::transfers
