// A Chase-Lev work-stealing deque (Lê, Pop, Cohen, Zappa Nardelli, PPoPP'13), growable.
//
// The owner pushes and pops at the bottom; thieves steal from the top. Where the paper uses
// fences, this uses sequentially consistent operations on top/bottom instead, which ThreadSanitizer
// understands. Retired arrays are kept until the deque dies (growth doubles, so they cost at most
// as much as the live one).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace rill::detail {

template <class T>
class chase_lev_deque {
  static_assert(std::is_pointer_v<T>, "holds pointers");

  struct array {
    explicit array(std::int64_t cap)
        : capacity(cap), mask(cap - 1), slots(new std::atomic<T>[static_cast<std::size_t>(cap)]) {}
    std::int64_t capacity;
    std::int64_t mask;
    std::unique_ptr<std::atomic<T>[]> slots;
    T get(std::int64_t i) const { return slots[static_cast<std::size_t>(i & mask)].load(std::memory_order_relaxed); }
    void put(std::int64_t i, T v) { slots[static_cast<std::size_t>(i & mask)].store(v, std::memory_order_relaxed); }
  };

 public:
  explicit chase_lev_deque(std::int64_t capacity = 1024) {
    retired_.push_back(std::make_unique<array>(capacity));
    array_.store(retired_.back().get(), std::memory_order_relaxed);
  }

  // Owner only.
  void push(T v) {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    const std::int64_t t = top_.load(std::memory_order_acquire);
    array* a = array_.load(std::memory_order_relaxed);
    if (b - t > a->capacity - 1) a = grow(a, t, b);
    a->put(b, v);
    bottom_.store(b + 1, std::memory_order_release);
  }

  // Owner only. Returns nullptr when empty.
  T pop() {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    array* a = array_.load(std::memory_order_relaxed);
    bottom_.store(b, std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    if (t > b) {  // empty
      bottom_.store(b + 1, std::memory_order_relaxed);
      return nullptr;
    }
    T v = a->get(b);
    if (t == b) {  // last element: race with thieves
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) v = nullptr;
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return v;
  }

  // Any thread. Returns nullptr when empty or when it lost a race.
  T steal() {
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    if (t >= b) return nullptr;
    array* a = array_.load(std::memory_order_acquire);
    T v = a->get(t);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) return nullptr;
    return v;
  }

  // Approximate; exact for the owner when no thief is active.
  bool empty() const { return bottom_.load(std::memory_order_seq_cst) <= top_.load(std::memory_order_seq_cst); }
  std::int64_t size() const {
    const std::int64_t n = bottom_.load(std::memory_order_seq_cst) - top_.load(std::memory_order_seq_cst);
    return n > 0 ? n : 0;
  }

 private:
  array* grow(array* old, std::int64_t t, std::int64_t b) {
    auto bigger = std::make_unique<array>(old->capacity * 2);
    for (std::int64_t i = t; i < b; ++i) bigger->put(i, old->get(i));
    array* raw = bigger.get();
    retired_.push_back(std::move(bigger));
    array_.store(raw, std::memory_order_release);
    return raw;
  }

  alignas(64) std::atomic<std::int64_t> top_{0};
  alignas(64) std::atomic<std::int64_t> bottom_{0};
  std::atomic<array*> array_;
  std::vector<std::unique_ptr<array>> retired_;  // owner only
};

}  // namespace rill::detail
