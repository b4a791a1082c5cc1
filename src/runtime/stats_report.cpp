#include "runtime/stats_report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rill::detail {

std::string format_counters(const std::vector<int>& ranks, const std::vector<std::vector<rill::counter>>& counters) {
  std::size_t name_width = 7;
  std::size_t value_width = 8;
  for (const auto& list : counters)
    for (const rill::counter& c : list) {
      name_width = std::max(name_width, c.layer.size() + 1 + c.name.size());
      value_width = std::max(value_width, fmt::formatted_size("{}", c.value));
    }
  std::string out = fmt::format("rill: counters at the end of the run (--rill:stats)\n{:<{}}", "counter", name_width);
  for (int r : ranks) out += fmt::format("  {:>{}}", fmt::format("rank {}", r), value_width);
  out += '\n';
  const std::size_t rows = counters.empty() ? 0 : counters.front().size();
  for (std::size_t row = 0; row < rows; ++row) {
    const rill::counter& first = counters.front()[row];
    out += fmt::format("{:<{}}", first.layer + "." + first.name, name_width);
    for (const auto& list : counters) out += fmt::format("  {:>{}}", list[row].value, value_width);
    out += '\n';
  }
  return out;
}

}  // namespace rill::detail
