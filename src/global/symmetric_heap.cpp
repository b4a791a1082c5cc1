#include "global/symmetric_heap.hpp"

#include <iterator>

namespace rill::detail {

namespace {
constexpr std::uint64_t line = 64;
std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }
}  // namespace

symmetric_heap::symmetric_heap(std::uint64_t bytes) : bytes_(bytes) {
  if (bytes > 0) free_.emplace(0, bytes);
}

std::optional<symmetric_heap::placed> symmetric_heap::allocate(std::uint64_t bytes, std::uint64_t align) {
  bytes = round_up(bytes == 0 ? 1 : bytes, line);
  align = align < line ? line : align;
  std::lock_guard<std::mutex> hold(m_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {  // first fit
    const std::uint64_t start = it->first, end = it->first + it->second;
    const std::uint64_t at = round_up(start, align);
    if (at > end || end - at < bytes) continue;
    free_.erase(it);
    if (at > start) free_.emplace(start, at - start);
    if (at + bytes < end) free_.emplace(at + bytes, end - (at + bytes));
    const std::uint8_t tag = tags_.next();
    live_.emplace(at, live_range{bytes, tag});
    return placed{at, tag};
  }
  return std::nullopt;
}

std::optional<std::uint64_t> symmetric_heap::retire(std::uint64_t offset, std::uint8_t tag) {
  std::lock_guard<std::mutex> hold(m_);
  const auto it = live_.find(offset);
  if (it == live_.end() || it->second.tag != tag) return std::nullopt;
  const std::uint64_t bytes = it->second.length;
  live_.erase(it);
  return bytes;
}

void symmetric_heap::recycle(std::uint64_t offset, std::uint64_t bytes) {
  std::lock_guard<std::mutex> hold(m_);
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + bytes == next->first) {
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += bytes;
      return;
    }
  }
  free_.emplace(offset, bytes);
}

std::uint64_t symmetric_heap::free_bytes() const {
  std::lock_guard<std::mutex> hold(m_);
  std::uint64_t total = 0;
  for (const auto& [offset, bytes] : free_) total += bytes;
  return total;
}

}  // namespace rill::detail
