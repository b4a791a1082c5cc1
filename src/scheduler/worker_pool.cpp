#include "scheduler/worker_pool.hpp"

#include <pthread.h>

#include <fmt/ranges.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "common/log.hpp"
#include "scheduler/fault_report.hpp"

namespace rill::detail {

namespace {

// Binds the calling thread to `cores` (OS processor indices). A refusal (a processor taken away
// since start-up, a container's limits) leaves the thread where the kernel puts it, with a warning.
void bind_this_thread(const std::vector<int>& cores, const std::string& name) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0)
    log().warn("--rill:bind: cannot bind {} to processors {}: {}", name, fmt::join(cores, ","), std::strerror(rc));
}

}  // namespace

worker_pool::worker_pool(rank_services& services, int workers, int channels, int io_threads, bool progress_thread,
                         std::size_t stack_bytes, std::uint64_t idle_poll_us, std::int64_t inline_queue)
    : services_(services), workers_(workers), channels_(channels), idle_poll_ns_(idle_poll_us * 1000) {
  const int threads = workers + channels + io_threads + (progress_thread ? 1 : 0);
  for (int i = 0; i < threads; ++i) {
    const thread_role role = i < workers                           ? thread_role::worker
                             : i < workers + channels              ? thread_role::channel
                             : i < workers + channels + io_threads ? thread_role::io
                                                                   : thread_role::progress;
    threads_.push_back(std::make_unique<worker>(*this, i, role, stack_bytes, inline_queue));
  }
  if (progress_thread) progress_ = threads_.back().get();
}

worker_pool::~worker_pool() = default;

void worker_pool::start(int rank) {
  for (auto& w : threads_) {
    worker* raw = w.get();
    std::vector<int> cores;
    if (raw->role() == thread_role::worker && static_cast<std::size_t>(raw->index()) < worker_cores_.size())
      cores = worker_cores_[static_cast<std::size_t>(raw->index())];
    raw->thread_ = std::thread([raw, rank, workers = workers_, channels = channels_, cores = std::move(cores)] {
      std::string name = "rill-r" + std::to_string(rank);
      switch (raw->role()) {
        case thread_role::worker: name += "w" + std::to_string(raw->index()); break;
        case thread_role::channel: name += "c" + std::to_string(raw->index() - workers); break;
        case thread_role::io: name += "io" + std::to_string(raw->index() - workers - channels); break;
        case thread_role::progress: name += "p"; break;
      }
      pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
      if (!cores.empty()) bind_this_thread(cores, name);
      prepare_fault_report(rank);
      raw->thread_main();
    });
  }
}

void worker_pool::join() {
  for (auto& w : threads_)
    if (w->thread_.joinable()) w->thread_.join();
}

void worker_pool::inject(task_record* t) {
  injected_.push(t);
  notify_all();
}

void worker_pool::submit_to_channel(task_record* t) {
  if (channels() == 0) {
    task_submit(t);
    return;
  }
  channel_work_.push(t);
  channels_asleep_.notify();
}

void worker_pool::submit_to_io(task_record* t) {
  io_work_.push(t);
  io_asleep_.notify();
}

task_record* worker_pool::steal_for(int thief) {
  const int n = size();
  for (int k = 1; k < n; ++k) {
    if (task_record* t = threads_[static_cast<std::size_t>((thief + k) % n)]->steal()) return t;
  }
  return nullptr;
}

bool worker_pool::has_work(const worker& w) const {
#if !RILL_TSAN  // (under TSan notify() pairs with the announcement through an RMW instead)
  std::atomic_thread_fence(std::memory_order_seq_cst);  // after the sleeper's announcement
#endif
  if (w.has_local_work() || w.room_came()) return true;
  // A channel wakes for its own work only (it does not poll); the progress thread for arrivals; a
  // worker for arrivals, buffers the progress thread handed over and what workers take (or steal).
  switch (w.role()) {
    case thread_role::io: return io_work_.nonempty(std::memory_order_seq_cst);
    case thread_role::channel: return channel_work_.nonempty(std::memory_order_seq_cst);
    case thread_role::progress: return services_.has_input(w);
    case thread_role::worker: break;
  }
  if (services_.has_input(w) || injected_.nonempty(std::memory_order_seq_cst)) return true;
  for (int i = 0; i < workers_; ++i)
    if (threads_[static_cast<std::size_t>(i)]->has_local_work()) return true;
  return false;
}

std::uint64_t worker_pool::worker_polls() const {
  std::uint64_t n = 0;
  for (int i = 0; i < workers_; ++i) n += threads_[static_cast<std::size_t>(i)]->polls();
  return progress_ ? n + progress_->polls() : n;
}

bool worker_pool::quiet() const {
  if (active.load(std::memory_order_seq_cst) != 0) return false;
  if (injected_.nonempty() || channel_work_.nonempty() || io_work_.nonempty()) return false;
  for (const auto& w : threads_)
    if (w->has_local_work()) return false;
  return active.load(std::memory_order_seq_cst) == 0;
}

template <class Done>
void worker_pool::wait_on_word(const worker& w, std::chrono::microseconds limit, Done done) {
  wake_word& word = word_of(w);
  const std::uint32_t seen = word.seen();
  word.announce();
  if (!services_.stopping() && !done()) word.sleep(seen, limit);
  word.withdraw();
}

void worker_pool::nap(const worker& w, unsigned us) {
  wait_on_word(w, std::chrono::microseconds(us), [this] { return all_workers_busy(); });
}

void worker_pool::sleep(const worker& w, bool short_sleeps, int& backoff) {
  // Polling ranks back off from 20 us to 1 ms between polls; others sleep until notified. Work that
  // arrived just before the sleeper announced itself (so its notify() saw no sleeper) is found by
  // the check for work after the announcement; the time limit is a last resort.
  using namespace std::chrono;
  const auto limit = short_sleeps ? microseconds(std::min(1000, 20 << std::min(backoff, 6))) : microseconds(5000);
  wait_on_word(w, limit, [&] { return has_work(w); });
  ++backoff;
}

}  // namespace rill::detail
