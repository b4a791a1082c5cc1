#include "data/io_queue.hpp"

#include "data/data_module.hpp"
#include "data/external_store.hpp"
#include "data/started_at.hpp"
#include "scheduler/channel.hpp"

namespace rill::detail {

io_queue::~io_queue() {
  // Never run: the rank stopped first (as the I/O threads' own queue does with its records).
  for (auto& [device, q] : devices_)
    for (auto& [k, w] : q.pending)
      if (!w.op->home) delete w.op;
}

void io_queue::push(const io_place& where, task_record* op) {
  {
    std::lock_guard g(lock_);
    const std::uint64_t arrival = arrivals_++;
    const bool elevator = order_ == io_order::elevator && where.device != 0;
    device_queue& q = devices_[where.device];
    q.pending.emplace(elevator ? key{where.resource, where.begin, arrival} : key{0, 0, arrival}, waiting{op, where});
  }
  counters_.scheduled.fetch_add(1, std::memory_order_relaxed);
  // One drain per operation: each runs what may run, so an operation that waits for its device's
  // depth is taken by the drain of one running on that device when it ends.
  io_submit(make_task([this] { drain(); }));
}

void io_queue::drain() {
  for (;;) {
    waiting next{};
    {
      std::lock_guard g(lock_);
      if (!take(next)) return;
    }
    struct done_with {
      io_queue& q;
      std::uint64_t device;
      ~done_with() {
        std::lock_guard g(q.lock_);
        --q.devices_[device].running;
      }
    } running{*this, next.where.device};
    next.op->invoke(next.op, task_record::run_here);
  }
}

bool io_queue::take(waiting& next) {
  device_queue* chosen = nullptr;
  std::uint64_t chosen_device = 0;
  const auto free = [&](std::uint64_t device, const device_queue& q) {
    return !q.pending.empty() && (device == 0 || depth_ == 0 || q.running < depth_);
  };
  if (auto none = devices_.find(0); none != devices_.end() && free(0, none->second)) {
    chosen = &none->second;
  } else {
    // The first device with work after the one served last, round the ring.
    auto it = devices_.upper_bound(last_device_);
    for (std::size_t seen = 0; seen < devices_.size(); ++seen, ++it) {
      if (it == devices_.end()) it = devices_.begin();
      if (free(it->first, it->second)) {
        chosen = &it->second;
        chosen_device = it->first;
        break;
      }
    }
    if (!chosen) return false;
    last_device_ = chosen_device;
  }
  device_queue& q = *chosen;
  // The circular scan: the first operation at or after where the last one ended, else the first.
  auto it = q.pending.lower_bound(key{q.resource, q.at, 0});
  if (it == q.pending.end()) it = q.pending.begin();
  next = it->second;
  q.pending.erase(it);
  ++q.running;
  if (chosen_device != 0) {
    if (next.where.resource == q.resource && next.where.begin < q.at)
      counters_.seeks_back.fetch_add(1, std::memory_order_relaxed);
    q.resource = next.where.resource;
    q.at = next.where.end;
    std::uint64_t most = counters_.most_running.load(std::memory_order_relaxed);
    const auto now = static_cast<std::uint64_t>(q.running);
    while (now > most && !counters_.most_running.compare_exchange_weak(most, now, std::memory_order_relaxed)) {
    }
  }
  return true;
}

void queue_io(const io_place& where, task_record* t) { data_here("rill: external I/O").io_work().push(where, t); }
void queue_io_anywhere(task_record* t) { queue_io({}, t); }

}  // namespace rill::detail
