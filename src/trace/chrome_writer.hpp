// Writes trace records as a Chrome Trace Event Format document (JSON), which Perfetto
// (ui.perfetto.dev) and chrome://tracing open: a process per rank, a thread per lane, "X" events for
// spans, "i" events for instants, "s"/"f" flow events for arrows, "M" events for names and order.
//
// The format's pids and tids are numbers: a rank's pid is rank + 1 and a lane's tid is
// pid * tid_stride + lane, unique in the whole file, because Perfetto keeps thread names by tid
// alone and reserves pid and tid 0. Times are microseconds with three decimals (exact ns).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "trace/c_file.hpp"
#include "trace/flow_arrows.hpp"
#include "trace/recorder.hpp"

namespace rill::detail::trace {

class chrome_writer {
 public:
  // Creates `file` and starts the document. A record's time in the file is its start plus its
  // rank's clock offset minus `origin_ns`. Throws std::runtime_error when the file cannot be created.
  chrome_writer(std::filesystem::path file, std::int64_t origin_ns, std::uint32_t tid_stride);

  // The name and order of a rank's process.
  void rank(std::uint32_t rank);
  // One lane of a rank: its thread's name and order, then its records in time order (a span before
  // the spans it contains), each followed by the ends of arrows bound to it. `arrows`: the lane's
  // arrow ends (arrows_of_lane), located by index in `records`.
  void lane(std::uint32_t rank, std::uint32_t lane, std::string_view name, std::span<const record> records,
            std::int64_t clock_offset_ns, std::span<const arrow_end> arrows);
  // Ends the document and closes the file. Throws std::runtime_error on a write error.
  void finish();

 private:
  void start_event();
  void write_time(std::string_view key, std::int64_t ns);
  void write_thread(std::uint32_t rank, std::uint32_t lane);
  // An instant `as_slice` is written as a 1 ns slice (so that an arrow can leave from it).
  void write_record(const record& r, std::int64_t time_ns, std::uint32_t rank, std::uint32_t lane, bool as_slice);
  void write_arrow(const arrow_end& a, std::int64_t time_ns, std::uint32_t rank, std::uint32_t lane);
  void flush();

  std::filesystem::path path_;
  c_file file_;
  std::int64_t origin_ns_;
  std::uint32_t tid_stride_;
  bool first_event_ = true;
  fmt::memory_buffer out_;
};

}  // namespace rill::detail::trace
