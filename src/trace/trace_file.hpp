// The trace file of a run. At shutdown every rank writes its records as a binary part file,
// PATH.part.<rank>, then rank 0 (or rill-trace-merge, after a run that died first) merges the parts
// into the Chrome JSON document PATH.
//
// Parts are binary, not JSON, because the merge needs every rank's records at once: an arrow may
// join two ranks, and one flow start may have several ends, which JSON written rank by rank could
// not number (trace/flow_arrows.hpp). Writing a part is also only a copy of the recorded chunks, so
// ranks spend no time formatting at shutdown, and a part's declared sizes let the merge tell a
// complete part from a truncated one.
#pragma once

#include <filesystem>

#include "trace/recorder.hpp"

namespace rill::detail::trace {

// PATH.part.<rank>
std::filesystem::path part_path(const std::filesystem::path& path, int rank);

// Writes the part of `trace`'s rank for the trace file `path`. Only once no thread records into
// `trace`. Throws std::runtime_error naming the file on an I/O error.
void write_part(const rank_trace& trace, const std::filesystem::path& path);

// Merges the parts of ranks 0 .. nranks - 1 into the JSON document `path`, then deletes them.
// Throws std::runtime_error naming the file and rank of a missing or corrupt part, leaving the parts
// and `path` as they were.
void merge_parts(const std::filesystem::path& path, int nranks);

}  // namespace rill::detail::trace
