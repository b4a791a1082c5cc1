#include "data/io_queue.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <climits>

#include "data/data_module.hpp"
#include "data/external_store.hpp"
#include "data/started_at.hpp"
#include "scheduler/channel.hpp"
#include "trace/hooks.hpp"

namespace rill::detail {

io_queue::~io_queue() {
  // Never run: the rank stopped first (as the I/O threads' own queue does with its records).
  for (auto& [device, q] : devices_)
    for (auto& [k, w] : q.pending)
      if (!w.op->home) delete w.op;
}

void io_queue::push(const io_place& where, task_record* op, std::shared_ptr<io_run> run) {
  {
    std::lock_guard g(lock_);
    const std::uint64_t arrival = arrivals_++;
    const bool elevator = order_ == io_order::elevator && where.device != 0;
    device_queue& q = devices_[where.device];
    q.pending.emplace(elevator ? key{where.resource, where.begin, arrival} : key{0, 0, arrival},
                      waiting{op, where, std::move(run)});
  }
  counters_.scheduled.fetch_add(1, std::memory_order_relaxed);
  // One drain per operation: each runs what may run, so an operation that waits for its device's
  // depth is taken by the drain of one running on that device when it ends.
  io_submit(make_task([this] { drain(); }));
}

void io_queue::drain() {
  std::vector<waiting> batch;
  for (;;) {
    batch.clear();
    {
      std::lock_guard g(lock_);
      if (!take(batch)) return;
    }
    struct done_with {
      io_queue& q;
      std::uint64_t device;
      ~done_with() {
        std::lock_guard g(q.lock_);
        --q.devices_[device].running;
      }
    } running{*this, batch.front().where.device};
    if (batch.front().run) move_batch(batch);
    for (waiting& w : batch) w.op->invoke(w.op, task_record::run_here);
  }
}

void io_queue::move_batch(std::vector<waiting>& batch) {
  std::vector<::iovec> runs;
  std::size_t bytes = 0;
  for (const waiting& w : batch) {
    runs.push_back({w.run->memory, static_cast<std::size_t>(w.where.end - w.where.begin)});
    bytes += runs.back().iov_len;
  }
  const io_run& first = *batch.front().run;  // (all of one store, in one direction)
  const std::uint64_t start = trace::span_begin();
  try {
    first.store->move_ranges(first.where.begin, runs, first.writing);
    counters_.fused.fetch_add(batch.size() - 1, std::memory_order_relaxed);
  } catch (...) {
    // Each alone again, so that only the operations whose own I/O fails fail: fusing them must
    // not make one's failure (the end of a shortened file, a full disk) another's.
    if (batch.size() == 1) {
      batch.front().run->failure = std::current_exception();
    } else {
      for (std::size_t k = 0; k < batch.size(); ++k) {
        try {
          first.store->move_ranges(batch[k].where.begin, std::span(runs).subspan(k, 1), first.writing);
        } catch (...) {
          batch[k].run->failure = std::current_exception();
        }
      }
    }
  }
  trace::span_end<trace::kind::io>(start, 0, bytes, 0);
  for (waiting& w : batch) w.run->started = start;
}

std::size_t io_queue::fuse_onto(device_queue& q, std::vector<waiting>& batch, std::size_t limit) {
  const io_place where = batch.front().where;
  const io_run* const run = batch.front().run.get();
  std::uint64_t end = where.end;
  auto bytes = static_cast<std::size_t>(end - where.begin);
  if (!fuses() || !run || where.device == 0) return bytes;
  const auto begins_at_end = [&](auto it) {
    return it != q.pending.end() && std::get<0>(it->first) == where.resource && std::get<1>(it->first) == end;
  };
  const auto joins = [&](const waiting& next) {
    return next.run && next.run->store == run->store && next.run->writing == run->writing &&
           bytes + static_cast<std::size_t>(next.where.end - next.where.begin) <= limit;
  };
  // (IOV_MAX: the most runs one preadv or pwritev takes.)
  while (batch.size() < IOV_MAX) {
    // Of the operations waiting that begin where the batch ends, the first that can join it.
    auto it = q.pending.lower_bound(key{where.resource, end, 0});
    while (begins_at_end(it) && !joins(it->second)) ++it;
    if (!begins_at_end(it)) return bytes;
    end = it->second.where.end;
    bytes += static_cast<std::size_t>(end - it->second.where.begin);
    batch.push_back(it->second);
    q.pending.erase(it);
  }
  return bytes;
}

bool io_queue::take(std::vector<waiting>& batch) {
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
  batch.push_back(it->second);
  q.pending.erase(it);
  const io_place first = batch.front().where;  // (a copy: fusing grows the batch)
  const bool reads = batch.front().run && !batch.front().run->writing;
  const bool goes_on = first.resource == q.resource && first.begin == q.at;
  const std::size_t ramp = reads ? (goes_on ? 2 * q.read_bytes : 0) : fuse_bytes_;
  const std::size_t bytes = fuse_onto(q, batch, std::min(fuse_bytes_, ramp));
  q.read_bytes = reads ? bytes : 0;
  ++q.running;
  if (chosen_device != 0) {
    if (first.resource == q.resource && first.begin < q.at)
      counters_.seeks_back.fetch_add(1, std::memory_order_relaxed);
    q.resource = first.resource;
    q.at = batch.back().where.end;
    std::uint64_t most = counters_.most_running.load(std::memory_order_relaxed);
    const auto now = static_cast<std::uint64_t>(q.running);
    while (now > most && !counters_.most_running.compare_exchange_weak(most, now, std::memory_order_relaxed)) {
    }
  }
  return true;
}

std::shared_ptr<io_run> run_of(external_store& store, const field_placement& f, const rect<3>& r, std::byte* memory,
                               bool writing) {
  const io_queue& queue = data_here("rill: external I/O").io_work();
  if (!queue.fuses() || f.opaque || r.volume() * f.bytes >= queue.fuse_bytes() || !store.fusable(f, r)) return {};
  return std::make_shared<io_run>(io_run{store.place(f, r), &store, writing, memory, {}, 0});
}

void queue_io(const io_place& where, task_record* t, std::shared_ptr<io_run> run) {
  data_here("rill: external I/O").io_work().push(where, t, std::move(run));
}
void queue_io_anywhere(task_record* t) { queue_io({}, t); }

}  // namespace rill::detail
