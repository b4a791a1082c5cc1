// What the scheduler needs from the rank it serves (implemented by the rank core, src/core), so
// that the scheduler knows nothing of messages or termination; and the rank's modules, which the
// layers above find through the worker that runs them.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>

#include "scheduler/rank_modules.hpp"

namespace rill::detail {

class worker;

class rank_services {
 public:
  virtual ~rank_services() = default;
  // Network progress: receive and run handlers, send aged buffers. Returns whether it did work.
  virtual bool progress(worker& w) = 0;
  // The worker has no task or ready fiber; it is about to poll. Send what is buffered.
  virtual void on_out_of_work(worker& w) = 0;
  // The worker found nothing to do at all: answer a termination probe.
  virtual void on_idle(worker& w) = 0;
  // Received data may be waiting that only polling notices: idle workers must not sleep long.
  virtual bool must_poll() const = 0;
  // Received data is waiting for w: to be polled, or handed to the workers by the progress thread
  // (checked by a thread about to sleep).
  virtual bool has_input(const worker& w) const = 0;
  // True once the rank stops (a flag, not a virtual call: the scheduling loop reads it every round).
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  // The per-rank parts of the layers above (rank_modules.hpp).
  module_table& modules() { return modules_; }

 protected:
  void set_stopping() { stopping_.store(true, std::memory_order_release); }

 private:
  // Read by every worker on every scheduling round, written once: on a cache line of its own, so
  // that writes to what the rank keeps after it do not make each of those reads a miss.
  alignas(64) std::atomic<bool> stopping_{false};
  [[maybe_unused]] char after_stopping_[63] = {};  // (else the derived class's members would sit here)
  module_table modules_;
};

}  // namespace rill::detail
