// A queue of task records that any thread adds to and takes from under a lock, with a flag read
// without it, so that a worker looking at an empty queue pays one load.
#pragma once

#include <atomic>
#include <deque>
#include <mutex>

#include "rill/detail/task_record.hpp"

namespace rill::detail {

class locked_task_queue {
 public:
  locked_task_queue() = default;
  locked_task_queue(const locked_task_queue&) = delete;
  locked_task_queue& operator=(const locked_task_queue&) = delete;
  ~locked_task_queue() {
    // Never run: the rank stopped first. Records of a worker's pool go with the worker.
    for (task_record* t : queue_)
      if (!t->home) delete t;
  }

  void push(task_record* t) {
    std::lock_guard g(lock_);
    queue_.push_back(t);
    nonempty_.store(true, std::memory_order_release);
  }

  // The oldest record, or nullptr.
  task_record* take() {
    if (!nonempty_.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard g(lock_);
    if (queue_.empty()) return nullptr;
    task_record* t = queue_.front();
    queue_.pop_front();
    nonempty_.store(!queue_.empty(), std::memory_order_release);
    return t;
  }

  bool nonempty(std::memory_order order = std::memory_order_acquire) const { return nonempty_.load(order); }

 private:
  std::mutex lock_;
  std::deque<task_record*> queue_;
  std::atomic<bool> nonempty_{false};
};

}  // namespace rill::detail
