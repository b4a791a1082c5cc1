// The order in which a rank's I/O threads take the external I/O that is ready to run (Iris §IV-A:
// the runtime knows every pending I/O operation of every device and schedules them). An operation
// is queued only once its precondition has triggered, so any two waiting here are independent
// and may run in either order; the queue chooses:
//  - per device (the file system a resource lives on): at most --rill:io-depth operations of one
//    device at once, so that one slow device never holds every I/O thread while another's wait;
//    devices with work take turns;
//  - within a device, in elevator order (--rill:io-order=elevator): the next operation is the one
//    at or after where the last ended, by resource then offset, wrapping around at the end (a
//    circular scan), so that a backlog of pieces of a file is written front to back, as one
//    sequential stream, whatever order their copies became ready in;
//  - work that touches no device (opening a resource, checking its version, objects in memory)
//    first, as it came: it is short, and the device work often waits on it;
//  - under the elevator, the I/O of operations that say what it is (io_run) fused: the one taken
//    and those waiting that continue it -- the next range of the same file, in the same direction
//    -- moved in one system call of at most --rill:io-fuse bytes (Iris §IV-A: deferred I/O lets
//    the runtime fuse concurrent operations), then each operation completed. Reads ramp up to
//    that: the first of a sequence goes alone and each next call may move twice what the last
//    did, because a read's pieces complete only when its whole call has, and tasks wait for them:
//    one call of the whole backlog would leave every worker idle until the last byte is in.
#pragma once
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "rill/config.hpp"
#include "rill/detail/task_record.hpp"

namespace rill::detail {

struct io_counters;
class external_store;

// Where an operation does its I/O: device 0 is none.
struct io_place {
  std::uint64_t device = 0;          // the file system's device number
  std::uint64_t resource = 0;        // the file on it (its inode)
  std::uint64_t begin = 0, end = 0;  // the byte range of the file it touches (end: one past)
};

// The I/O of an operation that the queue does itself, so that it may fuse it with others: the
// range `where` of `store`, moved to or from `memory` (as many bytes, dense). The queue moves it
// before it runs the operation, which then completes the transfer: `failure` is what the I/O
// threw, if it failed, and `started` when it began (trace's clock). (external_store.hpp's run_of
// makes one.)
struct io_run {
  io_place where;
  external_store* store = nullptr;
  bool writing = false;
  std::byte* memory = nullptr;
  std::exception_ptr failure;
  std::uint64_t started = 0;
};

class io_queue {
 public:
  // depth 0: as many as there are I/O threads; fuse_bytes 0: no fusion.
  io_queue(io_order order, int depth, std::size_t fuse_bytes, io_counters& counters)
      : order_(order), depth_(depth), fuse_bytes_(fuse_bytes), counters_(counters) {}
  io_queue(const io_queue&) = delete;
  io_queue& operator=(const io_queue&) = delete;
  ~io_queue();

  // Queues op to run on an I/O thread of the calling rank, and wakes one; with `run` (at `where`,
  // its place), after the queue has done op's I/O.
  void push(const io_place& where, task_record* op, std::shared_ptr<io_run> run = {});
  // Whether it fuses runs, and how many bytes one call may move.
  bool fuses() const { return order_ == io_order::elevator && fuse_bytes_ > 0; }
  std::size_t fuse_bytes() const { return fuse_bytes_; }

 private:
  struct waiting {
    task_record* op;
    io_place where;
    std::shared_ptr<io_run> run;
  };
  // (resource, offset, arrival) under the elevator; (0, 0, arrival) as they came.
  using key = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;
  struct device_queue {
    std::map<key, waiting> pending;
    int running = 0;
    std::uint64_t resource = 0, at = 0;  // where the last operation taken ended
    std::size_t read_bytes = 0;          // what the last call moved, if it read (the ramp)
  };

  // What an I/O thread does for each push: runs what may run, until nothing may.
  void drain();
  // Under lock_: the next operation to run, counted as running, with the waiting ones whose I/O
  // it fuses into its own (after it, in the file's order); false when none may run now.
  bool take(std::vector<waiting>& batch);
  // Under lock_: moves into `batch` the operations waiting in q whose I/O continues its last's,
  // up to `limit` bytes in all; returns the batch's bytes.
  std::size_t fuse_onto(device_queue& q, std::vector<waiting>& batch, std::size_t limit);
  // The batch's runs moved in one call; if it fails, each alone.
  void move_batch(std::vector<waiting>& batch);

  const io_order order_;
  const int depth_;
  const std::size_t fuse_bytes_;
  io_counters& counters_;
  std::mutex lock_;
  std::map<std::uint64_t, device_queue> devices_;
  std::uint64_t arrivals_ = 0;
  std::uint64_t last_device_ = 0;  // the device that was served last (they take turns)
};

}  // namespace rill::detail
