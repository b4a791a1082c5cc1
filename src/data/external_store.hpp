// The data of an external instance (rill/external.hpp): what a copy reads from and writes to in
// place of memory. Every call may block in the kernel, so only I/O threads make them, in the order
// of the rank's I/O queue (io_queue.hpp).
#pragma once
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "data/instance_layout.hpp"
#include "data/io_queue.hpp"
#include "rill/external.hpp"

namespace rill::detail {

// A rank's external I/O, counted as it happens (rill::io_counts).
struct io_counters {
  std::atomic<std::uint64_t> attached{0}, reads{0}, writes{0}, bytes_read{0}, bytes_written{0}, syncs{0};
  // The I/O queue's (io_queue.hpp): operations queued, those that began before where the one
  // before them on their device ended in the same file, and the most running on one device.
  std::atomic<std::uint64_t> scheduled{0}, seeks_back{0}, most_running{0};
  std::atomic<std::uint64_t> bytes_direct{0};  // moved by direct I/O (file_store.cpp)
  std::atomic<std::uint64_t> fused{0};         // operations whose I/O another's call did (io_queue.cpp)
  // One operation that moved `bytes`.
  void count(bool writing, std::uint64_t bytes) {
    (writing ? writes : reads).fetch_add(1, std::memory_order_relaxed);
    (writing ? bytes_written : bytes_read).fetch_add(bytes, std::memory_order_relaxed);
  }
};

class external_store {
 public:
  virtual ~external_store() = default;
  // Field f's elements at the points of r (within the instance's bounds), in index-space order
  // (dimension 0 fastest), densely: read into `out`, or written from `in`. Throw
  // rill::misuse_error naming the resource and the cause.
  virtual void read(const field_placement& f, const rect<3>& r, std::byte* out) = 0;
  virtual void write(const field_placement& f, const rect<3>& r, const std::byte* in) = 0;
  // Makes what was written durable and lets the resource go; throws on failure (the data may not
  // have reached the disk). Called once, after every read and write.
  virtual void close() = 0;
  // The resource's state as it is now, remembered under `slot`; and whether it is still in the
  // state remembered there (false for a slot never remembered). Another program's write changes
  // it; for a file, its size, modification and change times and inode (of the path: a file
  // replaced by a rename counts as changed).
  virtual void snapshot(std::uint64_t slot) = 0;
  virtual bool unchanged_since(std::uint64_t slot) = 0;
  // Whether the resource can tell (snapshot, unchanged_since): objects in memory cannot, and
  // are then read afresh by each refresh, and written back by a release without a check.
  virtual bool tracks_changes() const { return true; }
  // Whether field f's elements at r's points are one range of the resource, in index-space order,
  // that move_ranges can move -- a transfer the I/O queue may then fuse with others next to it in
  // the file (io_queue.hpp). A raw file's can be; a library's (HDF5, SQLite) cannot.
  virtual bool fusable(const field_placement& /*f*/, const rect<3>& /*r*/) const { return false; }
  // Moves the consecutive ranges of the resource from byte `at` on to or from `runs` (memory as
  // long as each), in one system call where it can; throws as read and write do. Only for ranges
  // fusable says are.
  virtual void move_ranges(std::uint64_t /*at*/, std::span<const ::iovec> /*runs*/, bool /*writing*/) {
    throw std::logic_error(name() + ": asked to move ranges it did not say it could");
  }
  // Where moving field f's elements at r's points does its I/O (io_queue.hpp): the device and
  // file, and the bytes of it (those from the first point's on, for a resource that cannot say
  // where in its file they lie). Objects in memory are on no device.
  virtual io_place place(const field_placement& f, const rect<3>& r) const = 0;
  // "file '/data/m.bin'": how errors name it.
  virtual const std::string& name() const = 0;
  virtual io_mode mode() const = 0;
};

// The I/O of moving field f's elements at r's points between `store` and dense `memory`, as a run
// the rank's I/O queue does itself and may fuse with others (io_queue.hpp); none when the store
// cannot move them as one range, or the queue would not fuse it with anything (fusion off, or the
// range alone as long as a fused call may be).
std::shared_ptr<io_run> run_of(external_store& store, const field_placement& f, const rect<3>& r, std::byte* memory,
                               bool writing);

// Opens the resource for an instance of `dims` dimensions whose layout is `placement` over
// `bounds`, checking it against them; throws rill::misuse_error naming the resource and what is
// wrong. One per kind of resource (file_store.cpp, hdf5_store.cpp, sqlite_store.cpp,
// opaque_store.cpp), chosen by
// external_api.cpp.
// (A raw file's transfers of at least direct_min bytes bypass the page cache where they can; 0: never.)
std::unique_ptr<external_store> open_file_store(const file_resource& r, const instance_layout& placement,
                                                const rect<3>& bounds, io_counters& counters, std::size_t direct_min);
std::unique_ptr<external_store> open_hdf5_store(const hdf5_resource& r, const instance_layout& placement,
                                                const rect<3>& bounds, int dims, io_counters& counters);
std::unique_ptr<external_store> open_opaque_store(const opaque_resource& r, const instance_layout& placement,
                                                  const rect<3>& bounds, int dims, io_counters& counters);
std::unique_ptr<external_store> open_sqlite_store(const sqlite_resource& r, const instance_layout& placement,
                                                  const rect<3>& bounds, int dims, io_counters& counters);

}  // namespace rill::detail
