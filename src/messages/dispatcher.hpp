// A message's dispatch: the buffers a rank received, validated whole on arrival, then run message
// by message, each by its registered handler, on the worker that polled them. Where a progress
// thread polls (--rill:progress=thread), it runs the messages whose handlers may run there
// (handler_on_progress) and hands each buffer with others to the workers, which run those.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "messages/aggregator.hpp"
#include "messages/buffer_sink.hpp"
#include "messages/delivery_counts.hpp"
#include "scheduler/worker_pool.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

class dispatcher {
 public:
  // `pool` may be under construction: it is used only once workers run.
  // `threads`: the rank's threads (per-thread queues); `progress_thread`: whether one of them polls
  // for the workers; `idle_flush`: replies leave when the thread that ran their handlers is out of
  // work (--rill:agg-idle-flush).
  // `sink` carries the buffers this rank forwards to the ranks of its node (routed_wire.hpp).
  dispatcher(endpoint& ep, worker_pool& pool, int threads, bool progress_thread, bool idle_flush, aggregator& agg,
             buffer_sink& sink, delivery_counts& counts);

  // Network progress on thread w: runs what a suspended handler left, polls the endpoint (unless
  // a progress thread polls for w), runs the new buffers' handlers, and sends what they and others
  // buffered when due. Returns whether it ran any handler.
  bool progress(worker& w);
  // Buffers the progress thread handed to the workers wait.
  bool has_handed() const { return handed_count_.load(std::memory_order_seq_cst) > 0; }
  // Buffers this rank split from routed ones and forwarded to the ranks of its node.
  std::uint64_t forwarded() const { return forwarded_.load(std::memory_order_relaxed); }

 private:
  // Which of a buffer's messages a thread runs: all; those whose handlers may run on the progress
  // thread (there); the others (on the worker it handed the buffer to).
  enum class part : std::uint8_t { all, progress, workers };
  // A received buffer whose messages are being run, in order, by one worker.
  // Its messages are read one at a time as they run (the buffer was validated whole on arrival).
  struct received_buffer {
    incoming in;
    std::span<const std::byte> bytes;  // in.bytes' storage, which stays put when pinned moves it
    std::size_t at;                    // where the next message starts
    std::uint32_t left;                // messages not yet started
    std::uint32_t sequence;            // of the next message (wire_format.hpp; for traces)
    std::shared_ptr<buffer> pinned;    // the bytes, once a rill::view points into them
    part runs = part::all;
    std::uint32_t for_workers = 0;  // on the progress thread: messages it left to the workers
  };
  // A buffer for a rank of this node, split from a routed one.
  struct forward {
    int dest;
    buffer bytes;
  };
  // Checks a buffer received on thread w and queues it to run there; a routed one is split, its
  // part for this rank queued and the others added to `forwards`.
  void accept(incoming&& in, worker& w, std::vector<forward>& forwards);
  void accept_routed(incoming&& in, worker& w, std::vector<forward>& forwards);
  void queue_received(incoming&& in, worker& w, std::uint32_t messages);
  // Runs the handlers of the buffers this worker received; returns whether it ran any.
  bool run_received(worker& w);
  // On the progress thread: gives rb, whose other messages are still to run, to the workers.
  void hand_to_workers(received_buffer&& rb);
  // On a worker: moves up to `max` handed buffers to its own queue; returns whether it took any.
  bool take_handed(worker& w, std::size_t max);
  // Shared ownership of rb's bytes, for views into them (pin_received_bytes).
  struct pinned_bytes;
  std::shared_ptr<const void> pin(received_buffer& rb);
  friend std::shared_ptr<const void> pin_received_bytes();

  endpoint& ep_;
  worker_pool& pool_;
  aggregator& agg_;
  buffer_sink& sink_;
  delivery_counts& counts_;
  const int id_;
  const bool progress_thread_;
  const bool idle_flush_;
  std::vector<std::deque<received_buffer>> received_;  // per thread (by index): buffers being run
  std::mutex handed_lock_;
  std::deque<received_buffer> handed_;        // from the progress thread, for any worker
  std::atomic<std::size_t> handed_count_{0};  // handed_.size(), read without the lock
  std::atomic<std::uint64_t> forwarded_{0};
};

}  // namespace rill::detail
