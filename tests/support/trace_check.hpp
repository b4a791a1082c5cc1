// What a trace written by --rill:trace must look like (docs/tracing.md), checked on the parsed JSON:
// a process per rank, every flow start with exactly one end, each lane's spans nested and its
// events in time order. Returns the problems found (none: a good trace).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rill_test {

struct trace_summary {
  std::vector<std::string> problems;
  std::size_t arrows = 0;                // flow start/end pairs
  std::size_t event_arrows = 0;          // ... from an event's trigger to a task it released
  std::map<long, std::size_t> tasks;     // task spans per pid
  std::map<long, std::size_t> handlers;  // handler spans per pid
  std::set<long> ranks;                  // pids named "rank N"
};

inline trace_summary check_trace(const nlohmann::json& doc) {
  trace_summary s;
  auto problem = [&](std::string p) {
    if (s.problems.size() < 20) s.problems.push_back(std::move(p));
  };
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    problem("no traceEvents array");
    return s;
  }
  std::map<std::uint64_t, int> starts, ends;
  // Per lane (pid, tid): the spans in file order, and the last time seen.
  std::map<std::pair<long, long>, std::vector<std::pair<double, double>>> spans;
  std::map<std::pair<long, long>, double> last_start;
  std::vector<std::pair<std::pair<long, long>, double>> flow_starts;  // where each arrow leaves
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    const long pid = e.value("pid", -1L);
    const long tid = e.value("tid", -1L);
    if (ph == "M") {
      if (e.value("name", "") == "process_name") s.ranks.insert(pid);
      continue;
    }
    const double ts = e.value("ts", -1.0);
    if (ts < 0) problem(fmt::format("an event without a time: {}", e.dump()));
    const auto lane = std::make_pair(pid, tid);
    if (ph == "s") {
      ++starts[e.value("id", std::uint64_t{0})];
      if (e.value("cat", "") == "event") ++s.event_arrows;
      flow_starts.emplace_back(lane, ts);
    } else if (ph == "f") {
      ++ends[e.value("id", std::uint64_t{0})];
      continue;  // bound to the span before it, at that span's start: not a new point in time
    }
    if (ph == "X" || ph == "i") {
      auto [it, fresh] = last_start.emplace(lane, ts);
      if (!fresh && ts < it->second)
        problem(fmt::format("lane {}/{} goes back in time: {} after {}", pid, tid, ts, it->second));
      it->second = std::max(it->second, ts);
    }
    if (ph == "X") {
      spans[lane].emplace_back(ts, ts + e.value("dur", 0.0));
      const std::string name = e.value("name", "");
      if (name == "task") ++s.tasks[pid];
      if (name == "handler") ++s.handlers[pid];
    }
  }
  for (const auto& [id, n] : starts)
    if (n != 1 || ends[id] != 1) problem(fmt::format("flow {}: {} start(s), {} end(s)", id, n, ends[id]));
  for (const auto& [id, n] : ends)
    if (!starts.count(id)) problem(fmt::format("flow {}: {} end(s) and no start", id, n));
  s.arrows = starts.size();
  // An arrow leaves from inside a slice of its lane (Perfetto drops it otherwise).
  for (const auto& [lane, ts] : flow_starts) {
    const auto& list = spans[lane];
    if (std::none_of(list.begin(), list.end(),
                     [&](const auto& span) { return span.first <= ts + 0.0015 && ts <= span.second + 0.0015; }))
      problem(fmt::format("lane {}/{}: an arrow leaves at {}, outside every slice", lane.first, lane.second, ts));
  }
  // Spans of one lane nest: each starts after its enclosing span and ends before it does.
  constexpr double slack = 0.0015;  // the file's microseconds carry three decimals
  for (const auto& [lane, list] : spans) {
    std::vector<double> open_ends;
    for (const auto& [begin, end] : list) {
      while (!open_ends.empty() && open_ends.back() <= begin + slack) open_ends.pop_back();
      if (!open_ends.empty() && end > open_ends.back() + slack)
        problem(fmt::format("lane {}/{}: span [{}, {}] overlaps its enclosing span, which ends at {}", lane.first,
                            lane.second, begin, end, open_ends.back()));
      open_ends.push_back(end);
    }
  }
  return s;
}

}  // namespace rill_test
