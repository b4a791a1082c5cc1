// Parsing of the --rill:* options of rill/config_options.hpp (flags and RILL_* variables), and --rill:help.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rill/config.hpp"

namespace rill::detail {

struct parsed_options {
  rill::config cfg;
  // The options a flag or variable set. The runtime chooses the others where their default
  // depends on the machine: workers (cores per rank), transport (the launcher), global-heap.
  std::set<std::string, std::less<>> given;
  bool help = false;
  std::vector<std::string> warnings;  // for the log, once it is set up

  bool was_given(std::string_view name) const { return given.contains(name); }
};

// Reads RILL_* variables, then --rill:* flags (flags win). Removes the flags it consumed from
// argv (compacting it, argc updated). Throws rill::usage_error naming the bad flag or value.
parsed_options parse_options(int& argc, char** argv);

// The options every rank must be started with the same value of (`same` in
// rill/config_options.hpp), one "--rill:NAME=VALUE" line each: start-up compares them.
std::string options_every_rank_must_share(const rill::config& c);

// The threads a rank runs, workers, data-movement channels, I/O threads and its progress thread:
// per-thread state is sized by it.
inline int threads_per_rank(const rill::config& c) {
  return c.workers + c.channels + c.io_threads + (c.progress == rill::progress_mode::thread ? 1 : 0);
}

// One line per option: name, default, meaning.
std::string options_help();

}  // namespace rill::detail
