// The transport: moves byte buffers between ranks. Nothing above this interface knows whether ranks
// are threads of one process (local) or MPI processes (mpi).
//
// One endpoint per rank. All methods are thread-safe: any worker of the rank may call them.
// Delivery is exactly once, in no guaranteed order.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/wake_word.hpp"
#include "rill/config.hpp"

namespace rill::detail {

using buffer = std::vector<std::byte>;

struct incoming {
  int source;
  buffer bytes;
};

// A buffer whose bytes are partly lent by the sender (a zero-copy send): on the wire it is `parts`,
// in order, each a piece of `owned` or of memory the sender keeps unchanged until `done` runs.
struct lent_buffer {
  buffer owned;
  std::vector<std::span<const std::byte>> parts;
  // Called once, from a thread of the sending rank, when the network no longer reads the parts.
  std::function<void()> done;

  std::size_t size() const;
  // The parts copied into one buffer.
  buffer gather() const;
};

class endpoint {
 public:
  virtual ~endpoint() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Hands `b` to the network. Returns false, leaving `b` untouched, when `dest` already has as many
  // buffers in flight as the queue allows: the caller applies back-pressure and tries again.
  virtual bool try_send(int dest, buffer& b) = 0;
  // Hands `b` to the network; the network reads the lent parts in place where it can, else it
  // sends a copy. Returns false, leaving `b` untouched, where try_send would. On success b.done
  // runs once the parts may be reused: at once after a copy, later after an in-place send.
  virtual bool try_send_lent(int dest, lent_buffer& b);
  // Sends a copy of `bytes` at once when this endpoint can do that without owning a buffer (a
  // shared-memory ring to `dest`); false, having sent nothing, otherwise: then the caller hands
  // over a buffer with try_send. Saves a sender that keeps its buffer an allocation and a copy.
  virtual bool try_send_copy(int dest, std::span<const std::byte> bytes) {
    (void)dest;
    (void)bytes;
    return false;
  }
  // Moves up to `max` received buffers into `out`; completes finished sends. Never blocks.
  virtual std::size_t poll(std::vector<incoming>& out, std::size_t max) = 0;
  // True when received data may be waiting that only poll() will notice (MPI, chaos holding
  // messages back): then an idle rank must keep polling, with back-off, instead of sleeping.
  virtual bool needs_polling() const = 0;
  // True when a poll() would find something now, as far as the endpoint can tell without MPI calls
  // (a sleeper checks it after announcing itself, so an arrival cannot slip between the two).
  virtual bool has_input() const = 0;
  // Called (from any thread) when a buffer arrives for this endpoint; used to wake sleepers.
  virtual void on_arrival(std::function<void()> wake) = 0;
  // A word that this rank's idle workers sleep on, placed where other processes that send to the
  // rank without MPI reach it: they wake it as they send (mpi, through the node rings' shared
  // memory). nullptr where nothing outside this process could (local: on_arrival wakes the rank).
  virtual wake_word* sleep_word() { return nullptr; }
  // Where the endpoint can tell when a destination whose queue refused this endpoint's sends has
  // room again: a counter it bumps then, calling the on_arrival wake after, so that a refused
  // sender may sleep until it changes. nullptr where it cannot (MPI, whose room comes from the
  // sender's own polls): the sender tries again after each poll.
  virtual const std::atomic<std::uint64_t>* room() const { return nullptr; }
  // The largest buffer this endpoint carries (try_send's and try_send_lent's callers keep to it).
  virtual std::size_t max_buffer_bytes() const { return SIZE_MAX; }

  // Buffer reuse, so that large payloads do not pay an allocation (and its zero-fill) per message.
  // recycle() takes a received buffer whose messages have all started (any size; its contents are
  // garbage from now on); spare() returns a recycled buffer with at least `bytes` of capacity, of
  // unspecified size and contents, or an empty one. Any thread. By default nothing is kept.
  virtual void recycle(buffer&& b) { (void)b; }
  virtual buffer spare(std::size_t bytes) {
    (void)bytes;
    return {};
  }
};

// Memory for the ranks' global-memory segments (src/global/segment.hpp).
struct segment_memory {
  std::vector<std::byte*> own;  // one range per local endpoint, in local_endpoints() order
  // By rank: where its segment starts in its owner's address space, and in this process
  // (nullptr where this process cannot load from it).
  std::vector<std::uintptr_t> owner_base;
  std::vector<std::byte*> local_base;
};

// The ranks of this process and what they share.
class transport {
 public:
  virtual ~transport() = default;
  virtual int size() const = 0;
  virtual std::vector<endpoint*> local_endpoints() = 0;
  // Cores available to each rank of this process (for the default worker count).
  virtual int cores_per_rank() const = 0;
  // This process's index among the processes of its node (mpi: its rank on the node; local: 0).
  virtual int node_index() const { return 0; }
  // What --rill:ranks-per-node=0 (the default) becomes: under mpi the ranks of a node, if every
  // node holds that many consecutive ranks (src/transport/node_layout.hpp), else 1; local: 1 (its
  // nodes exist only as the option simulates them).
  virtual int ranks_per_node() const { return 1; }
  // Collective start-up exchange: returns, indexed by rank, what each rank's process passed as
  // `mine` (the ranks of one process share its value). Used to describe the machine.
  virtual std::vector<std::string> gather_from_all_ranks(const std::string& mine) = 0;
  // Collective start-up: `bytes` of segment memory for each rank of this process, and the
  // segments of other ranks that this process can address (with `share`: under local every
  // rank's; under mpi those on this node, through an MPI-3 shared-memory window, where the MPI
  // library provides one). The memory reads as zeroes at first (the segment's tag table and global
  // heap count on it) and lives until the transport is destroyed.
  virtual segment_memory map_segments(std::size_t bytes, bool share) = 0;
  // Collective end: all sends complete, every rank has reached this point.
  virtual void finish() = 0;
};

// Runs work(arg) on a stack deep enough for any library call and returns when it has: the runtime
// passes the scheduler's deep_call (src/scheduler/deep_stack.hpp), since MPI libraries may need
// more stack than a worker's fiber has.
using deep_call_fn = void (*)(void (*work)(void* arg), void* arg);

// What every rank must agree on: its binary and the options that size or route what ranks share.
// The MPI transport compares them as soon as MPI is up, before anything collective depends on
// them, and stops every rank with a message naming the difference. (The ranks of the local
// transport share one binary and one config.)
struct start_agreement {
  std::uint64_t build = 0;
  std::string options;  // "--rill:NAME=VALUE" lines
};

// `must_arrive` tells the fault injector (cfg.faults) which buffers it may not lose.
using buffer_filter = bool (*)(std::span<const std::byte>);
std::unique_ptr<transport> make_local_transport(const rill::config& cfg, buffer_filter must_arrive);
// Every MPI call a worker may make goes through `deep`.
std::unique_ptr<transport> make_mpi_transport(const rill::config& cfg, deep_call_fn deep,
                                              const start_agreement& agreement);

}  // namespace rill::detail
