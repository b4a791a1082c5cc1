// A C++ type's name as a user wrote it (std::vector<long>), from the mangled name typeid gives.
#pragma once

#include <string>

namespace rill::detail {

// `mangled` itself when it does not demangle.
std::string demangled(const char* mangled);

}  // namespace rill::detail
