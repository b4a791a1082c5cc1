// A std::FILE* that closes itself, for the trace's part and JSON files (stdio's buffering is what
// they need; errors are checked where the data is flushed).
#pragma once

#include <cstdio>
#include <memory>

namespace rill::detail::trace {

struct c_file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using c_file = std::unique_ptr<std::FILE, c_file_closer>;

}  // namespace rill::detail::trace
