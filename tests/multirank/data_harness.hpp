// What the data layer's tests share: the fields of their instances, the value each point gets,
// and how they read errors.
#pragma once

#include <cstdint>
#include <string>

#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/field_space.hpp"
#include "rill/index_space.hpp"

namespace rill_test::data {

inline constexpr rill::field<std::int64_t> key{1};
inline constexpr rill::field<double> weight{2};
inline constexpr rill::field<std::uint8_t> flag{3};
inline const rill::field_space fields{key, weight, flag};

// The value of point p in the tests (salted, so that two writes of one point differ).
template <int N>
std::int64_t code_of(const rill::point<N>& p, std::int64_t salt = 0) {
  std::int64_t c = 17 + salt;
  for (int d = 0; d < N; ++d) c = c * 1009 + p[d];
  return c;
}

// What f() threw as rill::misuse_error ("no error" if it returned).
template <class F>
std::string misuse_of(F f) {
  try {
    f();
    return "no error";
  } catch (const rill::misuse_error& e) {
    return e.what();
  }
}

// What waiting for e threw as rill::poisoned_error ("no error" if it triggered).
inline std::string poison_of(rill::event e) {
  try {
    e.wait();
    return "no error";
  } catch (const rill::poisoned_error& err) {
    return err.what();
  }
}

inline bool says(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace rill_test::data
