// Shared helpers of the benchmark programs: timing, repetition statistics, and the JSON line every
// measurement ends as (the contract in BENCHMARKS.md: id, case, metric, unit, value = median, min,
// max, runs, higher_is_better, and peer, peer_value, ratio where a peer ran in the same run).
// Only result lines go to standard output; progress goes to standard error.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

using clock = std::chrono::steady_clock;

inline double seconds_since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }

// Median, minimum and maximum of repeated measurements.
struct summary {
  double median = 0;
  double min = 0;
  double max = 0;
  int runs = 0;
};

inline summary summarize(std::vector<double> v) {
  summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  s.runs = static_cast<int>(n);
  return s;
}

// One measured configuration: Rill's figure and, when one ran, the peer's.
struct result {
  std::string id;
  std::string case_name;
  std::string metric;
  std::string unit;
  bool higher_is_better = false;
  std::vector<double> rill;                         // one value per repetition
  std::string peer;                                 // empty when there is no peer
  std::vector<double> peer_values;                  // one value per repetition
  nlohmann::json extra = nlohmann::json::object();  // parameters: ranks, workers, sizes, ...
};

// Ratio oriented so that > 1 means Rill did better.
inline double oriented_ratio(double rill, double peer, bool higher_is_better) {
  if (rill <= 0 || peer <= 0) return 0;
  return higher_is_better ? rill / peer : peer / rill;
}

inline nlohmann::json to_json(const result& r) {
  const summary s = summarize(r.rill);
  nlohmann::json j;
  j["id"] = r.id;
  j["case"] = r.case_name;
  j["metric"] = r.metric;
  j["unit"] = r.unit;
  j["value"] = s.median;
  j["min"] = s.min;
  j["max"] = s.max;
  j["runs"] = s.runs;
  j["higher_is_better"] = r.higher_is_better;
  if (!r.peer.empty() && !r.peer_values.empty()) {
    const summary p = summarize(r.peer_values);
    j["peer"] = r.peer;
    j["peer_value"] = p.median;
    j["peer_min"] = p.min;
    j["peer_max"] = p.max;
    j["peer_runs"] = p.runs;
    j["ratio"] = oriented_ratio(s.median, p.median, r.higher_is_better);
  }
  for (auto it = r.extra.begin(); it != r.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

inline void emit(const result& r) {
  const std::string line = to_json(r).dump();
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// A time (lower is better) measured in seconds, reported in milliseconds beside a peer's.
inline void emit_ms(const std::string& id, const std::string& case_name, const std::string& metric,
                    std::vector<double> seconds, const std::string& peer, std::vector<double> peer_seconds,
                    const nlohmann::json& extra) {
  for (auto* v : {&seconds, &peer_seconds})
    for (double& x : *v) x *= 1e3;
  result r{id, case_name, metric, "ms", false, std::move(seconds), peer, std::move(peer_seconds), extra};
  emit(r);
}

template <class... Args>
void progress(fmt::format_string<Args...> f, Args&&... args) {
  std::fputs(fmt::format(f, std::forward<Args>(args)...).c_str(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

// max |a - b| over max |a|: how far a result is from the reference's (infinite if sizes differ).
inline double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(a[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

// Keeps the optimizer from deleting a computation whose result is otherwise unused.
template <class T>
inline void keep(T const& v) {
  asm volatile("" : : "r,m"(v) : "memory");
}

}  // namespace bench
