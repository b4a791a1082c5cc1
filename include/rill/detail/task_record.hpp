// The unit the scheduler moves around: a type-erased callable in a fixed-size, pooled record.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace rill::detail {

// 64 bytes: one cache line.
struct task_record {
  // Runs the callable and destroys it (also when it throws).
  void (*invoke)(task_record*) = nullptr;
  task_record* next = nullptr;  // free-list link
  void* home = nullptr;         // the worker whose pool the record returns to (nullptr: the heap)
  static constexpr std::size_t inline_bytes = 40;
  static constexpr std::size_t inline_align = 8;
  alignas(inline_align) std::byte storage[inline_bytes];
};

// Records come from the calling worker's pool (or the heap off a worker).
task_record* task_allocate();
// Queues a record on the calling worker's deque.
void task_submit(task_record* t);
// Throws rill::misuse_error naming `what` unless the calling thread is a Rill worker.
void require_worker(const char* what);

template <class F>
task_record* make_task(F&& fn) {
  using Fn = std::decay_t<F>;
  task_record* t = task_allocate();
  if constexpr (sizeof(Fn) <= task_record::inline_bytes && alignof(Fn) <= task_record::inline_align) {
    ::new (static_cast<void*>(t->storage)) Fn(std::forward<F>(fn));
    t->invoke = [](task_record* r) {
      Fn* f = std::launder(reinterpret_cast<Fn*>(r->storage));
      struct destroy {
        Fn* f;
        ~destroy() { f->~Fn(); }
      } guard{f};
      (*f)();
    };
  } else {
    Fn* heap = new Fn(std::forward<F>(fn));
    ::new (static_cast<void*>(t->storage)) Fn*(heap);
    t->invoke = [](task_record* r) {
      Fn* f = *std::launder(reinterpret_cast<Fn**>(r->storage));
      struct destroy {
        Fn* f;
        ~destroy() { delete f; }
      } guard{f};
      (*f)();
    };
  }
  return t;
}

}  // namespace rill::detail
