// Errors Rill reports to programs, and the process exit codes it uses.
#pragma once

#include <stdexcept>
#include <string>

namespace rill {

// Exit code of a program stopped by a usage error (unknown or malformed --rill: flag).
inline constexpr int exit_usage = 2;
// Exit code of a program stopped by a fatal runtime error (corrupt message, build mismatch, ...).
inline constexpr int exit_fatal = 3;

// Thrown by rill::runtime's constructor for a bad --rill: flag or RILL_ variable; the runtime's
// own entry points catch it, print it and exit with exit_usage.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when an operation is used where it cannot run, e.g. am::send outside any rank.
class misuse_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace rill
