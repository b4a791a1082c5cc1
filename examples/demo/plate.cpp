#include "plate.hpp"

#include <algorithm>
#include <numeric>

namespace plate {

reference run_reference(const params& p, const std::vector<int>& reported_steps) {
  const auto w = static_cast<std::size_t>(p.width), h = static_cast<std::size_t>(p.height);
  std::vector<double> now(w * h), next(w * h), k(w * h);
  for (coord_t y = 0; y < p.height; ++y)
    for (coord_t x = 0; x < p.width; ++x) {
      const auto i = static_cast<std::size_t>(y) * w + static_cast<std::size_t>(x);
      now[i] = initial_temperature(x, y, p);
      k[i] = initial_conductivity(x, y, p);
    }
  reference out;
  auto report = reported_steps.begin();
  for (int s = 0; s < p.steps; ++s) {
    for (coord_t y = 0; y < p.height; ++y) {
      const bool edge = y == 0 || y == p.height - 1;
      const std::size_t row = static_cast<std::size_t>(y) * w;
      step_row(edge ? nullptr : &now[row - w], &now[row], edge ? nullptr : &now[row + w], &k[row], &next[row], p.width,
               edge);
    }
    now.swap(next);
    if (p.checkpoint_every > 0 && (s + 1) % p.checkpoint_every == 0) {
      out.checkpointed = now;
      out.checkpoint_step = s + 1;
    }
    if (report != reported_steps.end() && *report == s) {
      out.heat_at_report.push_back(std::accumulate(now.begin(), now.end(), 0.0));
      ++report;
    }
  }
  out.final_temperature = std::move(now);
  return out;
}

}  // namespace plate
