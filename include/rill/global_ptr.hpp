// Global pointers in their minimal form: a rank and an address in that rank's registered segment
// (src/global/segment.hpp), as UPC++ and HabaneroUPC++ have them.
//
//   rill::global_ptr<double> a = rill::new_array<double>(1024);   // in this rank's segment
//   rill::async_copy(a, b, 1024).wait();                          // to wherever b lives (async_copy.hpp)
//   double* p = a.local();                                        // a plain pointer, where addressable
//   rill::delete_array(a);
//
// A global_ptr is a value (trivially copyable, 16 bytes): store it anywhere, send it in messages and
// async_at arguments. Arithmetic moves within the allocation, as for plain pointers. The element
// type must be trivially copyable, since the bytes travel between ranks.
//
// is_local() says whether the calling rank can address the memory directly: its own segment, on
// the local transport (ranks as threads of one process) every rank's, and under MPI those of the
// processes on its node (a shared-memory window). local() returns the plain pointer then, in this
// process' mapping, after checking the range; anything else (memory on another node, a bad
// range) throws rill::misuse_error. Every access -- local(), a load or store through a mapped
// segment, and at the home for one that travels as a message -- is checked the same way:
//
// - the range lies in the owner's segment (its heaps), and is aligned as the operation needs;
// - use after free: the pointer carries its allocation's generation tag
//   (rill/detail/tagged_address.hpp), and the memory it touches must carry the same. Freed
//   memory, memory allocated again since, and a range that runs past the end of its allocation
//   are errors naming the cause. Allocations come in whole 16-byte granules, the resolution of
//   the check. A pointer made from a plain address (the (rank, T*) constructor) is untagged and
//   checked against the segment's bounds only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#include "rill/detail/tagged_address.hpp"
#include "rill/error.hpp"

namespace rill {

namespace detail {
// An allocation of `bytes` in the calling rank's segment, as a tagged address; throws
// rill::misuse_error when full.
std::uintptr_t segment_allocate(std::size_t bytes, std::size_t align, const char* what);
// Throws rill::misuse_error: `count` elements of `size` bytes overflow a size_t.
[[noreturn]] void array_too_large(std::size_t count, std::size_t size);
// Frees an allocation of the calling rank's segment.
void segment_free(int rank, std::uintptr_t tagged, const char* what);
// The plain address of [addr, addr + bytes) in rank's segment if this rank can address it and the
// access is good (see above); throws rill::misuse_error naming `what` and the fault otherwise.
void* segment_address(int rank, std::uintptr_t tagged, std::size_t bytes, const char* what);
bool segment_addressable(int rank);
int calling_rank(const char* what);
}  // namespace detail

template <class T>
class global_ptr {
  static_assert(std::is_trivially_copyable_v<std::remove_const_t<T>>,
                "rill::global_ptr: the element type must be trivially copyable (its bytes travel between ranks)");

 public:
  using element_type = T;

  global_ptr() = default;
  global_ptr(std::nullptr_t) {}
  // From the owner's rank and a plain address in its segment (checked when used; untagged).
  global_ptr(int rank, T* address) : rank_(rank), addr_(reinterpret_cast<std::uintptr_t>(address)) {}
  // The same, with the generation tag of the allocation it points into (what rill's allocators
  // make).
  global_ptr(int rank, T* address, std::uint8_t tag)
      : rank_(rank), tag_(tag), addr_(reinterpret_cast<std::uintptr_t>(address)) {}
  // global_ptr<T> converts to global_ptr<const T>.
  template <class U>
  requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>) global_ptr(const global_ptr<U>& p)
      : rank_(p.where()), tag_(p.tag()), addr_(p.raw_address()) {}

  int where() const { return rank_; }
  // The address in the owner's address space.
  std::uintptr_t raw_address() const { return addr_; }
  // The generation tag of its allocation; 0: untagged.
  std::uint8_t tag() const { return tag_; }
  // The address and the tag in one word, as the runtime's checks take them.
  std::uintptr_t tagged_address() const { return detail::with_tag(addr_, tag_); }
  bool is_null() const { return addr_ == 0; }
  explicit operator bool() const { return addr_ != 0; }

  bool is_local() const { return !is_null() && detail::segment_addressable(rank_); }
  // The plain pointer to `count` elements from here (checked; see above).
  T* local(std::size_t count = 1) const {
    if (is_null()) throw misuse_error("rill::global_ptr::local: a null global pointer");
    return static_cast<T*>(
        detail::segment_address(rank_, tagged_address(), count * sizeof(T), "rill::global_ptr::local"));
  }

  global_ptr& operator+=(std::ptrdiff_t n) {
    addr_ += static_cast<std::uintptr_t>(n * static_cast<std::ptrdiff_t>(sizeof(T)));
    return *this;
  }
  global_ptr& operator-=(std::ptrdiff_t n) { return *this += -n; }
  global_ptr& operator++() { return *this += 1; }
  global_ptr& operator--() { return *this -= 1; }
  friend global_ptr operator+(global_ptr p, std::ptrdiff_t n) { return p += n; }
  friend global_ptr operator+(std::ptrdiff_t n, global_ptr p) { return p += n; }
  friend global_ptr operator-(global_ptr p, std::ptrdiff_t n) { return p -= n; }
  // Elements between two pointers into the same rank's memory.
  friend std::ptrdiff_t operator-(const global_ptr& a, const global_ptr& b) {
    if (a.rank_ != b.rank_) throw misuse_error("rill::global_ptr: subtracting pointers to different ranks");
    return (static_cast<std::ptrdiff_t>(a.addr_) - static_cast<std::ptrdiff_t>(b.addr_)) /
           static_cast<std::ptrdiff_t>(sizeof(T));
  }
  friend bool operator==(const global_ptr& a, const global_ptr& b) {
    return a.addr_ == b.addr_ && (a.addr_ == 0 || a.rank_ == b.rank_);
  }
  // Ordered by rank, then address.
  friend bool operator<(const global_ptr& a, const global_ptr& b) {
    return a.rank_ != b.rank_ ? a.rank_ < b.rank_ : a.addr_ < b.addr_;
  }

 private:
  int rank_ = -1;
  std::uint8_t tag_ = 0;
  std::uintptr_t addr_ = 0;
};

// `count` value-initialised elements in the calling rank's segment.
template <class T>
global_ptr<T> new_array(std::size_t count) {
  const int me = detail::calling_rank("rill::new_array");
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) detail::array_too_large(count, sizeof(T));
  const std::uintptr_t at = detail::segment_allocate(count * sizeof(T), alignof(T), "rill::new_array");
  T* first = reinterpret_cast<T*>(detail::untagged(at));
  for (std::size_t i = 0; i < count; ++i) ::new (static_cast<void*>(first + i)) T();
  return global_ptr<T>(me, first, detail::tag_of(at));
}

// One element constructed from args in the calling rank's segment.
template <class T, class... Args>
global_ptr<T> new_(Args&&... args) {
  const int me = detail::calling_rank("rill::new_");
  const std::uintptr_t at = detail::segment_allocate(sizeof(T), alignof(T), "rill::new_");
  void* p = reinterpret_cast<void*>(detail::untagged(at));
  return global_ptr<T>(me, ::new (p) T(std::forward<Args>(args)...), detail::tag_of(at));
}

// Frees what new_array or new_ allocated; on the rank that allocated it. rill::misuse_error
// elsewhere, and for a pointer that is not a live allocation (freed already -- even if its place
// was allocated again since -- or into one).
template <class T>
void delete_array(global_ptr<T> p) {
  if (!p.is_null()) detail::segment_free(p.where(), p.tagged_address(), "rill::delete_array");
}
template <class T>
void delete_(global_ptr<T> p) {
  if (!p.is_null()) detail::segment_free(p.where(), p.tagged_address(), "rill::delete_");
}

}  // namespace rill
