// Lists of a few entries most often (a launch's requirements, a merge's pending inputs): kept
// inline, on the heap only when they grow past N.
#pragma once
#include <boost/container/small_vector.hpp>

#include <cstddef>
#include <span>

namespace rill::detail {

template <class T, std::size_t N = 4>
using small_vector = boost::container::small_vector<T, N>;

// (Boost 1.74's iterators are not contiguous ones to std::span.)
template <class T, std::size_t N>
std::span<const T> as_span(const small_vector<T, N>& v) {
  return {v.data(), v.size()};
}

}  // namespace rill::detail
