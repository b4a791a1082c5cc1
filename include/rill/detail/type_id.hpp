// A fingerprint of a C++ type that is the same on every rank of one build (the binary is the
// same everywhere): what barriers check values against and launches tell reduction operators by.
#pragma once
#include <cstdint>
#include <typeinfo>

namespace rill::detail {

template <class T>
std::uint64_t value_type_id() {
  std::uint64_t h = 1469598103934665603ull;
  for (const char* p = typeid(T).name(); *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  return h ^ sizeof(T);
}

}  // namespace rill::detail
