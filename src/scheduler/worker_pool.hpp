// The workers of one rank: starting and joining them, tasks injected from other threads, stealing
// among them, and how idle ones sleep and are woken. Beside the workers, a rank may run
// data-movement channels (--rill:channels): threads that run only the work handed to them
// (submit_to_channel: copies, fills, reductions), so that data moves while every worker runs a
// task and no worker spends its time moving it (Realm's DMA threads). A channel is a worker
// object too (fibers, per-thread state by index) that neither steals, nor takes injected tasks,
// nor polls the network; the tasks its work releases go to the workers. I/O threads
// (--rill:io-threads, at least one) are channels of their own kind for external I/O
// (submit_to_io): a read of a file may block for milliseconds, and neither a worker nor a copy
// should wait behind it (Iris §IV-A). With --rill:progress=thread a rank has a progress thread
// too: it polls the network in the workers' stead and runs the handlers that may run there
// (rank_services::progress); it takes no tasks, and what its handlers spawn goes to the workers.
//
// The sleep/wake protocol, in short (common/wake_word.hpp; scheduler/README.md has the whole
// argument): an idle worker announces itself on its group's wake word, checks for work once more,
// and sleeps on the word (a futex) with a time limit. A waker makes its work visible, then
// (notify) a seq_cst fence and a load of the word's sleeper count: either the sleeper's check sees
// the work or the waker sees the sleeper and bumps the word. Work a worker pushes on its own deque
// skips the fence (notify_spawned): a sleeper may then miss it and sleep out its limit, but the
// task is never lost, since its worker runs it. Channels sleep on a word of their own (and I/O
// threads on one more): they wait for their own work only, and a spawn must not wake them. Under
// mpi the workers' word lies in the node's shared memory, where node neighbours' ring sends wake it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "common/wake_word.hpp"
#include "rill/detail/task_record.hpp"
#include "scheduler/rank_services.hpp"
#include "scheduler/task_queue.hpp"
#include "scheduler/worker.hpp"
#include "trace/recorder.hpp"

namespace rill::detail {

// What the layer that defines task scopes (sync: finish) does with a scope the scheduler only
// carries as an opaque pointer (task_record::scope, held_credit).
struct task_scope_hooks {
  // Gives back `units` of a scope's count that a worker held (worker::held_credit).
  void (*release_credit)(void* scope, std::int64_t units);
  // A task of `scope` threw `error`: the scope learns it, and the task ended.
  void (*task_failed)(void* scope, std::exception_ptr error);
};

// The workers of one rank, how they steal from each other, and how idle ones sleep.
class worker_pool {
 public:
  worker_pool(rank_services& services, int workers, int channels, int io_threads, bool progress_thread,
              std::size_t stack_bytes, std::uint64_t idle_poll_us, std::int64_t inline_queue);
  ~worker_pool();

  void start(int rank);  // launches the worker threads
  // Before start(): worker i runs only on the processors cores[i] (OS indices; --rill:bind).
  void bind_workers(std::vector<std::vector<int>> cores) { worker_cores_ = std::move(cores); }
  // Before start(): the workers sleep on `shared` instead of a word of the pool's own, so that
  // whoever else can reach it (the transport's node neighbours, endpoint::sleep_word) wakes them.
  void sleep_workers_on(wake_word& shared) { workers_asleep_ = &shared; }
  void join();

  // The workers (indices 0 .. size() - 1), which run tasks and steal from each other.
  int size() const { return workers_; }
  // Workers, channels, I/O threads and the progress thread, in that order of index.
  int threads() const { return static_cast<int>(threads_.size()); }
  int channels() const { return channels_; }
  int io_threads() const { return threads() - size() - channels() - (progress_ ? 1 : 0); }
  // The thread that polls the network for the workers (--rill:progress=thread), or nullptr.
  worker* progress_thread() const { return progress_; }
  worker& at(int i) { return *threads_[static_cast<std::size_t>(i)]; }
  rank_services& services() { return services_; }
  // Set once, before the workers start, by the layer whose tasks have scopes.
  void set_scope_hooks(const task_scope_hooks& hooks) { scope_hooks_ = hooks; }
  const task_scope_hooks& scope_hooks() const { return scope_hooks_; }
  // Where the workers record with --rill:trace (nullptr: they do not); set before start().
  void set_trace(trace::rank_trace* t) { trace_ = t; }
  trace::rank_trace* trace() const { return trace_; }
  std::uint64_t idle_poll_ns() const { return idle_poll_ns_; }

  // A task from a thread that is not one of this rank's workers.
  void inject(task_record* t);
  task_record* take_injected() { return injected_.take(); }
  bool has_injected() const { return injected_.nonempty(); }
  task_record* steal_for(int thief);
  // Work for the channels; without channels, for the calling worker (as task_submit).
  void submit_to_channel(task_record* t);
  task_record* take_channel_work() { return channel_work_.take(); }
  // Work for the I/O threads, always (there is at least one).
  void submit_to_io(task_record* t);
  task_record* take_io_work() { return io_work_.take(); }

  // True when no worker runs anything and no task or ready fiber is queued. Call from an idle worker.
  bool quiet() const;
  // True when something is waiting that `w` would do: received data, a fiber of its own woken, and
  // for a worker a task (its own, injected, or one it could steal), for a channel or an I/O
  // thread work of its kind.
  bool has_work(const worker& w) const;
  // Wakes sleeping workers after new work arrived; nearly free when nobody sleeps.
  void notify() { workers_asleep_->notify(); }
  // Wakes whoever polls, after a buffer arrived or a queue that refused a send has room: the
  // workers, and the progress thread when every worker is busy.
  void notify_arrival() {
    workers_asleep_->notify();
    if (progress_ && all_workers_busy()) progress_asleep_.notify();
  }
  // Whether every worker is busy (in a task, or marked so by handlers or fibers it runs): then only
  // the progress thread polls for the rank. (Counted only where there is a progress thread.)
  bool all_workers_busy() const { return busy_workers.load(std::memory_order_relaxed) == workers_; }
  // notify() for a task a worker pushed onto its own deque, without the fence. A sleeper that
  // announced itself just as the push was made may miss it and sleep out its time limit (20 us to
  // 5 ms); the task is never lost: its worker runs it when nobody steals it. The fence cost 2 % of
  // a UTS traversal on 2 workers (as TBB argues for its spawns: parallelism is offered, not promised).
  void notify_spawned() { workers_asleep_->notify_unfenced(); }
  // Wakes the sleeping workers unconditionally.
  void notify_all() { workers_asleep_->wake(); }
  // Wakes the thread that `w` is, or would be, sleeping as: a fiber of its own was made ready.
  void notify_thread_of(const worker& w) { word_of(w).wake(); }
  // Wakes everyone, workers, channels and I/O threads (the rank stops).
  void wake_everyone() {
    workers_asleep_->wake();
    channels_asleep_.wake();
    io_asleep_.wake();
    progress_asleep_.wake();
  }
  // `w` idles: sleeps until woken or for a time limit, short (20 us, doubling to 1 ms) when
  // `short_sleeps` (worker::sleeps_briefly), else 5 ms.
  void sleep(const worker& w, bool short_sleeps, int& backoff);
  // The progress thread `w` sleeps `us` microseconds, or until woken (an arrival while every worker
  // is busy, the rank stops).
  void nap(const worker& w, unsigned us);

  // How often the threads of this role were woken (wraps at 2^32).
  std::uint32_t wakes(thread_role role) {
    return role == thread_role::worker     ? workers_asleep_->wakes()
           : role == thread_role::channel  ? channels_asleep_.wakes()
           : role == thread_role::progress ? progress_asleep_.wakes()
                                           : io_asleep_.wakes();
  }

  // How often the workers and the progress thread (not the channels) have polled the network, together.
  std::uint64_t worker_polls() const;

  std::atomic<int> active{0};        // workers and channels doing something (termination)
  std::atomic<int> busy_workers{0};  // of them, workers (not channels, I/O or progress threads)

 private:
  rank_services& services_;
  task_scope_hooks scope_hooks_{};
  trace::rank_trace* trace_ = nullptr;
  const int workers_;
  const int channels_;
  std::vector<std::unique_ptr<worker>> threads_;  // the workers, channels, I/O threads, progress thread
  worker* progress_ = nullptr;                    // the last of them, with --rill:progress=thread
  std::vector<std::vector<int>> worker_cores_;    // per worker, the processors it is bound to (empty: unbound)
  const std::uint64_t idle_poll_ns_;
  locked_task_queue injected_;
  locked_task_queue channel_work_;
  locked_task_queue io_work_;
  // `w` sleeps on its word until woken, the rank stops, done() holds, or `limit`.
  template <class Done>
  void wait_on_word(const worker& w, std::chrono::microseconds limit, Done done);
  // What the threads of each kind sleep on.
  wake_word own_workers_word_;
  wake_word* workers_asleep_ = &own_workers_word_;
  wake_word channels_asleep_;
  wake_word io_asleep_;
  wake_word progress_asleep_;
  wake_word& word_of(const worker& w) {
    switch (w.role()) {
      case thread_role::worker: return *workers_asleep_;
      case thread_role::channel: return channels_asleep_;
      case thread_role::progress: return progress_asleep_;
      case thread_role::io: break;
    }
    return io_asleep_;
  }
};

}  // namespace rill::detail
