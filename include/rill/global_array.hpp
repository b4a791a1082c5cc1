// The global heap (Grappa §2.3, HPX-5 §III): arrays spread over the ranks by a distribution.
//
//   auto table = rill::global_alloc<std::uint64_t>(1 << 20, rill::dist::cyclic());  // any rank
//   rill::atomics::add(table[hash(k) % table.size()], 1).wait();   // table[i]: a global_ptr
//   rill::for_each(table, [](std::uint64_t i, std::uint64_t& x) { x = i; }).wait();  // at the homes
//   rill::global_free(table);
//
// A global_array is a handle (trivially copyable, 40 bytes): copy it, capture it in tasks, send
// it to other ranks; every copy names the same elements. table[i] is the element's global pointer
// -- rank and address, computed from the index without messages -- so everything that takes a
// global_ptr (rput/rget, atomics, delegates, async_copy, local()) takes an element. Elements
// start as zero bytes, hence the element type must be trivially copyable and trivially
// default-constructible.
//
// Where the elements live: dist::local on one rank's own heap; the other distributions in the
// global heap, the last --rill:global-heap bytes of every rank's segment. An allocation there takes
// the same offsets in every rank's part (rank 0 hands them out: one round trip), and a rank's
// elements are packed from that offset in index order -- except under dist::user, where an element
// keeps its index's place and only the pages of blocks a rank holds are ever touched there.
//
// global_alloc and global_free are called from a task of any rank and wait (yielding its fiber);
// global_free zeroes the elements where they live before their place can be reused. An array's
// memory carries its generation tag (rill/detail/tagged_address.hpp), and so do its handle and
// the element pointers it makes: freeing an array twice, and using a handle after its array was
// freed -- an element's access, local(), for_each -- are errors (rill::misuse_error) naming the
// cause, even once its place holds another array.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rill/detail/address_map.hpp"
#include "rill/detail/handler_table.hpp"
#include "rill/distribution.hpp"
#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/finish.hpp"
#include "rill/forasync.hpp"
#include "rill/future.hpp"
#include "rill/global_ptr.hpp"
#include "rill/proc.hpp"
#include "rill/rank.hpp"

namespace rill {

namespace detail {

// Where an array's elements are: the part of the machinery that needs no element type.
struct array_layout {
  std::uint64_t n = 0;      // elements
  std::uint64_t block = 0;  // elements per block: cyclic, user; per rank: blocked; n: local
  std::uint64_t where = 0;  // local: the address on `rank`; else the offset in each rank's global-heap part
  std::intptr_t user = 0;   // user: the function's code offset
  std::int32_t rank = -1;   // local: the home
  distribution::kind kind = distribution::kind::local;
  std::int8_t shift = -1;  // log2(block) when block is a power of two, else -1
  std::uint8_t tag = 0;    // the generation of its memory (rill/detail/tagged_address.hpp)

  std::uint64_t blocks() const { return block == 0 ? 0 : (n + block - 1) / block; }

  struct place {
    int rank;
    std::uint64_t index;  // in that rank's part
  };
  place locate(std::uint64_t i, int ranks) const {
    // Block sizes are powers of two more often than not (and so is the default): no division.
    const std::uint64_t b = shift >= 0 ? i >> shift : i / block;
    const std::uint64_t within = i - b * block;
    switch (kind) {
      case distribution::kind::local: return {rank, i};
      case distribution::kind::blocked: return {static_cast<int>(b), within};
      case distribution::kind::cyclic: {
        const auto r = static_cast<std::uint64_t>(ranks);
        return {static_cast<int>(b % r), (b / r) * block + within};
      }
      case distribution::kind::user: return {home_of_block(b, ranks), i};
    }
    return {-1, 0};
  }
  int home_of_block(std::uint64_t b, int ranks) const {
    if (kind != distribution::kind::user) return locate(b * block, ranks).rank;
    return reinterpret_cast<distribution::user_fn>(const_cast<void*>(code_address(user)))(b, blocks(), ranks);
  }

  // A rank's elements come in runs of consecutive indices: `slots(r)` of them (some may be
  // empty under dist::user), run j being indices [first, first + count) at index `index` of
  // the rank's part.
  struct run {
    std::uint64_t first, count, index;
  };
  std::uint64_t slots(int r, int ranks) const {
    switch (kind) {
      case distribution::kind::local: return r == rank && n > 0 ? 1 : 0;
      case distribution::kind::blocked: return static_cast<std::uint64_t>(r) * block < n ? 1 : 0;
      case distribution::kind::cyclic: {
        const std::uint64_t b = blocks(), R = static_cast<std::uint64_t>(ranks), rr = static_cast<std::uint64_t>(r);
        return b / R + (rr < b % R ? 1 : 0);
      }
      case distribution::kind::user: return blocks();
    }
    return 0;
  }
  run slot(int r, int ranks, std::uint64_t j) const {
    const auto rr = static_cast<std::uint64_t>(r);
    switch (kind) {
      case distribution::kind::local: return {0, n, 0};
      case distribution::kind::blocked: return {rr * block, std::min(block, n - rr * block), 0};
      case distribution::kind::cyclic: {
        const std::uint64_t first = (j * static_cast<std::uint64_t>(ranks) + rr) * block;
        return {first, std::min(block, n - first), j * block};
      }
      case distribution::kind::user:
        return {j * block, home_of_block(j, ranks) == r ? std::min(block, n - j * block) : 0, j * block};
    }
    return {0, 0, 0};
  }
};

// Fills in a layout for `n` elements of `elem` bytes; rill::misuse_error for a bad distribution.
array_layout plan_layout(std::uint64_t n, std::size_t elem, const distribution& d);
// Allocates the layout's memory (zeroed) and sets its `where` / `rank`; waits.
void allocate_layout(array_layout& l, std::size_t elem, std::size_t align);
// Zeroes and frees the layout's memory everywhere; waits.
void free_layout(const array_layout& l, std::size_t elem);
// The address, in its owner's address space, of index `index` of rank `r`'s part. Inline: indexing
// is on the hot path of every operation on an element (GUPS: one per update).
inline std::uintptr_t part_address(const array_layout& l, int r, std::uint64_t index, std::size_t elem) {
  const std::uintptr_t base = l.kind == distribution::kind::local
                                  ? l.where
                                  : address_map_here("rill::global_array").global_heap_bases[r] + l.where;
  return base + index * elem;
}
// The words of a failure of for_each on the calling rank.
std::string for_each_failure(const std::exception& e);
// An event that triggers once every future is ready: poisoned with the first failure's words,
// if one is not empty.
event all_ended(std::vector<future<std::string>> failures);
// Throws misuse_error, naming `what`, when the calling rank's elements of the layout are not the
// live array's: it was freed (and its place perhaps allocated again).
void check_live_here(const array_layout& l, std::size_t elem, const char* what);
// Throws the misuse_error of an index past the end (out of line: indexing is a hot path).
[[noreturn]] void index_out_of_range(std::uint64_t i, std::uint64_t n);

}  // namespace detail

template <class T>
class global_array {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>,
                "rill::global_array: elements start as zero bytes, so T must be trivially copyable and trivially "
                "default-constructible");

 public:
  using value_type = T;

  global_array() = default;
  explicit global_array(const detail::array_layout& l) : l_(l) {}

  std::uint64_t size() const { return l_.n; }
  bool empty() const { return l_.n == 0; }
  distribution::kind kind() const { return l_.kind; }
  // Elements per block (cyclic, user), per rank (blocked), or all of them (local).
  std::uint64_t block_elements() const { return l_.block; }

  // The element's global pointer; rill::misuse_error when i is out of range.
  global_ptr<T> operator[](std::uint64_t i) const {
    if (i >= l_.n) [[unlikely]]
      detail::index_out_of_range(i, l_.n);
    const auto p = l_.locate(i, detail::address_map_here("rill::global_array").ranks);
    return global_ptr<T>(p.rank, reinterpret_cast<T*>(detail::part_address(l_, p.rank, p.index, sizeof(T))), l_.tag);
  }
  // The rank that holds element i.
  int home(std::uint64_t i) const { return (*this)[i].where(); }
  // How many elements rank r holds.
  std::uint64_t count_at(int r) const {
    const int ranks = rank_n();
    std::uint64_t c = 0;
    for (std::uint64_t j = 0, s = l_.slots(r, ranks); j < s; ++j) c += l_.slot(r, ranks, j).count;
    return c;
  }

  // Runs fn(i, element) for each element held by the calling rank, on its workers; returns when all
  // have run. What the per-rank tasks of for_each and forasync run.
  template <class F>
  void for_each_here(const F& fn) const {
    const int me = rank_me(), ranks = rank_n();
    const std::uint64_t runs = l_.slots(me, ranks);
    if (runs == 0) return;
    detail::check_live_here(l_, sizeof(T), "rill::for_each");
    T* part = reinterpret_cast<T*>(detail::part_address(l_, me, 0, sizeof(T)));
    if (runs == 1) {  // local, blocked: one run, cut into tiles
      const auto r = l_.slot(me, ranks, 0);
      finish_forasync(0, static_cast<std::int64_t>(r.count), [&](std::int64_t k) {
        const auto u = static_cast<std::uint64_t>(k);
        fn(r.first + u, part[r.index + u]);
      });
      return;
    }
    finish_forasync(0, static_cast<std::int64_t>(runs), [&](std::int64_t j) {
      const auto r = l_.slot(me, ranks, static_cast<std::uint64_t>(j));
      for (std::uint64_t u = 0; u < r.count; ++u) fn(r.first + u, part[r.index + u]);
    });
  }

  const detail::array_layout& layout() const { return l_; }

 private:
  detail::array_layout l_;
};

// `n` zeroed elements spread as `d` says; from a task of any rank. Waits. rill::misuse_error when
// the heap has no room or d is malformed (from another rank's allocator: a poisoned_error saying so).
template <class T>
global_array<T> global_alloc(std::uint64_t n, const distribution& d = dist::cyclic()) {
  detail::array_layout l = detail::plan_layout(n, sizeof(T), d);
  detail::allocate_layout(l, sizeof(T), std::max<std::size_t>(alignof(T), 8));
  return global_array<T>(l);
}

// Frees an array's elements everywhere (after zeroing them); waits. The handle's copies must not
// be used afterwards.
template <class T>
void global_free(const global_array<T>& a) {
  detail::free_layout(a.layout(), sizeof(T));
}

// Runs fn(i, element) at every element's home -- a task per rank that holds elements, its
// elements cut into tiles over that rank's workers -- and returns the event that triggers when
// all have run: poisoned if fn threw somewhere (or the array was freed), but only once every
// rank's task has ended, so that the array may be freed then. fn is called concurrently, as
// const, and must be shippable (a function, or a lambda whose captures are trivially copyable).
template <class T, class F>
event for_each(const global_array<T>& a, F fn) {
  static_assert(detail::shippable<F>,
                "rill::for_each: fn must be a function or a lambda whose captures are trivially copyable");
  std::vector<future<std::string>> ran;
  for (int r = 0, ranks = rank_n(); r < ranks; ++r)
    if (a.layout().slots(r, ranks) > 0)
      ran.push_back(rpc(r, [a, fn] {
        try {
          a.for_each_here(fn);
          return std::string();
        } catch (const std::exception& e) {
          return detail::for_each_failure(e);
        }
      }));
  return detail::all_ended(std::move(ran));
}

// The same as tasks of the calling task's finish scope (HabaneroUPC++'s forasync over a
// distributed array): returns at once; the scope's end waits for them.
template <class T, class F>
void forasync(const global_array<T>& a, F fn) {
  static_assert(detail::shippable<F>,
                "rill::forasync: fn must be a function or a lambda whose captures are trivially copyable");
  for (int r = 0, ranks = rank_n(); r < ranks; ++r)
    if (a.layout().slots(r, ranks) > 0) async_at(r, [a, fn] { a.for_each_here(fn); });
}

}  // namespace rill
