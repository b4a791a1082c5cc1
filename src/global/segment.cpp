#include "global/segment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "rill/error.hpp"

namespace rill::detail {

namespace {
constexpr std::size_t granule = segment_layout::granule;
std::size_t whole_granules(std::size_t bytes) {
  return (std::max<std::size_t>(bytes, 1) + granule - 1) / granule * granule;
}

// The words of checked_address's misuse_error for fault f.
std::string fault_text(const segment_view& s, range_fault f, int rank, std::uintptr_t tagged, std::size_t bytes,
                       std::size_t align, const char* what) {
  const std::uintptr_t addr = untagged(tagged);
  switch (f) {
    case range_fault::none: break;
    case range_fault::outside:
      return fmt::format("{}: [0x{:x}, +{} bytes) is outside rank {}'s registered segment", what, addr, bytes, rank);
    case range_fault::misaligned:
      return fmt::format("{}: 0x{:x} on rank {} is not aligned to {} bytes", what, addr, rank, align);
    case range_fault::freed: {
      const std::uint8_t now = s.tag_at(addr);
      return fmt::format(
          "{}: 0x{:x} on rank {} is not in the allocation this global pointer was made for: that allocation was "
          "freed{} (use after free: generation {} in the pointer, {} in memory), or the pointer was moved out of it",
          what, addr, rank, now == 0 ? "" : " and its memory allocated again", tag_of(tagged), now);
    }
    case range_fault::past_end:
      return fmt::format("{}: [0x{:x}, +{} bytes) on rank {} runs past the end of its allocation", what, addr, bytes,
                         rank);
  }
  return fmt::format("{}: [0x{:x}, +{} bytes) on rank {} is good", what, addr, bytes, rank);
}

}  // namespace

bool segment_view::tagged_as(std::size_t first, std::size_t last, std::uint8_t tag) const {
  const std::uint8_t* t = tags();
  return std::all_of(t + first, t + last + 1, [tag](std::uint8_t x) { return x == tag; });
}

segment::segment(std::byte* memory, std::size_t bytes, std::size_t global_heap_bytes)
    : base_(memory),
      size_(bytes),
      heap_(boost::interprocess::create_only, memory + segment_layout::heap_start(bytes),
            segment_layout::own_heap_bytes(bytes, global_heap_bytes)) {
  ::new (static_cast<void*>(memory)) segment_header();
}

segment::~segment() {
  heap_ = boost::interprocess::managed_external_buffer();  // before its memory goes
}

segment::allocation segment::allocate(std::size_t bytes, std::size_t align) {
  // Whole granules, so that no granule holds two allocations with two tags.
  bytes = whole_granules(bytes);
  std::lock_guard<std::mutex> hold(lock_);
  void* p = heap_.allocate_aligned(bytes, static_cast<unsigned>(std::max(align, granule)), std::nothrow);
  if (!p) return {nullptr, 0};
  const std::uint8_t tag = tags_.next();
  live_.emplace(p, live_allocation{bytes, tag});
  write_tags(reinterpret_cast<std::uintptr_t>(p), bytes, tag);
  return {p, tag};
}

bool segment::deallocate(void* p, std::uint8_t tag) {
  std::lock_guard<std::mutex> hold(lock_);
  const auto it = live_.find(p);
  if (it == live_.end() || (tag != 0 && it->second.tag != tag)) return false;
  write_tags(reinterpret_cast<std::uintptr_t>(p), it->second.bytes, 0);
  live_.erase(it);
  heap_.deallocate(p);
  return true;
}

void segment::set_tags(std::uintptr_t addr, std::size_t bytes, std::uint8_t tag) {
  std::lock_guard<std::mutex> hold(lock_);
  write_tags(addr, bytes, tag);
}

void segment::write_tags(std::uintptr_t addr, std::size_t bytes, std::uint8_t tag) {
  if (bytes == 0) return;
  const segment_view v = view();
  const std::size_t first = v.granule_of(addr), last = v.granule_of(addr + bytes - 1);
  auto* tags = reinterpret_cast<std::uint8_t*>(base_ + segment_layout::lock_bytes);
  auto* summary = tags + segment_layout::tag_bytes(size_);
  std::memset(tags + first, tag, last - first + 1);
  // Pages inside the range carry `tag` whole; the two at its ends, whatever their granules agree on.
  constexpr std::size_t page = segment_layout::summary_page;
  const std::size_t granules = segment_layout::tag_bytes(size_);
  const auto summarise = [&](std::size_t p) {
    const std::uint8_t* t = tags + p * page;
    const bool whole =
        std::all_of(t, t + std::min(page, granules - p * page), [t](std::uint8_t x) { return x == t[0]; });
    summary[p] = whole ? t[0] : 0;
  };
  const std::size_t first_page = first / page, last_page = last / page;
  summarise(first_page);
  if (last_page > first_page + 1) std::memset(summary + first_page + 1, tag, last_page - first_page - 1);
  if (last_page != first_page) summarise(last_page);
}

void* checked_address(const segment_view& s, int rank, std::uintptr_t tagged, std::size_t bytes, std::size_t align,
                      const char* what) {
  const range_fault f = s.check(tagged, bytes, align);
  if (f != range_fault::none) throw misuse_error(fault_text(s, f, rank, tagged, bytes, align, what));
  return s.translate(tagged);
}

}  // namespace rill::detail
