// External resources as instances (Realm's external instances, Iris §II-D): a file whose bytes are
// an instance's data, an HDF5 file whose datasets are its fields, an SQLite table whose rows are
// its points, or objects the program holds, attached in the external memory of a rank. Nothing is read or written when
// it is attached; copies into and out of it do the I/O, on the rank's I/O threads
// (--rill:io-threads), never on a worker; its destruction makes what was written durable.
//
//   auto [disk, ready] = rill::attach_instance(rill::memory::external(0), rill::rect<2>{{0, 0}, {999, 999}},
//                                              rill::field_space{value}, rill::file_resource{"m.bin"});
//   auto [mem, made] = rill::instance::create(rill::memory::system(1), rill::rect<2>{{0, 0}, {999, 999}},
//                                             rill::field_space{value});
//   rill::event loaded = rill::copy(disk, mem, {value.id}, rill::merge(ready, made));   // pread on rank 0
//   rill::event closed = disk.destroy(loaded);                                            // close(2)
//
// A file holds the instance's layout as bytes from offset 0 (rill/layout.hpp: each field an array
// over the bounding rect, dimension 0 fastest unless ordered otherwise, arrays on 64-byte
// boundaries): a matrix of doubles written by another program is a one-field struct-of-arrays
// instance. Errors -- a missing file, one of another size, a read-only file attached read-write,
// a failed read or write, a full disk -- poison the event of the operation that met them, naming
// the file and the cause. See docs/external.md.
#pragma once
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "rill/event.hpp"
#include "rill/instance.hpp"
#include "rill/opaque.hpp"

namespace rill {

// How an attached resource may be used.
enum class io_mode : std::uint8_t {
  read_only,      // copies out of it only; the resource must exist
  read_write,     // copies both ways, written in place; the resource must exist
  write_discard,  // created or replaced: written to a new file that takes the name when it is destroyed
};

// A file holding an instance's bytes. In write_discard mode the data goes to a temporary file
// beside it, which is synced and renamed over `path` when the instance is destroyed: a crash
// before then leaves the old file (or none) whole, never a torn one.
struct file_resource {
  std::string path;
  io_mode mode = io_mode::read_only;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(path, mode);
  }
};

// What a field's values are in a resource that has types (an HDF5 dataset, an SQLite column).
enum class element_type : std::uint8_t { i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 };
template <class T>
constexpr element_type element_type_of() {
  static_assert(std::is_arithmetic_v<T>, "rill::element_type_of: an integer or floating-point type");
  if constexpr (std::is_floating_point_v<T>) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "rill::element_type_of: float or double");
    return sizeof(T) == 4 ? element_type::f32 : element_type::f64;
  } else {
    constexpr int log = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
    return static_cast<element_type>(2 * log + (std::is_signed_v<T> ? 0 : 1));
  }
}

// Where a field is in a resource that names its parts -- an HDF5 dataset's path in the file
// ("T", "fields/T"), an SQLite column -- and what its values are there.
struct stored_field {
  std::string name;
  element_type type = element_type::f64;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, type);
  }
};
// {field's id, where it is stored} for hdf5_resource::datasets and sqlite_resource::columns, the
// type from the field's: rill::stored_as(temperature, "T").
template <class T>
std::pair<const field_id, stored_field> stored_as(field<T> f, std::string name) {
  return {f.id, stored_field{std::move(name), element_type_of<T>()}};
}

// An HDF5 file whose datasets hold an instance's fields, one each (Iris Fig. 7): a dataset of N
// dimensions over the bounding rect, whose dimension k is the instance's dimension N-1-k, so that
// the file's order (its last dimension fastest) is the instance's index-space order (dimension 0
// fastest): a region over {{0, 0}, {W-1, H-1}} is a dataset of shape (H, W), element [y][x] the
// point (x, y). Existing datasets must have exactly that shape and the field's type; read_write
// creates the file and datasets that are missing, write_discard builds a new file (under a
// temporary name, renamed over `path` when destroyed, as for a file_resource). A copy of a
// subspace reads or writes its hyperslabs only.
struct hdf5_resource {
  std::string path;
  std::map<field_id, stored_field> datasets;
  io_mode mode = io_mode::read_only;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(path, datasets, mode);
  }
};
// An SQLite table as a 1-D instance (the relational database of Iris §V-A): point i is the row
// whose rowid is i, and each field a column -- INTEGER for integer fields, REAL for floating-point
// ones. A copy reads the rows of its points (each must exist, its value not NULL) and writes them
// in one transaction per rect and field (updating a row, or inserting it with that rowid).
// read_write makes a missing database file, table or column; write_discard builds a new database
// beside the old and renames it when destroyed. An existing column must be declared with an
// affinity that holds the field's values.
struct sqlite_resource {
  std::string path;
  std::string table;
  std::map<field_id, stored_field> columns;
  io_mode mode = io_mode::read_only;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(path, table, columns, mode);
  }
};
// Objects the program holds (Iris §II-G), as a 1-D instance of one opaque field (rill/opaque.hpp)
// of their type: point lo + i is objects[i]. Attached in the external memory of the rank whose
// process holds them (the calling rank), with the field space {f} of an opaque_field<T, S> f.
// A copy out of it serializes the objects (they stay the program's); a copy into it -- the
// write-back of a release or a restricted launch -- puts a new object in each of its points'
// places and destroys the one it replaces with S::destroy, so the program's array always points
// to the current objects (read_write and write_discard alike; read_only refuses it). The array
// must outlive the attachment, and the program leaves the objects alone while copies run (it
// cannot be told apart from them: attached, every launch copies them afresh; acquired, copies
// are reused). Nothing is synced at the detach.
struct opaque_resource {
  std::uintptr_t objects = 0;  // T** as an integer: only meaningful in the process that holds them
  std::uint64_t count = 0;
  std::intptr_t serialization = 0;  // the code offset of the type's detail::opaque_entry
  io_mode mode = io_mode::read_write;

  template <class T, class S = serdes<T>>
  static opaque_resource of(std::span<T*> objects, io_mode mode = io_mode::read_write) {
    return {reinterpret_cast<std::uintptr_t>(objects.data()), objects.size(), detail::opaque_offset<T, S>(), mode};
  }
  template <class Archive>
  void serialize(Archive& ar) {
    std::uint64_t at = objects;
    std::int64_t s = serialization;
    ar(at, count, s, mode);
    objects = static_cast<std::uintptr_t>(at);
    serialization = static_cast<std::intptr_t>(s);
  }
};
// What can be attached.
using external_resource = std::variant<file_resource, hdf5_resource, sqlite_resource, opaque_resource>;

namespace detail {
// (bounds: of the layout the resource holds, around space: larger for a part of a region,
// rill/attach.hpp's attach_options::within.)
created_instance attach_padded(memory m, int dims, const index_space<3>& space, const rect<3>& bounds,
                               const field_space& fields, const external_resource& r, const layout& l, event after);
// How attached regions (rill/attach.hpp) learn whether a resource changed behind their back: on
// the resource's rank, once `after` has triggered, its state is remembered under `slot`
// (snapshot); `fields` of `over` are copied from it into dst unless it is still as at `slot`
// (refresh: dst holds that state's data already); the event is poisoned, naming the resource and
// `what`, if it changed since `slot` (unchanged).
event external_snapshot(instance ext, std::uint64_t slot, event after);
event external_refresh(instance ext, instance dst, std::vector<field_id> fields, const index_space<3>& over, int dims,
                       std::uint64_t slot, event after);
event external_unchanged(instance ext, std::uint64_t slot, event after, const char* what);
// The resource synced and closed as instance::destroy does, once `after` has triggered; nothing
// (and no error) if its attach failed.
event external_close(instance ext, event after);
}  // namespace detail

// An instance of `space` and `fields` whose data is the resource, in external memory m (the rank
// whose I/O threads reach it), attached once `after` has triggered: the resource is opened and
// checked then (it exists, has the layout's size, allows the mode), and the returned event
// triggers, or is poisoned naming what is wrong.
template <int N>
created_instance attach_instance(memory m, const index_space<N>& space, const field_space& fields,
                                 const external_resource& r, const layout& l = layout::soa(),
                                 event after = event::none()) {
  const index_space<3> padded = padded_to_3d(space);
  return detail::attach_padded(m, N, padded, padded.bounds(), fields, r, l, after);
}
template <int N>
created_instance attach_instance(memory m, const rect<N>& space, const field_space& fields, const external_resource& r,
                                 const layout& l = layout::soa(), event after = event::none()) {
  return attach_instance(m, index_space<N>(space), fields, r, l, after);
}

// The calling rank's external I/O so far: operations (each a system call or library call that
// moves data), the bytes they moved, and the syncs that made writes durable; and what its I/O
// queue did (docs/external.md, "I/O scheduling").
struct io_counts {
  std::uint64_t attached = 0;  // resources opened
  std::uint64_t reads = 0;
  std::uint64_t writes = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t syncs = 0;
  std::uint64_t scheduled = 0;     // pieces of I/O work queued for the I/O threads
  std::uint64_t seeks_back = 0;    // reads and writes that began before the previous one of their
                                   //   device ended, in the same file
  std::uint64_t most_running = 0;  // the most reads and writes of one device that ran at once
  std::uint64_t bytes_direct = 0;  // of bytes_read and bytes_written, those that bypassed the page
                                   //   cache (--rill:io-direct)
  std::uint64_t fused = 0;         // reads and writes done in the system call of another, next to
                                   //   them in the same file (--rill:io-fuse): not in reads, writes
};
io_counts io_counts_here();

}  // namespace rill
