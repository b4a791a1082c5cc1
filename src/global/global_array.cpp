// The non-template half of rill/global_array.hpp: planning a layout, allocating and freeing it
// (local arrays on their home's own heap, the others in the global heap that rank 0 manages).
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <limits>

#include "global/global_module.hpp"
#include "rill/future.hpp"
#include "rill/global_array.hpp"
#include "scheduler/worker.hpp"

namespace rill::detail {

namespace {

using kind = distribution::kind;

// Elements per block for cyclic and user distributions.
std::uint64_t block_elements(std::size_t elem, const distribution& d, const char* name) {
  if (d.block_bytes() == 0) return std::max<std::uint64_t>(1, 64 / elem);
  if (d.block_bytes() % elem != 0)
    throw misuse_error(
        fmt::format("rill::global_alloc: a {} block of {} bytes is not a whole number of {}-byte elements", name,
                    d.block_bytes(), elem));
  return d.block_bytes() / elem;
}

// The bytes each rank's part of the global heap holds for the layout.
std::uint64_t part_bytes(const array_layout& l, std::size_t elem, int ranks) {
  const auto R = static_cast<std::uint64_t>(ranks);
  switch (l.kind) {
    case kind::blocked: return l.block * elem;
    case kind::cyclic: return (l.blocks() + R - 1) / R * l.block * elem;
    case kind::user: return l.n * elem;  // an element keeps its index's place
    case kind::local: break;
  }
  return l.n * elem;
}

// Runs fn(address, bytes) over the runs of the calling rank's elements of the layout.
template <class F>
void for_runs_here(const array_layout& l, std::size_t elem, const F& fn) {
  const int me = rank_me(), ranks = rank_n();
  const std::uintptr_t part = part_address(l, me, 0, elem);
  for (std::uint64_t j = 0, s = l.slots(me, ranks); j < s; ++j) {
    const auto r = l.slot(me, ranks, j);
    if (r.count > 0) fn(part + r.index * elem, r.count * elem);
  }
}

// Tags the calling rank's elements of a new array with its generation.
void tag_here(const array_layout& l, std::size_t elem) {
  segment& s = global_here("rill::global_alloc").memory_segment();
  for_runs_here(l, elem, [&](std::uintptr_t at, std::size_t bytes) { s.set_tags(at, bytes, l.tag); });
}

// Zeroes the calling rank's elements of a freed array and clears their tags.
void zero_here(const array_layout& l, std::size_t elem) {
  segment& s = global_here("rill::global_free").memory_segment();
  for_runs_here(l, elem, [&](std::uintptr_t at, std::size_t bytes) {
    std::memset(reinterpret_cast<void*>(at), 0, bytes);
    s.set_tags(at, bytes, 0);
  });
}

// Runs fn on every rank that holds elements of the layout; waits.
template <class F>
void on_holders(const array_layout& l, F fn) {
  std::vector<event> done;
  for (int k = 0, ranks = rank_n(); k < ranks; ++k)
    if (l.slots(k, ranks) > 0) done.push_back(proc(k).spawn(fn));
  merge(done).wait();
}

// A tagged address (rill/detail/tagged_address.hpp).
std::uintptr_t allocate_own(std::uint64_t bytes, std::uint64_t align) {
  const std::uintptr_t at = segment_allocate(bytes, align, "rill::global_alloc");
  std::memset(reinterpret_cast<void*>(untagged(at)), 0, bytes);  // the own heap reuses freed memory
  return at;
}

// The offset with the tag in its top byte, as a tagged address.
std::uint64_t allocate_global(std::uint64_t bytes, std::uint64_t align) {
  global_module& r = global_here("rill::global_alloc");
  const auto at = r.global_heap()->allocate(bytes, align);
  if (!at)
    throw misuse_error(
        fmt::format("rill::global_alloc: {} bytes on every rank do not fit in what is free of the {}-byte global heap "
                    "(--rill:global-heap)",
                    bytes, r.global_heap()->size()));
  return with_tag(at->offset, at->tag);
}

// On rank 0: takes the array out of use (refusing one that is not live), has every rank zero its
// elements, then makes the range reusable.
void free_global(array_layout l, std::uint64_t elem) {
  global_module& r = global_here("rill::global_free");
  const auto bytes = r.global_heap()->retire(l.where, l.tag);
  if (!bytes)
    throw misuse_error(
        fmt::format("rill::global_free: no global array of generation {} starts at offset {} of the global heap (freed "
                    "already, perhaps its place allocated again since)",
                    l.tag, l.where));
  on_holders(l, [l, elem] { zero_here(l, elem); });
  r.global_heap()->recycle(l.where, *bytes);
}

}  // namespace

array_layout plan_layout(std::uint64_t n, std::size_t elem, const distribution& d) {
  if (elem == 0 || n > std::numeric_limits<std::uint64_t>::max() / elem)
    throw misuse_error(fmt::format("rill::global_alloc: {} elements of {} bytes overflow 64 bits", n, elem));
  array_layout l;
  l.n = n;
  l.kind = d.what();
  const int ranks = rank_n();
  switch (d.what()) {
    case kind::local:
      if (d.rank() < -1 || d.rank() >= ranks)
        throw misuse_error(
            fmt::format("rill::global_alloc: dist::local({}) names no rank (there are {})", d.rank(), ranks));
      l.rank = d.rank() == -1 ? rank_me() : d.rank();
      l.block = n;
      break;
    case kind::blocked:
      l.block =
          std::max<std::uint64_t>(1, (n + static_cast<std::uint64_t>(ranks) - 1) / static_cast<std::uint64_t>(ranks));
      break;
    case kind::cyclic: l.block = block_elements(elem, d, "cyclic"); break;
    case kind::user:
      if (d.user_code() == 0) throw misuse_error("rill::global_alloc: dist::user with a null function");
      l.block = block_elements(elem, d, "user");
      l.user = d.user_code();
      for (std::uint64_t b = 0; b < l.blocks(); ++b) {
        const int home = l.home_of_block(b, ranks);
        if (home < 0 || home >= ranks)
          throw misuse_error(
              fmt::format("rill::global_alloc: the user distribution puts block {} of {} on rank {} (there are {})", b,
                          l.blocks(), home, ranks));
      }
      break;
  }
  if (std::has_single_bit(l.block)) l.shift = static_cast<std::int8_t>(std::countr_zero(l.block));
  return l;
}

void allocate_layout(array_layout& l, std::size_t elem, std::size_t align) {
  if (l.n == 0) return;
  if (l.kind == kind::local) {
    const std::uint64_t bytes = l.n * elem;
    const std::uintptr_t at =
        l.rank == rank_me() ? allocate_own(bytes, align) : rpc(l.rank, &allocate_own, bytes, align).get();
    l.where = untagged(at);
    l.tag = tag_of(at);
    return;
  }
  const std::uint64_t bytes = part_bytes(l, elem, rank_n());
  const std::uint64_t at =
      rank_me() == 0 ? allocate_global(bytes, align) : rpc(0, &allocate_global, bytes, align).get();
  l.where = untagged(at);
  l.tag = tag_of(at);
  on_holders(l, [l, elem] { tag_here(l, elem); });
}

void free_layout(const array_layout& l, std::size_t elem) {
  if (l.n == 0) return;
  if (l.kind == kind::local) {
    auto free_own = [](std::uintptr_t at) { segment_free(rank_me(), at, "rill::global_free"); };
    if (l.rank == rank_me())
      free_own(with_tag(l.where, l.tag));
    else
      rpc(l.rank, free_own, with_tag(l.where, l.tag)).get();
    return;
  }
  rpc(0, &free_global, l, std::uint64_t{elem}).get();
}

std::string for_each_failure(const std::exception& e) {
  return fmt::format("rill::for_each on rank {}: {}", rank_me(), e.what());
}

event all_ended(std::vector<future<std::string>> failures) {
  std::vector<event> ended(failures.begin(), failures.end());
  promise<void> done;
  future<void> out = done.get_future();
  run_after(
      merge(ended),
      [failures = std::move(failures), done]() mutable {
        for (auto& f : failures)
          if (std::string why = f.get(); !why.empty()) {
            done.poison(why, "rill::for_each");
            return;
          }
        done.put();
      },
      poison_into(done));
  return out;
}

void check_live_here(const array_layout& l, std::size_t elem, const char* what) {
  const global_module& r = global_here(what);
  const segment_view& s = *r.addressable_segment(r.id());
  for_runs_here(l, elem, [&](std::uintptr_t at, std::size_t bytes) {
    checked_address(s, r.id(), with_tag(at, l.tag), bytes, 1, what);
  });
}

void index_out_of_range(std::uint64_t i, std::uint64_t n) {
  throw misuse_error(fmt::format("rill::global_array: index {} is out of range (size {})", i, n));
}

}  // namespace rill::detail
