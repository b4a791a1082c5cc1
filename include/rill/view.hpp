// rill::view<T>: a read-only run of trivially copyable elements that travels as an argument of an
// active message and is not copied into a container at the receiver (UPC++'s view).
//
//   std::vector<double> samples = ...;
//   rill::am::send(1, [](rill::view<double> v) { consume(v.data(), v.size()); }, rill::view(samples));
//
// At the sender a view points at the caller's elements, which are copied once, into the message.
// In the handler the view points into the received buffer, which stays alive as long as a copy of
// the view does (also while the handler waits): no container is built and nothing is copied again.
// Elements that arrive misaligned for T (possible for small, aggregated messages) are copied to
// aligned storage first; byte-like elements never are, and large payloads arrive aligned.
// A task that runs on the calling rank without travelling (a local spawn or async) gets the view
// itself: its elements must then outlive the task.
#pragma once

#include <cstddef>
#include <memory>
#include <ranges>
#include <span>
#include <type_traits>

namespace rill {

template <class T>
class view {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_same_v<T, bool> && !std::is_const_v<T>,
                "rill::view<T> carries trivially copyable, non-const element types (not bool)");

 public:
  using value_type = T;
  using const_iterator = const T*;

  view() = default;
  view(const T* data, std::size_t size) : data_(data), size_(size) {}
  template <std::ranges::contiguous_range R>
  requires std::is_same_v<std::remove_cv_t<std::ranges::range_value_t<R>>, T> view(const R& elements)
      : view(std::ranges::data(elements), std::ranges::size(elements)) {}

  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::span<const T> span() const { return {data_, size_}; }

  // For the deserializer: elements that live in `keep` (the received buffer, or a copy).
  static view received(const T* data, std::size_t size, std::shared_ptr<const void> keep) {
    view v(data, size);
    v.keep_ = std::move(keep);
    return v;
  }

 private:
  const T* data_ = nullptr;
  std::size_t size_ = 0;
  std::shared_ptr<const void> keep_;  // at a receiver: what the elements live in
};

template <std::ranges::contiguous_range R>
view(const R&) -> view<std::remove_cv_t<std::ranges::range_value_t<R>>>;

namespace detail {
template <class T>
struct is_view : std::false_type {};
template <class T>
struct is_view<view<T>> : std::true_type {};
}  // namespace detail

}  // namespace rill
