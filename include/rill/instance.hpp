// Physical instances: the data of an index space's points and a field space's fields, in one
// memory of one rank (Realm §7). Creation and destruction are deferred like every other operation.
//
//   auto [grid, ready] = rill::instance::create(rill::memory::system(1), rill::rect<2>{{0, 0}, {99, 99}},
//                                               rill::field_space{voltage, charge}, rill::layout::soa());
//   rill::proc(1).spawn(rill::after(ready), [grid] {            // on the instance's rank
//     rill::accessor<double, 2> v(grid, voltage);
//     v[{3, 4}] = 1.5;                                          // a plain store
//   });
//   grid.destroy(last_use);                                     // once last_use has triggered
//
// There is no virtual memory: an instance is made only if its memory has room, otherwise its ready
// event is poisoned with an error naming the memory, its capacity and what was asked. Its storage
// covers the bounding rect of its index space, laid out as the layout says; its contents are
// undefined until written, filled or copied. An instance handle is a value valid on every rank;
// its data is reached through accessors on the rank whose memory holds it, and moved with copies
// (rill/copy.hpp). Using a destroyed instance is an error that names it. See docs/data.md.
#pragma once
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rill/event.hpp"
#include "rill/field_space.hpp"
#include "rill/index_space.hpp"
#include "rill/layout.hpp"
#include "rill/machine.hpp"

namespace rill {

struct created_instance;
namespace detail {
struct instance_maker;
}

class instance {
 public:
  constexpr instance() = default;

  // An instance of `space` with `fields` in memory m, made once `after` has triggered; returns its
  // handle at once and the event that triggers when it exists (poisoned if m has no room).
  template <int N>
  static created_instance create(memory m, const index_space<N>& space, const field_space& fields,
                                 const layout& l = layout::soa(), event after = event::none());
  template <int N>
  static created_instance create(memory m, const rect<N>& space, const field_space& fields,
                                 const layout& l = layout::soa(), event after = event::none());

  // Frees the instance once `after` has triggered; the event triggers when it is gone.
  event destroy(event after = event::none()) const;

  memory location() const { return memory_; }
  int owner() const { return memory_.owner(); }
  int dimensions() const { return dims_; }
  bool exists() const { return id_ != 0; }
  // Unique in the run: the creating rank and a sequence number.
  std::uint64_t id() const { return id_; }

  friend bool operator==(const instance&, const instance&) = default;

 private:
  friend struct detail::instance_maker;  // (attach_instance, rill/external.hpp)
  constexpr instance(memory m, int dims, std::uint64_t id) : memory_(m), dims_(dims), id_(id) {}
  static created_instance create_padded(memory m, int dims, const index_space<3>& space, const field_space& fields,
                                        const layout& l, event after);
  memory memory_;
  std::int32_t dims_ = 0;
  std::uint64_t id_ = 0;
};
static_assert(std::is_trivially_copyable_v<instance> && sizeof(instance) == 24);

struct created_instance {
  instance inst;
  event ready;
};

template <int N>
created_instance instance::create(memory m, const index_space<N>& space, const field_space& fields, const layout& l,
                                  event after) {
  return create_padded(m, N, padded_to_3d(space), fields, l, after);
}

template <int N>
created_instance instance::create(memory m, const rect<N>& space, const field_space& fields, const layout& l,
                                  event after) {
  return create(m, index_space<N>(space), fields, l, after);
}

namespace detail {
// Where a field of an instance lives on this rank: the address of the point `lo` and the bytes
// between neighbours in each dimension. Throws rill::misuse_error when the instance is not in a
// memory of the calling rank, is destroyed or not made yet, has other dimensions, or has no such
// field of `bytes` bytes.
struct field_address {
  std::byte* at_lo;
  std::array<std::ptrdiff_t, 3> strides;
  rect<3> bounds;
};
field_address locate_field(instance inst, field_id f, int dims, std::size_t bytes, const char* what);
[[noreturn]] void accessor_out_of_bounds(const point<3>& p, int dims, const rect<3>& bounds);
}  // namespace detail

// Loads and stores of one field of an instance, on the instance's rank: an address computation
// (base + the strides times the point) compiled to plain loads and stores. Builds without NDEBUG
// check every point against the instance's bounds.
template <class T, int N>
class accessor {
  static_assert(std::is_trivially_copyable_v<T>, "rill::accessor<T, N>: fields hold trivially copyable values");

 public:
  accessor(instance inst, field<T> f) : accessor(detail::locate_field(inst, f.id, N, sizeof(T), "rill::accessor")) {}
  // An untyped field of sizeof(T) bytes.
  accessor(instance inst, field_id f) : accessor(detail::locate_field(inst, f, N, sizeof(T), "rill::accessor")) {}

  T& operator[](const point<N>& p) const { return *ptr(p); }
  T* ptr(const point<N>& p) const {
#ifndef NDEBUG
    if (!bounds_.contains(p)) out_of_bounds(p);
#endif
    std::uintptr_t at = base_;
    for (int d = 0; d < N; ++d) at += static_cast<std::uintptr_t>(p[d] * strides_[static_cast<std::size_t>(d)]);
    return reinterpret_cast<T*>(at);
  }
  const rect<N>& bounds() const { return bounds_; }
  // Bytes between neighbouring points in dimension d.
  std::ptrdiff_t stride(int d) const { return strides_[static_cast<std::size_t>(d)]; }

 private:
  explicit accessor(const detail::field_address& a) {
    // base_ is where point {0, ..., 0} would be (perhaps outside the allocation: only ever used
    // with a point added, as integers), so that ptr() is one multiply-add per dimension.
    std::uintptr_t base = reinterpret_cast<std::uintptr_t>(a.at_lo);
    for (int d = 0; d < N; ++d) {
      strides_[static_cast<std::size_t>(d)] = a.strides[static_cast<std::size_t>(d)];
      base -= static_cast<std::uintptr_t>(a.bounds.lo[d] * a.strides[static_cast<std::size_t>(d)]);
      bounds_.lo[d] = a.bounds.lo[d];
      bounds_.hi[d] = a.bounds.hi[d];
    }
    base_ = base;
  }
  [[noreturn]] void out_of_bounds(const point<N>& p) const {
    point<3> q{0, 0, 0};
    rect<3> b{point<3>{0, 0, 0}, point<3>{0, 0, 0}};
    for (int d = 0; d < N; ++d) q[d] = p[d], b.lo[d] = bounds_.lo[d], b.hi[d] = bounds_.hi[d];
    detail::accessor_out_of_bounds(q, N, b);
  }

  std::uintptr_t base_ = 0;
  std::array<std::ptrdiff_t, N> strides_{};
  rect<N> bounds_;
};

}  // namespace rill
