// Where trace records go while the program runs: each traced thread appends fixed-size records to
// its own chunked buffer (a recorder), reached through one thread_local pointer, so recording takes
// no lock and allocates only when a chunk of 64 Ki records fills; recorded data never moves. A
// rank_trace owns the recorders (lanes) of one rank: one per worker, plus one per other thread that
// asks for one. Recording hooks are in trace/hooks.hpp; writing is in trace/trace_file.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/trace_kinds.hpp"

namespace rill::detail::trace {

// One traced happening. Part files hold records as these bytes, so the layout has no implicit
// padding (the explicit padding is written as zeros).
struct record {
  std::uint64_t start_ns;  // steady_now_ns() of this rank, before its clock offset
  std::uint64_t end_ns;    // spans: their end; instants: 0
  std::uint64_t flow;      // 0: none; see trace/hooks.hpp for how flows are named
  std::uint64_t arg0;      // meanings per kind: see trace_kinds.hpp
  std::uint64_t arg1;
  kind what;
  std::uint8_t zero_padding[7];
};
static_assert(sizeof(record) == 48 && std::is_trivially_copyable_v<record>);

// The records of one thread, in the order they were appended (spans at their end).
class recorder {
 public:
  // Records allocated at once (3 MiB): a thread appends with one compare, and a run with tracing
  // on allocates once per 64 Ki records.
  static constexpr std::size_t chunk_records = 64 * 1024;

  void append(kind what, std::uint64_t start_ns, std::uint64_t end_ns, std::uint64_t flow, std::uint64_t arg0,
              std::uint64_t arg1) {
    if (next_ == chunk_end_) [[unlikely]]
      start_chunk();
    *next_++ = record{start_ns, end_ns, flow, arg0, arg1, what, {}};
  }

  // The hooks' recording paths (trace/hooks.hpp), out of line so that a hook site compiles to a test
  // and a branch around a call: an instant now, a span from start_ns to now.
  void append_instant(kind what, std::uint64_t flow, std::uint64_t arg0, std::uint64_t arg1);
  void append_span(kind what, std::uint64_t start_ns, std::uint64_t flow, std::uint64_t arg0, std::uint64_t arg1);

  std::size_t size() const;
  // The chunks in order; the last one holds only what has been appended to it.
  std::vector<std::span<const record>> chunks() const;

 private:
  void start_chunk();

  record* next_ = nullptr;
  record* chunk_end_ = nullptr;
  std::vector<std::unique_ptr<record[]>> chunks_;
};

// The calling thread's recorder: nullptr unless the thread is attached to a rank_trace, which is
// also the case for every thread when tracing is off. Hooks test it and do nothing else.
extern constinit thread_local recorder* tls_recorder;

// While a traced thread runs the waiters of a triggered event: that trigger's flow, so that the
// tasks the waiters release end its arrows (trace/hooks.hpp: releasing). 0 otherwise.
extern constinit thread_local std::uint64_t tls_releasing_flow;

// The trace of one rank. Threads attach and detach concurrently; the records are read (to write
// the part file) only once no thread records any more, e.g. after the workers have been joined.
class rank_trace {
 public:
  // One timeline of the viewer: a thread of the rank.
  struct lane {
    explicit lane(std::string lane_name) : name(std::move(lane_name)) {}
    std::string name;
    recorder records;
  };

  // Lanes for the rank's workers, then its data-movement channels, then its I/O threads, then its
  // progress thread if it has one (scheduler/worker_pool.hpp).
  rank_trace(int rank, int worker_count, int channel_count = 0, int io_count = 0, bool progress = false);
  rank_trace(const rank_trace&) = delete;
  rank_trace& operator=(const rank_trace&) = delete;

  int rank() const { return rank_; }

  // Added to every timestamp of this rank when its part is merged, to align its steady clock with
  // the other ranks' (e.g. rank 0's clock minus this rank's, measured at start-up).
  void set_clock_offset(std::int64_t ns) { clock_offset_ns_ = ns; }
  std::int64_t clock_offset() const { return clock_offset_ns_; }

  // The calling thread records into the lane of worker `worker_index` (0 <= index < worker_count +
  // channel_count + io_count + progress) until it detaches. Throws std::out_of_range for another index.
  void attach_thread(int worker_index);
  // The calling thread, not one of the pool's (the main thread), records into a new lane
  // of its own named `name`. Each such thread has a lane: a shared one would need a lock in the
  // hooks and would mix the spans of several threads on one timeline.
  void attach_other_thread(std::string name);
  // The calling thread records nothing any more. Must be called before its rank_trace is destroyed.
  static void detach_thread() { tls_recorder = nullptr; }

  // A task record queued while a trigger's waiters ran (tls_releasing_flow): its span, when it
  // runs, ends that trigger's arrow. Any worker of the rank may take it, so under a lock; only
  // while tracing.
  void note_released(const void* task, std::uint64_t flow);
  // The flow noted for `task`, forgotten now (0: none).
  std::uint64_t take_released(const void* task);

  // The workers' lanes (by index), then the other threads' lanes (by attach order). Only while no
  // thread records.
  std::vector<const lane*> lanes() const;

 private:
  int rank_;
  std::int64_t clock_offset_ns_ = 0;
  std::vector<std::unique_ptr<lane>> workers_;
  std::mutex others_mutex_;  // attach_other_thread may run on several threads at once
  std::vector<std::unique_ptr<lane>> others_;
  std::mutex released_mutex_;
  std::unordered_map<const void*, std::uint64_t> released_;
};

}  // namespace rill::detail::trace
