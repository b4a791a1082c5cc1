#include "scheduler/deep_stack.hpp"

#include <exception>
#include <memory>
#include <utility>

#include "scheduler/fiber.hpp"
#include "scheduler/stack_pool.hpp"
#include "scheduler/worker.hpp"

namespace rill::detail {

namespace {

constexpr std::size_t deep_bytes = deep_stack_bytes * sanitizer_stack_factor;

// A thread's deep-stack fiber: it loops, running the work it is handed and switching back to the
// fiber that handed it. It never ends; at thread exit its stack is unmapped with it suspended.
class deep_fiber {
 public:
  deep_fiber() {
    rec_.entry = &body;
    rec_.owner = this;
    make_fiber(rec_, stacks_.get());
  }
  ~deep_fiber() {
    forget_fiber(rec_);
    stacks_.put(rec_.stack);
  }
  deep_fiber(const deep_fiber&) = delete;
  deep_fiber& operator=(const deep_fiber&) = delete;

  bool running() const { return caller_ != nullptr; }

  void run(fiber_rec* caller, void (*work)(void*), void* arg) {
    caller_ = caller;
    work_ = work;
    arg_ = arg;
    switch_fiber(caller, &rec_);
    caller_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  [[noreturn]] static void body(fiber_rec* self) {
    auto* d = static_cast<deep_fiber*>(self->owner);
    for (;;) {
      try {
        d->work_(d->arg_);
      } catch (...) {
        d->error_ = std::current_exception();
      }
      switch_fiber(&d->rec_, d->caller_);
    }
  }

  stack_pool stacks_{deep_bytes};
  fiber_rec rec_;
  fiber_rec* caller_ = nullptr;  // non-null while a deep call runs
  void (*work_)(void*) = nullptr;
  void* arg_ = nullptr;
  std::exception_ptr error_;
};

}  // namespace

void deep_call(void (*work)(void* arg), void* arg) {
  thread_local std::unique_ptr<deep_fiber> deep;  // created on this thread's first deep call
  worker* w = current_worker();
  fiber_rec* here = w ? w->current_fiber() : nullptr;
  // The thread's own stack (its record has no stack_context) and large fiber stacks are deep enough.
  if (!here || here->stack.size == 0 || here->stack.size >= deep_bytes || (deep && deep->running())) {
    work(arg);
    return;
  }
  if (!deep) deep = std::make_unique<deep_fiber>();
  deep->run(here, work, arg);
}

}  // namespace rill::detail
