#include "scheduler/worker.hpp"

#include "scheduler/worker_pool.hpp"

#include <algorithm>
#include <exception>

#include "common/clock.hpp"
#include "common/log.hpp"
#include "rill/task.hpp"
#include "scheduler/fault_report.hpp"
#include "trace/hooks.hpp"

namespace rill::detail {

constinit thread_local worker* tls_worker = nullptr;

namespace {

// Task records a worker allocates at once when its pool is empty.
constexpr std::size_t task_slab_records = 256;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

worker::worker(worker_pool& pool, int index, thread_role role, std::size_t stack_bytes, std::int64_t inline_queue)
    : pool_(pool),
      index_(index),
      role_(role),
      channel_(role != thread_role::worker),
      task_stack_bytes_(stack_bytes * sanitizer_stack_factor),
      inline_queue_(inline_queue),
      // Room for a task of --rill:stack bytes, and as much again under it: a finish runs its scope's
      // queued tasks nested on its own stack (help_scope) while a whole task's stack is free there.
      // Stacks are mapped without reserve, so the second half costs address space only until used.
      stacks_(2 * task_stack_bytes_) {}

worker::~worker() {
  // Fibers still suspended at shutdown wait for something that will never come; resuming them
  // would run user code after the program ended. They are dropped; their stacks go with the pool.
  reclaim_ended();
  std::size_t stuck = 0;
  for (auto& f : fibers_) {
    if (f->ctx) {
      ++stuck;
      forget_fiber(*f);
    }
  }
  if (stuck > 0) log().warn("{} task(s) were still waiting when their rank stopped", stuck);
}

void worker::push(task_record* t) {
  if (channel_) {
    pool_.inject(t);  // (its work released it, e.g. an event's dependent: a worker runs it)
    return;
  }
  deque_.push(t);
  pool_.notify_spawned();
}

task_record* worker::allocate_task() {
  if (!free_tasks_) free_tasks_ = returned_tasks_.exchange(nullptr, std::memory_order_acquire);
  if (!free_tasks_) {
    // The pool grows with the peak number of this worker's records alive at once, never with the
    // number of tasks spawned: records come back to it wherever they ran (free_task).
    task_slabs_.push_back(std::make_unique<task_record[]>(task_slab_records));
    task_record* slab = task_slabs_.back().get();
    for (std::size_t i = 0; i < task_slab_records; ++i) {
      slab[i].home = this;
      slab[i].next = i + 1 < task_slab_records ? &slab[i + 1] : nullptr;
    }
    free_tasks_ = slab;
  }
  task_record* t = free_tasks_;
  free_tasks_ = t->next;
  return t;
}

void worker::free_task(task_record* t) {
  if (t->home == this) {
    t->next = free_tasks_;
    free_tasks_ = t;
  } else if (t->home == nullptr) {
    delete t;
  } else {
    // Ran here after a steal: hand it back to its worker without a lock.
    static_cast<worker*>(t->home)->return_task(t);
  }
}

void worker::return_task(task_record* t) {
  task_record* head = returned_tasks_.load(std::memory_order_relaxed);
  do {
    t->next = head;
  } while (!returned_tasks_.compare_exchange_weak(head, t, std::memory_order_release, std::memory_order_relaxed));
}

void worker::make_ready(fiber_rec* f) {
  if (tls_worker == this) {
    push_local(f);
    return;
  }
  fiber_rec* head = remote_ready_.load(std::memory_order_relaxed);
  do {
    f->next = head;
  } while (!remote_ready_.compare_exchange_weak(head, f, std::memory_order_release, std::memory_order_relaxed));
  pool_.notify_thread_of(*this);
}

bool worker::take_remote_ready() {
  if (remote_ready_.load(std::memory_order_relaxed) == nullptr) return false;
  // Move the remote LIFO stack to the local FIFO, restoring arrival order.
  fiber_rec* f = remote_ready_.exchange(nullptr, std::memory_order_acquire);
  fiber_rec* reversed = nullptr;
  while (f) {
    fiber_rec* next = f->next;
    f->next = reversed;
    reversed = f;
    f = next;
  }
  for (; reversed; reversed = reversed->next) local_ready_.push(reversed);
  return true;
}

bool worker::has_local_work() const {
  // Fibers in the local ready queue or blocked_ need no check: the loop never lets a worker go
  // idle while it has any (see loop()), and an active worker is not quiet anyway.
  return remote_ready_.load(std::memory_order_relaxed) != nullptr || !deque_.empty();
}

bool worker::out_of_work() const {
  return local_ready_.empty() && remote_ready_.load(std::memory_order_relaxed) == nullptr && deque_.empty() &&
         !pool_.has_injected();
}

fiber_rec* worker::new_fiber() {
  reclaim_ended();
  fiber_rec* f;
  if (!dead_.empty()) {
    f = dead_.back();
    dead_.pop_back();
  } else {
    fibers_.push_back(std::make_unique<fiber_rec>());
    f = fibers_.back().get();
  }
  f->owner = this;
  f->entry = [](fiber_rec* self) { static_cast<worker*>(self->owner)->fiber_body(self); };
  make_fiber(*f, stacks_.get());
  worker_counters::bump(counters_.fibers_created);
  return f;
}

void worker::reclaim_ended() {
  for (fiber_rec* f : ended_) {
    stacks_.put(f->stack);
    forget_fiber(*f);
    dead_.push_back(f);
  }
  ended_.clear();
}

fiber_rec* worker::spare_fiber() {
  if (!spare_.empty()) {
    fiber_rec* f = spare_.back();
    spare_.pop_back();
    return f;
  }
  return new_fiber();
}

void worker::fiber_body(fiber_rec* self) {
  loop();
  // The loop ended: either the rank stops (go back to the thread's own context) or this fiber is
  // surplus and hands the worker to exit_to_. Its stack is reclaimed once we are off it.
  fiber_rec* to = exit_to_ ? exit_to_ : &main_;
  exit_to_ = nullptr;
  current_ = to;
  ended_.push_back(self);
  exit_fiber(self, to);
}

void worker::loop() {
  rank_services& services = pool_.services();
  for (;;) {
    if (services.stopping()) return;
    // Fibers that keep waking each other must not keep the network waiting: poll every
    // poll_every-th resumption too, before a fiber is taken from the queue.
    if (poll_due_ || (!local_ready_.empty() && poll_tick())) {
      poll_due_ = false;
      progress_and_release();
    }
    if (fiber_rec* f = take_ready()) {
      if (credit_.units) return_credit();  // (may wake fibers; f still runs first)
      mark_active();
      reset_idle();
      if (spare_.size() >= 64) {  // enough parked fibers: end this one, resume f
        exit_to_ = f;
        return;
      }
      spare_.push_back(current_);
      fiber_rec* self = current_;
      current_ = f;
      switch_fiber(self, f);
      continue;
    }
    // (empty() is two plain loads; pop() always stores with a full fence, which an idle round
    // would pay every time.)
    task_record* t = nullptr;
    if (role_ == thread_role::io) {
      t = pool_.take_io_work();
    } else if (role_ == thread_role::channel) {
      t = pool_.take_channel_work();
    } else if (role_ == thread_role::worker) {
      t = deque_.empty() ? nullptr : deque_.pop();
      if (!t) t = pool_.take_injected();
    }
    if (t) {
      mark_active();
      reset_idle();
      run_task(t);
      if (poll_tick()) progress_and_release();
      continue;
    }
    // Nothing local to do: whatever this rank buffered leaves now (a lone request must not wait
    // for the age threshold), then poll. A channel, out of work nearly always, sends only after it
    // did something (else it would send the workers' buffers before they fill) and never polls.
    if (credit_.units) return_credit();
    if (!channel_ || channel_sent_) services.on_out_of_work(*this);
    channel_sent_ = false;
    // The progress thread polls only while every worker is busy: an idle worker polls anyway,
    // and two threads polling for one rank took turns on the cores (docs/scheduler.md). It naps
    // meanwhile, longer and longer while the workers keep polling.
    if (role_ == thread_role::progress && blocked_.empty()) {
      if (!pool_.all_workers_busy()) {
        mark_idle();
        reset_idle();
        pool_.nap(*this, progress_nap_us << std::min(naps_, progress_nap_doublings));
        ++naps_;
        continue;
      }
      naps_ = 0;
    }
    if (progress_and_release() || !local_ready_.empty()) {  // never idle with ready fibers
      reset_idle();
      continue;
    }
    if (!channel_ && (t = pool_.steal_for(index_))) {
      mark_active();
      reset_idle();
      worker_counters::bump(counters_.steals);
      trace::instant<trace::kind::steal>(0, static_cast<std::uint64_t>(index_), 1);
      run_task(t);
      continue;
    }
    idle_step();
  }
}

void worker::run_task_traced(task_record* t) {
  fiber_rec* const running = current_;
  // The stretch of a task this one runs nested in (help_scope, inline) goes on around it.
  const std::uint64_t outer_start = running->trace_task_start;
  const std::uint64_t released_by = pool_.trace()->take_released(t);  // (t is freed by the task's end)
  running->trace_task_start = trace::span_begin();
  run_task_body(t);
  trace::span_end<trace::kind::task>(running->trace_task_start, released_by);
  running->trace_task_start = outer_start;
}

inline void worker::run_task_body(task_record* t) {
  void* const scope = t->scope;
  current_->task_data = t->storage;
  if (credit_.units && scope != credit_.scope) return_credit();
  if (!scope) {
    try {
      t->invoke(t, task_record::run_here);
    } catch (const std::exception&) {
      fatal_unhandled(std::current_exception());
    }
  } else {
    // A task of a finish scope: the scope is the fiber's while the task runs, and what it throws
    // goes to the scope. Even if the task suspends, it resumes on this fiber and this worker.
    fiber_rec* const f = current_;
    void* const previous = f->task.scope;
    f->task.scope = scope;
    std::exception_ptr error;
    try {
      t->invoke(t, task_record::run_here);
    } catch (...) {
      error = std::current_exception();
    }
    f->task.scope = previous;
    if (error)
      pool_.scope_hooks().task_failed(scope, std::move(error));
    else
      count_ended(scope);
  }
  free_task(t);
  worker_counters::bump(counters_.tasks_run);
}

bool worker::stack_room(std::size_t extra) const {
  const fiber_rec* f = current_;
  if (f->stack.size == 0) return true;
  const auto lowest = reinterpret_cast<std::uintptr_t>(f->stack.sp) - f->stack.size;
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) - lowest >= task_stack_bytes_ + extra;
}

bool worker::may_run_inline(std::size_t callable_bytes) const {
  const fiber_rec* f = current_;
  return !channel_ && deque_.size() >= inline_queue_ && f->message_source < 0 && f->task.registrations == nullptr &&
         f->task.launch_parent == nullptr && stack_room(callable_bytes);
}

void worker::inline_task_ran() {
  worker_counters::bump(counters_.tasks_run);
  step_nested();
}

void worker::step_nested() {
  // The loop polls the network every poll_every-th step. Here that is a trip through the loop,
  // which polls first thing, and back: the poll's handlers must not run nested in the task.
  if (poll_tick()) {
    poll_due_ = true;
    wait_for_progress();
  }
}

void worker::fatal_wait_on_progress(const char* what) {
  const fiber_rec* f = current_;
  if (f->message_source >= 0)
    fatal(
        "the handler '{}' of a message from rank {} {} on the progress thread: a handler sent with "
        "rill::am::send_inline must not wait (send a message, trigger an event or spawn a task instead)",
        reported_handler_name(f->message_handler), f->message_source, what);
  fatal("work on the progress thread {}: it must not wait", what);
}

void fatal_unhandled(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    fatal("a task threw an exception nobody handled: {}", e.what());
  } catch (...) {
    fatal("a task threw an exception nobody handled (not a std::exception)");
  }
}

void worker::help_scope(void* scope) {
  fiber_rec* const f = current_;
  // A nested task starts only with a whole task's stack free below it, as a task from the loop has
  // (fiber stacks are twice that: see the constructor).
  // A nested task starts as one from the loop would: with no registrations (sync: phasers), no
  // launch parent (regions) and outside any message handler; the waiter's own come back afterwards.
  struct nested_context {
    fiber_rec* f;
    void* registrations;
    void* launch_parent;
    int message_source;
    explicit nested_context(fiber_rec* fiber)
        : f(fiber),
          registrations(fiber->task.registrations),
          launch_parent(fiber->task.launch_parent),
          message_source(fiber->message_source) {
      f->task.registrations = nullptr;
      f->task.launch_parent = nullptr;
      f->message_source = -1;
    }
    ~nested_context() {
      f->task.registrations = registrations;
      f->task.launch_parent = launch_parent;
      f->message_source = message_source;
    }
  } context{f};
  while (!deque_.empty() && stack_room()) {
    task_record* t = deque_.pop();
    if (!t) break;            // a thief took it
    if (t->scope != scope) {  // not ours to run here: back where it was
      deque_.push(t);
      break;
    }
    run_task(t);
    step_nested();
  }
  if (credit_.units) return_credit();
}

void worker::count_ended(void* scope) {
  if (credit_.scope != scope) {
    if (credit_.units) return_credit();
    credit_.scope = scope;
  }
  ++credit_.units;
}

void worker::return_credit() {
  const held_credit c = credit_;
  credit_ = {};
  pool_.scope_hooks().release_credit(c.scope, c.units);
}

void worker::mark_active() {
  channel_sent_ = channel_;
  if (!active_) {
    active_ = true;
    pool_.active.fetch_add(1, std::memory_order_seq_cst);
    if (counts_busy_) pool_.busy_workers.fetch_add(1, std::memory_order_relaxed);
  }
}

void worker::mark_idle() {
  if (active_) {
    active_ = false;
    pool_.active.fetch_sub(1, std::memory_order_seq_cst);
    if (counts_busy_) pool_.busy_workers.fetch_sub(1, std::memory_order_relaxed);
  }
}

void worker::reset_idle() {
  idle_since_ns_ = 0;
  idle_spins_ = 0;
  sleep_backoff_ = 0;
}

void worker::idle_step() {
  if (room_blocked_.empty()) mark_idle();  // (a fiber that waits to send is work not yet done)
  rank_services& services = pool_.services();
  services.on_idle(*this);
  const bool must_poll = services.must_poll();
  // The clock is read every 16th round only: reading it costs as much as a poll, and every
  // nanosecond of an idle round is latency added to the next arrival.
  if (idle_since_ns_ == 0) idle_since_ns_ = steady_now_ns();
  if (++idle_spins_ % 16 != 0) {
    cpu_relax();
    return;
  }
  const std::uint64_t now = steady_now_ns();
  // A rank that only learns of arrivals by polling (MPI) keeps polling for the whole window: a
  // reply that finds it asleep costs up to the sleep time, and two ranks that each sleep through
  // the other's messages stay slow. Ranks that are woken by arrivals need only a short spin.
  // A channel, which does not poll and is woken by channel work, spins as briefly: a transfer's
  // steps come in bursts, and each that found it asleep would wait for its wake-up.
  const std::uint64_t window =
      must_poll && polls_network() ? pool_.idle_poll_ns() : std::min<std::uint64_t>(pool_.idle_poll_ns(), 50'000);
  if (now - idle_since_ns_ < window) {
    // Let other threads (another rank's process on an oversubscribed node) run now and then.
    std::this_thread::yield();
    return;
  }
  pool_.sleep(*this, sleeps_briefly(must_poll), sleep_backoff_);
}

void worker::park(waiter& w) {
  (void)w;
  if (role_ == thread_role::progress) [[unlikely]]
    fatal_wait_on_progress("waited");
  fiber_rec* self = current_;
  // Every poll_every-th park goes through the scheduling loop (which polls the network) instead of
  // straight to the next ready fiber, as yield() does.
  // Held finish credit is given back by the loop too (not here, inside a wait being set up).
  fiber_rec* next = nullptr;
  if (poll_tick())
    poll_due_ = true;
  else if (!credit_.units)
    next = take_ready();
  // Woken between registering and parking, and first in the queue: just go on. (Further back in
  // the queue is fine: the switch below saves this fiber before anything can resume it.)
  if (next == self) return;
  if (!next) next = spare_fiber();
  suspend_to(self, next);
}

void worker::suspend_traced(fiber_rec* self, fiber_rec* next) {
  if (self->trace_task_start) trace::span_end<trace::kind::task>(self->trace_task_start);
  trace::instant<trace::kind::fiber_park>();
  current_ = next;
  switch_fiber(self, next);
  trace::instant<trace::kind::fiber_resume>();
  if (self->trace_task_start) self->trace_task_start = trace::span_begin();
}

void worker::yield() {
  if (role_ == thread_role::progress) [[unlikely]]
    fatal_wait_on_progress("yielded");
  // Fibers that poll something with yield() could otherwise hand the worker back and forth
  // forever without the network being polled: every poll_every-th yield goes through the loop.
  fiber_rec* next = !poll_tick() && !credit_.units ? take_ready() : nullptr;
  if (next) {  // another fiber is ready: switch to it directly
    fiber_rec* self = current_;
    push_local(self);
    suspend_to(self, next);
    return;
  }
  // Otherwise let the loop run queued tasks and poll the network, on another fiber, before this
  // one continues. Tasks never run nested on the yielding stack: a nested task that waited for
  // something this fiber has yet to do would deadlock it.
  wait_for_progress();
}

void worker::wait_for_progress() {
  // Parked until the scheduling loop has polled the network once more (after at most a few
  // tasks); the loop runs other work meanwhile, on another fiber.
  fiber_rec* self = current_;
  if (channel_ && blocked_.empty()) blocked_at_polls_ = pool_.worker_polls();
  blocked_.push_back(self);
  suspend_waiting(self);
}

void worker::suspend_waiting(fiber_rec* self) {
  fiber_rec* next = credit_.units ? nullptr : take_ready();  // held credit: via the loop
  if (!next) next = spare_fiber();
  suspend_to(self, next);
}

namespace {
// A fiber waiting for room tries again after this long even if no room was signalled.
constexpr std::uint64_t room_retry_ns = 2'000'000;
}  // namespace

void worker::wait_for_room(const std::atomic<std::uint64_t>& room, std::uint64_t seen) {
  if (channel_) {
    wait_for_progress();
    return;
  }
  fiber_rec* self = current_;
  mark_active();  // (a send from an idle worker's hooks: it is work not yet done, for termination)
  if (room_blocked_.empty()) {
    room_ = &room;
    room_seen_ = seen;
    room_blocked_since_ns_ = steady_now_ns();
  }
  room_seen_ = std::min(room_seen_, seen);  // (one counter per rank: its values only grow)
  room_blocked_.push_back(self);
  suspend_waiting(self);
}

bool worker::room_came() const {
  return !room_blocked_.empty() && (room_->load(std::memory_order_acquire) != room_seen_ ||
                                    steady_now_ns() - room_blocked_since_ns_ >= room_retry_ns);
}

bool worker::progress_and_release() {
  // A channel never polls the network: the handlers would run beside the workers' tasks, which a
  // program with one worker per rank may count on not happening. A fiber of its own that waits for
  // progress (back-pressure on a send) goes on once a worker has polled since it began to wait;
  // until then the channel idles and sleeps (idle_step).
  // The progress thread polls as a worker does (it runs the handlers that may run there).
  if (!polls_network() && (blocked_.empty() || pool_.worker_polls() == blocked_at_polls_)) return false;
  bool did = false;
  if (polls_network()) {
    polls_.store(polls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    did = pool_.services().progress(*this);
  }
  for (fiber_rec* f : blocked_) push_local(f);
  blocked_.clear();
  if (room_came()) {
    for (fiber_rec* f : room_blocked_) push_local(f);
    room_blocked_.clear();
  }
  return did;
}

void worker::thread_main() {
  tls_worker = this;
  counts_busy_ = role_ == thread_role::worker && pool_.progress_thread() != nullptr;
  if (trace::rank_trace* t = pool_.trace()) {
    t->attach_thread(index_);
    traced_ = true;
  }
  init_thread_fiber(main_);
  current_ = &main_;
  fiber_rec* first = new_fiber();
  current_ = first;
  switch_fiber(&main_, first);
  // Back on the thread's own stack: the rank is stopping. End the parked fibers (each returns
  // here after seeing the stop flag).
  while (!spare_.empty()) {
    fiber_rec* f = spare_.back();
    spare_.pop_back();
    current_ = f;
    switch_fiber(&main_, f);
  }
  reclaim_ended();
  mark_idle();
  trace::rank_trace::detach_thread();
  tls_worker = nullptr;
}

}  // namespace rill::detail
