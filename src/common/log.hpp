// Rill's logger (spdlog) and fatal errors.
#pragma once

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <string>

namespace rill::detail {

// The process-wide logger; its level comes from --rill:log. Messages carry the rank.
spdlog::logger& log();
void set_log_level(const std::string& level);

// Prints "rill: fatal: <message>" on stderr and ends the whole program with exit_fatal
// (MPI_Abort under MPI, so that no rank is left hanging).
[[noreturn]] void fatal_message(const std::string& message);

template <class... A>
[[noreturn]] void fatal(fmt::format_string<A...> f, A&&... a) {
  fatal_message(fmt::format(f, std::forward<A>(a)...));
}

// Set by the MPI transport while MPI is active, so fatal errors abort every process.
void set_fatal_abort_hook(void (*hook)(int code));

}  // namespace rill::detail
