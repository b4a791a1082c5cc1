// Part files and their merge. See trace_file.hpp.
//
// A part, in the byte order of the machine that wrote it (the merge runs on the same kind):
//   part_header, then per lane: lane_header, the lane's name, its records (struct record).
#include "trace/trace_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "trace/c_file.hpp"
#include "trace/chrome_writer.hpp"
#include "trace/flow_arrows.hpp"

namespace rill::detail::trace {

namespace {

constexpr std::array<char, 8> part_magic = {'R', 'I', 'L', 'L', 'T', 'R', 'C', '\0'};
constexpr std::uint32_t part_version = 1;

struct part_header {
  std::array<char, 8> magic;
  std::uint32_t version;
  std::uint32_t record_size;
  std::int32_t rank;
  std::uint32_t lane_count;
  std::int64_t clock_offset_ns;
};
static_assert(sizeof(part_header) == 32);

struct lane_header {
  std::uint64_t name_size;
  std::uint64_t record_count;
};

// Bounds that keep the merge's time arithmetic (start + offset - origin) far from overflow.
constexpr std::uint64_t max_time_ns = std::uint64_t{1} << 62;
constexpr std::int64_t max_offset_ns = std::int64_t{1} << 61;
// Far above any rank's thread count; keeps the tids of the JSON document small.
constexpr std::uint32_t max_lanes = 1 << 16;

// Reads one part, checking every size against what is left of the file and every record's kind and
// times, so that a truncated or foreign file is an error, never a huge allocation or a bad read.
class part_reader {
 public:
  part_reader(std::filesystem::path file, int rank) : file_(std::move(file)), rank_(rank) {
    std::error_code error;
    remaining_ = std::filesystem::file_size(file_, error);
    if (error) fail_missing();
    handle_.reset(std::fopen(file_.c_str(), "rb"));
    if (!handle_) fail_missing();
    read_bytes(&header_, sizeof header_, "header");
    if (header_.magic != part_magic) corrupt("not a Rill trace part");
    if (header_.version != part_version || header_.record_size != sizeof(record))
      corrupt(fmt::format("format version {} with {}-byte records (expected version {}, {} bytes)", header_.version,
                          header_.record_size, part_version, sizeof(record)));
    if (header_.rank != rank_) corrupt(fmt::format("it holds rank {}", header_.rank));
    if (header_.lane_count > max_lanes) corrupt(fmt::format("{} lanes", header_.lane_count));
    if (header_.clock_offset_ns > max_offset_ns || header_.clock_offset_ns < -max_offset_ns)
      corrupt("clock offset out of range");
  }

  std::int64_t clock_offset() const { return header_.clock_offset_ns; }
  std::uint32_t lane_count() const { return header_.lane_count; }

  void read_lane(std::string& name, std::vector<record>& records) {
    lane_header lane;
    read_bytes(&lane, sizeof lane, "lane header");
    if (lane.name_size > remaining_ || lane.record_count > remaining_ / sizeof(record)) corrupt("truncated lane");
    name.resize(lane.name_size);
    read_bytes(name.data(), name.size(), "lane name");
    records.resize(lane.record_count);
    read_bytes(records.data(), records.size() * sizeof(record), "records");
    for (const record& r : records) {
      if (static_cast<std::size_t>(r.what) >= kind_count) corrupt("unknown record kind");
      const bool span_times = is_span(r.what) ? r.end_ns >= r.start_ns : r.end_ns == 0;
      if (!span_times || r.start_ns >= max_time_ns || r.end_ns >= max_time_ns) corrupt("bad record times");
    }
  }

  void expect_end() {
    if (remaining_ != 0) corrupt("trailing bytes");
  }

 private:
  void read_bytes(void* data, std::size_t size, std::string_view what) {
    if (size > remaining_ || std::fread(data, 1, size, handle_.get()) != size)
      corrupt(fmt::format("truncated {}", what));
    remaining_ -= size;
  }
  [[noreturn]] void fail_missing() const {
    throw std::runtime_error(
        fmt::format("rill trace: the part file '{}' of rank {} is missing or unreadable", file_.string(), rank_));
  }
  [[noreturn]] void corrupt(std::string_view why) const {
    throw std::runtime_error(
        fmt::format("rill trace: the part file '{}' of rank {} is corrupt: {}", file_.string(), rank_, why));
  }

  std::filesystem::path file_;
  int rank_;
  std::uintmax_t remaining_ = 0;
  c_file handle_;
  part_header header_{};
};

// What the first pass over the parts learns for the second.
struct merge_plan {
  std::int64_t origin_ns = std::numeric_limits<std::int64_t>::max();  // the earliest aligned time
  std::uint32_t tid_stride = 10;                                      // a power of ten above any lane count
  std::vector<arrow_end> arrows;
};

merge_plan plan_merge(const std::filesystem::path& path, int nranks) {
  merge_plan plan;
  std::vector<flow_endpoint> endpoints;
  std::string name;
  std::vector<record> records;
  for (int rank = 0; rank < nranks; ++rank) {
    part_reader part(part_path(path, rank), rank);
    while (plan.tid_stride <= part.lane_count()) plan.tid_stride *= 10;
    for (std::uint32_t lane = 0; lane < part.lane_count(); ++lane) {
      part.read_lane(name, records);
      for (std::size_t i = 0; i < records.size(); ++i) {
        const record& r = records[i];
        plan.origin_ns = std::min(plan.origin_ns, static_cast<std::int64_t>(r.start_ns) + part.clock_offset());
        if (r.flow != 0 && info(r.what).flow != flow_role::none)
          endpoints.push_back({{static_cast<std::uint32_t>(rank), lane, i}, r.flow, r.what});
      }
    }
    part.expect_end();
  }
  if (plan.origin_ns == std::numeric_limits<std::int64_t>::max()) plan.origin_ns = 0;
  plan.arrows = pair_flows(std::move(endpoints));
  return plan;
}

void write_json(const std::filesystem::path& file, const std::filesystem::path& path, int nranks,
                const merge_plan& plan) {
  chrome_writer json(file, plan.origin_ns, plan.tid_stride);
  std::string name;
  std::vector<record> records;
  for (int rank = 0; rank < nranks; ++rank) {
    part_reader part(part_path(path, rank), rank);
    const auto pid_rank = static_cast<std::uint32_t>(rank);
    json.rank(pid_rank);
    for (std::uint32_t lane = 0; lane < part.lane_count(); ++lane) {
      part.read_lane(name, records);
      json.lane(pid_rank, lane, name, records, part.clock_offset(), arrows_of_lane(plan.arrows, pid_rank, lane));
    }
  }
  json.finish();
}

}  // namespace

std::filesystem::path part_path(const std::filesystem::path& path, int rank) {
  std::filesystem::path part = path;
  part += fmt::format(".part.{}", rank);
  return part;
}

void write_part(const rank_trace& trace, const std::filesystem::path& path) {
  const std::filesystem::path file = part_path(path, trace.rank());
  const auto fail = [&] {
    throw std::runtime_error(
        fmt::format("rill trace: cannot write the part file '{}' of rank {}", file.string(), trace.rank()));
  };
  c_file out(std::fopen(file.c_str(), "wb"));
  if (!out) fail();
  const auto write = [&](const void* data, std::size_t size) {
    if (std::fwrite(data, 1, size, out.get()) != size) fail();
  };

  const std::vector<const rank_trace::lane*> lanes = trace.lanes();
  const part_header header{
      part_magic,          part_version, sizeof(record), trace.rank(), static_cast<std::uint32_t>(lanes.size()),
      trace.clock_offset()};
  write(&header, sizeof header);
  for (const rank_trace::lane* lane : lanes) {
    const lane_header lane_head{lane->name.size(), lane->records.size()};
    write(&lane_head, sizeof lane_head);
    write(lane->name.data(), lane->name.size());
    for (const std::span<const record> chunk : lane->records.chunks()) write(chunk.data(), chunk.size_bytes());
  }
  if (std::fclose(out.release()) != 0) fail();
}

void merge_parts(const std::filesystem::path& path, int nranks) {
  if (nranks <= 0) throw std::invalid_argument(fmt::format("rill trace: cannot merge {} ranks", nranks));
  const merge_plan plan = plan_merge(path, nranks);

  // Written aside and renamed, so that a failed merge leaves no half document at `path`.
  std::filesystem::path merging = path;
  merging += ".merging";
  try {
    write_json(merging, path, nranks, plan);
    std::filesystem::rename(merging, path);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(merging, ignored);
    throw;
  }
  for (int rank = 0; rank < nranks; ++rank) std::filesystem::remove(part_path(path, rank));
}

}  // namespace rill::detail::trace
