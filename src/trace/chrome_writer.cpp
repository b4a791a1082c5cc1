// See chrome_writer.hpp. Events are formatted with fmt into a memory buffer written out every
// megabyte: a merge writes millions of them.
#include "trace/chrome_writer.hpp"

#include <fmt/compile.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

namespace rill::detail::trace {

namespace {

// JSON text gathered before each write to the file: few system calls, little memory.
constexpr std::size_t flush_bytes = 1 << 20;

void append_escaped(fmt::memory_buffer& out, std::string_view text) {
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      fmt::format_to(std::back_inserter(out), FMT_COMPILE("\\u{:04x}"), static_cast<unsigned>(c));
    } else {
      out.push_back(c);
    }
  }
}

// A record's place on its timeline: a span right before the spans it contains, whatever the order
// they ended (and were recorded) in.
bool starts_earlier(const record& a, const record& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  const auto end = [](const record& r) { return is_span(r.what) ? r.end_ns : r.start_ns; };
  return end(a) > end(b);
}

}  // namespace

chrome_writer::chrome_writer(std::filesystem::path file, std::int64_t origin_ns, std::uint32_t tid_stride)
    : path_(std::move(file)), file_(std::fopen(path_.c_str(), "wb")), origin_ns_(origin_ns), tid_stride_(tid_stride) {
  if (!file_) throw std::runtime_error(fmt::format("rill trace: cannot create '{}'", path_.string()));
  fmt::format_to(std::back_inserter(out_), FMT_COMPILE("{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"));
}

void chrome_writer::start_event() {
  if (!first_event_) out_.append(std::string_view(",\n"));
  first_event_ = false;
}

void chrome_writer::write_time(std::string_view key, std::int64_t ns) {
  const auto magnitude = static_cast<std::uint64_t>(ns < 0 ? -ns : ns);
  fmt::format_to(std::back_inserter(out_), FMT_COMPILE(",\"{}\":{}{}.{:03}"), key, ns < 0 ? "-" : "", magnitude / 1000,
                 magnitude % 1000);
}

void chrome_writer::rank(std::uint32_t rank) {
  // On the tid of the rank's first lane: without a tid, Perfetto makes one up from the pid.
  start_event();
  out_.append(std::string_view("{\"name\":\"process_name\",\"ph\":\"M\""));
  write_thread(rank, 0);
  fmt::format_to(std::back_inserter(out_), FMT_COMPILE(",\"args\":{{\"name\":\"rank {}\"}}}},\n"), rank);
  out_.append(std::string_view("{\"name\":\"process_sort_index\",\"ph\":\"M\""));
  write_thread(rank, 0);
  fmt::format_to(std::back_inserter(out_), FMT_COMPILE(",\"args\":{{\"sort_index\":{}}}}}"), rank);
}

void chrome_writer::write_thread(std::uint32_t rank, std::uint32_t lane) {
  const std::uint32_t pid = rank + 1;
  fmt::format_to(std::back_inserter(out_), FMT_COMPILE(",\"pid\":{},\"tid\":{}"), pid,
                 std::uint64_t{pid} * tid_stride_ + lane);
}

void chrome_writer::lane(std::uint32_t rank, std::uint32_t lane, std::string_view name, std::span<const record> records,
                         std::int64_t clock_offset_ns, std::span<const arrow_end> arrows) {
  start_event();
  out_.append(std::string_view("{\"name\":\"thread_name\",\"ph\":\"M\""));
  write_thread(rank, lane);
  out_.append(std::string_view(",\"args\":{\"name\":\""));
  append_escaped(out_, name);
  out_.append(std::string_view("\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\""));
  write_thread(rank, lane);
  fmt::format_to(std::back_inserter(out_), FMT_COMPILE(",\"args\":{{\"sort_index\":{}}}}}"), lane);

  std::vector<std::size_t> order(records.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return starts_earlier(records[a], records[b]); });

  std::vector<std::uint64_t> open_ends;  // of the spans around the record being written, innermost last
  for (const std::size_t index : order) {
    if (out_.size() >= flush_bytes) flush();
    const record& r = records[index];
    const std::int64_t time_ns = static_cast<std::int64_t>(r.start_ns) + clock_offset_ns - origin_ns_;
    while (!open_ends.empty() && open_ends.back() <= r.start_ns) open_ends.pop_back();
    const arrow_end probe{{rank, lane, index}, 0, r.what, false};
    const auto [first, last] =
        r.flow == 0 ? std::pair(arrows.end(), arrows.end())
                    : std::equal_range(arrows.begin(), arrows.end(), probe,
                                       [](const auto& a, const auto& b) { return a.at.index < b.at.index; });
    // An arrow leaves from the slice around its start; an instant outside every slice (a send from
    // the scheduling loop, not from a task or handler) becomes a slice of its own, 1 ns long.
    write_record(r, time_ns, rank, lane, first != last && !is_span(r.what) && open_ends.empty());
    if (is_span(r.what)) open_ends.push_back(r.end_ns);
    for (auto a = first; a != last; ++a) write_arrow(*a, time_ns, rank, lane);
  }
}

void chrome_writer::write_record(const record& r, std::int64_t time_ns, std::uint32_t rank, std::uint32_t lane,
                                 bool as_slice) {
  const kind_info& k = info(r.what);
  const bool slice = k.shape == shape::span || as_slice;
  start_event();
  // An instant is drawn on its thread's timeline ("s":"t"), not across the process or trace.
  fmt::format_to(std::back_inserter(out_), FMT_COMPILE("{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"{}\""), k.name,
                 k.category, slice ? "X" : "i\",\"s\":\"t");
  write_time("ts", time_ns);
  if (slice) write_time("dur", k.shape == shape::span ? static_cast<std::int64_t>(r.end_ns - r.start_ns) : 1);
  write_thread(rank, lane);
  if (!k.arg0.empty() || !k.arg1.empty()) {
    out_.append(std::string_view(",\"args\":{"));
    if (!k.arg0.empty()) fmt::format_to(std::back_inserter(out_), FMT_COMPILE("\"{}\":{}"), k.arg0, r.arg0);
    if (!k.arg0.empty() && !k.arg1.empty()) out_.push_back(',');
    if (!k.arg1.empty()) fmt::format_to(std::back_inserter(out_), FMT_COMPILE("\"{}\":{}"), k.arg1, r.arg1);
    out_.push_back('}');
  }
  out_.push_back('}');
}

void chrome_writer::write_arrow(const arrow_end& a, std::int64_t time_ns, std::uint32_t rank, std::uint32_t lane) {
  // Perfetto matches a flow's events by id, category and name: both ends use the start's category.
  // An end binds to the span it lies in ("bp":"e"), which is its own, written just before it.
  const std::string_view category = info(a.source).category;
  start_event();
  fmt::format_to(std::back_inserter(out_), FMT_COMPILE("{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"{}\",\"id\":{}"),
                 category, category, a.starts ? "s" : "f\",\"bp\":\"e", a.arrow);
  write_time("ts", time_ns);
  write_thread(rank, lane);
  out_.push_back('}');
}

void chrome_writer::flush() {
  if (std::fwrite(out_.data(), 1, out_.size(), file_.get()) != out_.size())
    throw std::runtime_error(fmt::format("rill trace: cannot write '{}'", path_.string()));
  out_.clear();
}

void chrome_writer::finish() {
  out_.append(std::string_view("\n]}\n"));
  flush();
  if (std::fclose(file_.release()) != 0)
    throw std::runtime_error(fmt::format("rill trace: cannot write '{}'", path_.string()));
}

}  // namespace rill::detail::trace
