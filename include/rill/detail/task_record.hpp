// The unit the scheduler moves around: a type-erased callable in a fixed-size, pooled record.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace rill::detail {

// 64 bytes: one cache line.
struct task_record {
  // invoke(record, run_here) runs the callable and destroys it (also when it throws).
  // invoke(record, rank) sends the task to that rank instead, if it is one that may move
  // (rill::async_any), destroys it and returns true; a task that may not returns false, untouched.
  static constexpr int run_here = -1;
  bool (*invoke)(task_record*, int ship_to) = nullptr;
  union {
    task_record* next = nullptr;  // free-list link, while the record is free
    void* scope;                  // while queued: the finish scope the task runs in (or null)
  };
  void* home = nullptr;  // the worker whose pool the record returns to (nullptr: the heap)
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

// How a record calls its callable: Run::run(record, fn). The plain policy just calls it; another
// policy can wrap the call in what the record's `scope` names (finish_hooks.hpp), which keeps that
// context out of the callable so that small callables stay inline. A policy with
// `static constexpr bool ships = true` also has Run::ship(record, fn, rank), for tasks that may
// move to another rank.
struct run_plain {
  template <class Fn>
  static void run(task_record*, Fn& fn) {
    fn();
  }
};

template <class Run>
concept ships_tasks = Run::ships;

// A copy of a closure read a word at a time. The caller has usually just built it on its stack
// with stores of 8 bytes or less; read with 16-byte loads (the compiler's choice for a plain
// copy), a load spanning two of those stores cannot take its bytes from them and waits for them
// to reach the cache, ~12 cycles per spawn (3 % of UTS's time).
template <class Fn>
Fn read_by_words(const Fn& fn) {
  std::array<std::uint64_t, sizeof(Fn) / 8> words;
  for (std::size_t i = 0; i < words.size(); ++i)
    std::memcpy(&words[i], reinterpret_cast<const std::byte*>(&fn) + 8 * i, 8);
  return std::bit_cast<Fn>(words);
}

// Puts fn into record t (its scope untouched).
template <class Run = run_plain, class F>
void emplace_task(task_record* t, F&& fn) {
  using Fn = std::decay_t<F>;
  constexpr bool inline_fn = sizeof(Fn) <= task_record::inline_bytes && alignof(Fn) <= task_record::inline_align;
  // (Closures without padding only: a padding byte read as part of a word is uninitialised.)
  if constexpr (inline_fn && std::is_class_v<Fn> && std::has_unique_object_representations_v<Fn> && sizeof(Fn) % 8 == 0)
    ::new (static_cast<void*>(t->storage)) Fn(read_by_words(fn));
  else if constexpr (inline_fn)
    ::new (static_cast<void*>(t->storage)) Fn(std::forward<F>(fn));
  else
    ::new (static_cast<void*>(t->storage)) Fn*(new Fn(std::forward<F>(fn)));
  t->invoke = [](task_record* r, int ship_to) {
    Fn* f;
    if constexpr (inline_fn)
      f = std::launder(reinterpret_cast<Fn*>(r->storage));
    else
      f = *std::launder(reinterpret_cast<Fn**>(r->storage));
    if (ship_to != task_record::run_here && !ships_tasks<Run>) return false;
    struct destroy {
      Fn* f;
      ~destroy() {
        if constexpr (inline_fn)
          f->~Fn();
        else
          delete f;
      }
    } guard{f};
    if constexpr (ships_tasks<Run>) {
      if (ship_to != task_record::run_here) {
        Run::ship(r, *f, ship_to);
        return true;
      }
    }
    Run::run(r, *f);
    return true;
  };
}

// A record for fn outside any finish scope.
template <class Run = run_plain, class F>
task_record* make_task(F&& fn) {
  task_record* t = task_allocate();
  t->scope = nullptr;
  emplace_task<Run>(t, std::forward<F>(fn));
  return t;
}

}  // namespace rill::detail
