// The table of --rill:* options: parsing (flags and RILL_* variables) and --rill:help.
#pragma once

#include <string>
#include <vector>

#include "rill/config.hpp"

namespace rill::detail {

struct parsed_options {
  rill::config cfg;
  bool workers_given = false;    // otherwise chosen from the cores per rank on this node
  bool transport_given = false;  // otherwise detected from the launcher's environment
  bool global_heap_given = false;  // otherwise half of the segment
  bool help = false;
};

// Reads RILL_* variables, then --rill:* flags (flags win). Removes the flags it consumed from
// argv (compacting it, argc updated). Throws rill::usage_error naming the bad flag or value.
parsed_options parse_options(int& argc, char** argv);

// One line per option: name, default, meaning.
std::string options_help();

}  // namespace rill::detail
