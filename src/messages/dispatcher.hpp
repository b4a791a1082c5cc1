// A message's dispatch: the buffers a rank received, validated whole on arrival, then run message
// by message, each by its registered handler, on the worker that polled them.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "messages/aggregator.hpp"
#include "messages/delivery_counts.hpp"
#include "scheduler/worker_pool.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

class dispatcher {
 public:
  // `pool` may be under construction: it is used only once workers run.
  dispatcher(endpoint& ep, worker_pool& pool, int workers, aggregator& agg, delivery_counts& counts);

  // Network progress on worker w: runs what a suspended handler left, polls the endpoint, runs the
  // new buffers' handlers, and sends what they and others buffered when due. Returns whether it
  // ran any handler.
  bool progress(worker& w);

 private:
  // A received buffer whose messages are being run, in order, by one worker.
  // Its messages are read one at a time as they run (the buffer was validated whole on arrival).
  struct received_buffer {
    incoming in;
    std::span<const std::byte> bytes;  // in.bytes' storage, which stays put when pinned moves it
    std::size_t at;                    // where the next message starts
    std::uint32_t left;                // messages not yet started
    std::uint32_t sequence;            // of the next message (wire_format.hpp; for traces)
    std::shared_ptr<buffer> pinned;    // the bytes, once a rill::view points into them
  };
  // Runs the handlers of the buffers this worker received; returns whether it ran any.
  bool run_received(worker& w);
  // Shared ownership of rb's bytes, for views into them (pin_received_bytes).
  struct pinned_bytes;
  std::shared_ptr<const void> pin(received_buffer& rb);
  friend std::shared_ptr<const void> pin_received_bytes();

  endpoint& ep_;
  worker_pool& pool_;
  aggregator& agg_;
  delivery_counts& counts_;
  const int id_;
  std::vector<std::deque<received_buffer>> received_;  // per worker (by index): buffers being run
};

}  // namespace rill::detail
