// A worker thread of one rank: a work-stealing deque of tasks, fibers for tasks that wait, and
// network progress at scheduling points.
//
// Tasks start run-to-completion on the fiber that runs the scheduling loop. Only when a task waits
// does that fiber keep the task (suspended on its stack) while the worker continues its loop on
// another fiber, taken from a pool of parked ones. Fibers never move between workers, so a
// suspended fiber is resumed by the worker that suspended it.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "rill/detail/task_record.hpp"
#include "rill/detail/waiter.hpp"
#include "scheduler/chase_lev_deque.hpp"
#include "scheduler/fiber.hpp"
#include "scheduler/rank_services.hpp"
#include "scheduler/ready_ring.hpp"
#include "scheduler/stack_pool.hpp"
#include "trace/recorder.hpp"

namespace rill::detail {

class worker_pool;

// Per-worker counters: written by the owner only, read by anyone.
struct worker_counters {
  std::atomic<std::uint64_t> messages_sent{0};
  std::atomic<std::uint64_t> messages_handled{0};
  std::atomic<std::uint64_t> buffers_sent{0};
  std::atomic<std::uint64_t> bytes_sent{0};
  std::atomic<std::uint64_t> tasks_run{0};
  std::atomic<std::uint64_t> steals{0};
  std::atomic<std::uint64_t> fibers_created{0};

  static void bump(std::atomic<std::uint64_t>& c, std::uint64_t by = 1) {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
};

// Units of one finish scope's count (rill/detail/finish_hooks.hpp) that a worker holds. A task
// ending here leaves its unit with the worker instead of decrementing the scope's shared counter,
// and a task starting here takes a held unit before it adds to that counter (in batches). So a
// stream of short tasks of one scope seldom touches the line the other workers count on. Holding
// units only delays the scope's count reaching zero, never makes it early; the worker gives them
// back before it starts a task of another scope, switches fibers or runs out of work.
// What a thread of a rank's pool runs: tasks (a worker), copies, fills and reductions (a
// data-movement channel), external I/O -- reads and writes of files, HDF5, databases -- that
// may block in the kernel for milliseconds (an I/O thread, --rill:io-threads), or the network's
// progress: polls and the handlers that may run there (the progress thread, --rill:progress).
enum class thread_role : std::uint8_t { worker, channel, io, progress };

struct held_credit {
  void* scope = nullptr;  // null when units == 0
  std::int64_t units = 0;
};

class worker {
 public:
  // A channel or an I/O thread (worker_pool.hpp) runs the work handed to its kind instead of
  // tasks, and never steals.
  worker(worker_pool& pool, int index, thread_role role, std::size_t stack_bytes, std::int64_t inline_queue);
  ~worker();
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;

  int index() const { return index_; }
  // Whether it runs no tasks (a channel, an I/O thread or the progress thread), and which.
  bool channel() const { return role_ != thread_role::worker; }
  thread_role role() const { return role_; }
  worker_pool& pool() { return pool_; }
  worker_counters& counters() { return counters_; }

  // Owner thread only.
  // Queues a task on this worker's deque; a channel hands it to the workers.
  void push(task_record* t);
  task_record* allocate_task();
  void park(waiter& w);
  void yield();
  // Suspends the running fiber until the worker has made network progress (back-pressure).
  void wait_for_progress();
  // Back-pressure where the network says when there is room: suspends the running fiber until
  // `room` (which the network bumps, waking the rank's sleepers, when a queue that refused this
  // rank's sends has room again) differs from `seen`, read before the refused try. Meanwhile the
  // worker runs other work, and with none it sleeps instead of retrying: a refused sender that
  // retried after every poll kept its core from the destination that had to drain (with more
  // ranks than cores, the receiver got one slice in N). Retried at the first wake-up after
  // room_retry_ns in any case (a sleep lasts at most 5 ms), so that a send to a rank that stopped
  // draining keeps reporting its wait (delivery_audit).
  // A channel waits for progress instead (it does not poll; see progress_and_release).
  void wait_for_room(const std::atomic<std::uint64_t>& room, std::uint64_t seen);
  // Whether fibers wait for room and it has come (or they waited room_retry_ns).
  bool room_came() const;
  // Whether fibers wait for room (the worker is idle only for want of it).
  bool waiting_for_room() const { return !room_blocked_.empty(); }
  // Whether this thread, idle, sleeps briefly (worker_pool::sleep's short limits) instead of until
  // woken: when it must look for what nobody signals. A polling thread on a rank that learns of
  // arrivals only by polling (`must_poll`), and a channel whose fibers wait for the workers' polls.
  // An I/O thread never polls: its work is always signalled, and short sleeps would only take its
  // core from a worker about a thousand times a second.
  bool sleeps_briefly(bool must_poll) const {
    return (must_poll && polls_network()) || (channel_ && !blocked_.empty());
  }
  // Marks the worker busy (not idle) for termination detection.
  void mark_active();
  // True when no fiber is ready and no task is queued for this worker (what on_out_of_work means).
  bool out_of_work() const;
  // Runs tasks of finish scope `scope` from the bottom of this worker's deque on the calling fiber
  // (nested in the caller, no fiber switch) while that fiber has a whole task's stack free, going
  // through the scheduling loop whenever a network poll is due; then gives back held credit. Only
  // for a task waiting for `scope` to end: none of the scope's tasks can need anything the waiter
  // does after that wait.
  void help_scope(void* scope);
  // True when a task spawned with rill::may_inline may run at once on the calling fiber: this
  // worker has --rill:inline-queue tasks queued (work enough for thieves), the calling task is a
  // plain one (no message handler, no phaser registrations, no launch parent: the inline task
  // must not see them), and a whole task's stack is free below, besides `callable_bytes` for the
  // task's callable.
  bool may_run_inline(std::size_t callable_bytes) const;
  // A task ran inline (after may_run_inline): counted as run, and every poll_every-th one goes
  // through the scheduling loop and back, so that a chain of inline tasks still polls the network.
  void inline_task_ran();
  held_credit& credit() { return credit_; }
  // Gives the held units back to their scope.
  void return_credit();
  // A task of `scope` ended here without an error: its unit stays with the worker.
  void count_ended(void* scope);

  // Returns a record that will not run to its pool (owner thread; any worker's record).
  void free_task(task_record* t);

  // Any thread.
  task_record* steal() { return deque_.steal(); }
  std::int64_t queued() const { return deque_.size(); }  // approximate
  void make_ready(fiber_rec* f);
  bool has_local_work() const;
  fiber_rec* current_fiber() const { return current_; }
  // Whether this worker records into its rank's trace (--rill:trace).
  bool traced() const { return traced_; }
  // How often this worker has polled the network (written by its thread only).
  std::uint64_t polls() const { return polls_.load(std::memory_order_relaxed); }

  void thread_main();  // body of the worker's OS thread

 private:
  friend class worker_pool;
  [[noreturn]] void fiber_body(fiber_rec* self);
  // A handler on the progress thread waited (park) or yielded: the rule it broke, named.
  [[noreturn, gnu::cold]] void fatal_wait_on_progress(const char* what);
  void reclaim_ended();
  void loop();
  // Runs a task (traced as a task span when the worker records); the test of traced_ is the only
  // cost of tracing when it is off.
  void run_task(task_record* t) {
    if (traced_) [[unlikely]]
      run_task_traced(t);
    else
      run_task_body(t);
  }
  void run_task_body(task_record* t);
  [[gnu::noinline]] void run_task_traced(task_record* t);
  void return_task(task_record* t);  // any thread
  // The oldest ready fiber, or nullptr (inline: it is most of a switch between fibers).
  //
  // It also starts loading what resuming the next ready fibers will read. With more fibers than
  // the caches hold, resuming one is otherwise a chain of misses at every switch: its record, then
  // the stack its context points into, then its task's closure. The record is loaded first, some
  // switches earlier (record_ahead), so that the stack and task it names are found without a wait.
  // (Written here, not in a helper: GCC 12 at -O1 and above dropped the prefetches of an inline
  // member function that did nothing else.)
  fiber_rec* take_ready() {
    if (local_ready_.empty() && !take_remote_ready()) return nullptr;
    fiber_rec* f = local_ready_.pop();
    if (const fiber_rec* r = local_ready_.peek(record_ahead)) __builtin_prefetch(r);
    if (const fiber_rec* n = local_ready_.peek(switch_ahead)) {
      const char* sp = static_cast<const char*>(n->ctx);
      __builtin_prefetch(sp);  // its saved registers and the frames above them
      __builtin_prefetch(sp + 64);
      __builtin_prefetch(sp + 128);
      __builtin_prefetch(n->task_data);
    }
    return f;
  }
  // Moves the fibers other threads made ready to the local queue; false when there were none.
  bool take_remote_ready();
  void push_local(fiber_rec* f) { local_ready_.push(f); }
  fiber_rec* spare_fiber();
  // Switches from `self`, which a waiting list holds (blocked_, room_blocked_), to a ready fiber or
  // a spare one that runs the loop.
  void suspend_waiting(fiber_rec* self);
  fiber_rec* new_fiber();
  void idle_step();
  void reset_idle();
  bool progress_and_release();
  // Whether this thread polls the network: a worker or the progress thread, not a channel.
  bool polls_network() const { return role_ == thread_role::worker || role_ == thread_role::progress; }
  void mark_idle();
  // True on every poll_every-th scheduling step (task run, fiber resumed, yield or park): then the
  // network is polled, whatever the local work.
  static constexpr unsigned poll_every = 32;
  // How long the progress thread sleeps between looks while some worker is not busy: 50 us, doubling
  // while the workers keep polling, to 800 us. A message to a rank whose workers all became busy
  // waits at most that long, and at once once the progress thread is polling; the naps' wake-ups
  // cost a rank of polling workers 0.4 -> 1.4 us a round trip when they came every 50 us (M5).
  static constexpr unsigned progress_nap_us = 50;
  static constexpr unsigned progress_nap_doublings = 4;
  bool poll_tick() { return ++ticks_ % poll_every == 0; }
  // How many switches ahead take_ready() prefetches a ready fiber's stack and task, and its record.
  static constexpr std::size_t switch_ahead = 2;
  static constexpr std::size_t record_ahead = 8;
  // One scheduling step of a task run nested in the running fiber (help_scope, inline tasks): on
  // every poll_every-th, a trip through the scheduling loop and back.
  void step_nested();
  // Switches from the running fiber `self` to `next`; when the worker records, ending self's task
  // stretch first and starting another when self runs again.
  void suspend_to(fiber_rec* self, fiber_rec* next) {
    if (traced_) [[unlikely]] {
      suspend_traced(self, next);
      return;
    }
    current_ = next;
    switch_fiber(self, next);
  }
  [[gnu::noinline]] void suspend_traced(fiber_rec* self, fiber_rec* next);
  // True when the running fiber has a whole task's stack, and `extra` bytes, free below the
  // caller's frame (a thread's own stack always has).
  bool stack_room(std::size_t extra = 0) const;

  worker_pool& pool_;
  const int index_;
  const thread_role role_;
  const bool channel_;  // role_ != worker
  // A worker of a rank with a progress thread: counted in the pool's busy_workers while active
  // (set as the thread starts: the pool makes its progress thread after the workers).
  bool counts_busy_ = false;
  worker_counters counters_;
  chase_lev_deque<task_record*> deque_;
  const std::size_t task_stack_bytes_;  // --rill:stack (times the sanitizer factor)
  const std::int64_t inline_queue_;     // --rill:inline-queue
  stack_pool stacks_;

  fiber_rec main_;                                          // the OS thread's own context
  fiber_rec* current_ = nullptr;                            // the running fiber
  std::vector<fiber_rec*> spare_;                           // parked fibers, each at the top of its scheduling loop
  std::vector<std::unique_ptr<fiber_rec>> fibers_;          // every fiber record this worker made
  std::vector<fiber_rec*> ended_;                           // ended fibers whose stacks are not yet reclaimed
  std::vector<fiber_rec*> dead_;                            // records of ended fibers, for reuse
  ready_ring local_ready_;                                  // ready fibers, FIFO (owner only)
  std::atomic<fiber_rec*> remote_ready_{nullptr};           // woken from other threads, LIFO stack
  fiber_rec* exit_to_ = nullptr;                            // set when the running fiber should end and resume another
  std::vector<std::unique_ptr<task_record[]>> task_slabs_;  // every task record this worker made
  task_record* free_tasks_ = nullptr;                       // owner only
  std::atomic<task_record*> returned_tasks_{nullptr};       // freed by other workers, LIFO stack
  std::vector<fiber_rec*> blocked_;                         // fibers waiting for the next network progress
  std::vector<fiber_rec*> room_blocked_;                    // fibers waiting for room (wait_for_room)
  const std::atomic<std::uint64_t>* room_ = nullptr;        // what they wait on to change
  std::uint64_t room_seen_ = 0;                             // its oldest value a waiter saw
  std::uint64_t room_blocked_since_ns_ = 0;                 // when the first of them began waiting
  std::uint64_t idle_since_ns_ = 0;                         // when the worker last ran out of work (0: it is busy)
  unsigned idle_spins_ = 0;
  unsigned naps_ = 0;  // the progress thread's naps since it last found every worker busy
  int sleep_backoff_ = 0;
  unsigned ticks_ = 0;
  held_credit credit_;
  bool poll_due_ = false;  // the loop polls the network before it resumes another fiber
  std::atomic<std::uint64_t> polls_{0};
  std::uint64_t blocked_at_polls_ = 0;  // a channel: the workers' polls when blocked_ was begun
  bool channel_sent_ = false;           // a channel was active since it last sent what the rank buffered
  bool active_ = false;
  bool traced_ = false;  // this worker records into its rank's trace (--rill:trace)
  std::thread thread_;
};

// Ends the program for what a task of no finish scope threw (nobody can handle it).
[[noreturn]] void fatal_unhandled(const std::exception_ptr& error);

// The worker running on this thread, or nullptr. (constinit: no dynamic initialisation, so the
// access is a plain thread-local load, inlined into every caller.)
extern constinit thread_local worker* tls_worker;
inline worker* current_worker() { return tls_worker; }

}  // namespace rill::detail
