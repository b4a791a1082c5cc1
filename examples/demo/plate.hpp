// rill-demo's physics: heat spreading through a plate of two materials, held hot along its left
// edge and cold along the others. The same functions serve the runtime's tasks and the sequential
// reference the result is checked against, so the two compute the same numbers bit for bit.
#pragma once

#include <cstddef>
#include <vector>

#include "rill/rill.hpp"

namespace plate {

using rill::coord_t;

struct params {
  coord_t width = 1024;  // points per row (x, dimension 0: contiguous)
  coord_t height = 1024;
  int steps = 1000;
  int checkpoint_every = 250;  // steps between checkpoints (0: none)
  int report_every = 25;       // steps between reductions of the plate's heat
  int pieces = 0;              // strips of rows (0: two per rank)
};

// The temperature in two fields, a step reading one and writing the other; the conductivity,
// read from the input file; and the heat of the plate, the field of a one-point region that the
// strips reduce into.
constexpr rill::field<double> temperature_a{1}, temperature_b{2}, conductivity{3}, heat{4};
inline rill::field<double> temperature_before(int step) { return step % 2 ? temperature_b : temperature_a; }
inline rill::field<double> temperature_after(int step) { return step % 2 ? temperature_a : temperature_b; }

constexpr double hot_edge = 100.0;

// The input the demo generates: the left edge hot, a few warm disks inside, the rest cold.
inline double initial_temperature(coord_t x, coord_t y, const params& p) {
  if (x == 0) return hot_edge;
  const coord_t cx[] = {p.width / 4, p.width / 2, 3 * p.width / 4},
                cy[] = {p.height / 3, 2 * p.height / 3, p.height / 4};
  const coord_t r = p.width / 12 + 1;
  for (int d = 0; d < 3; ++d)
    if ((x - cx[d]) * (x - cx[d]) + (y - cy[d]) * (y - cy[d]) <= r * r) return 60.0;
  return 0.0;
}

// Copper everywhere but an insulating wall across the plate, with a gap in its middle.
inline double initial_conductivity(coord_t x, coord_t y, const params& p) {
  const bool wall = x >= 3 * p.width / 8 && x < 3 * p.width / 8 + p.width / 32 + 1;
  const bool gap = y >= 2 * p.height / 5 && y < 3 * p.height / 5;
  return wall && !gap ? 0.05 : 1.0;
}

// Row y of the next temperature from rows y - 1, y, y + 1 of the current one and the row's
// conductivities: explicit diffusion, stable since 0.24 * k < 1/4. The edge keeps its values.
inline void step_row(const double* up, const double* mid, const double* down, const double* k, double* out,
                     coord_t width, bool edge_row) {
  if (edge_row) {
    for (coord_t x = 0; x < width; ++x) out[x] = mid[x];
    return;
  }
  out[0] = mid[0];
  for (coord_t x = 1; x < width - 1; ++x)
    out[x] = mid[x] + 0.24 * k[x] * (mid[x - 1] + mid[x + 1] + up[x] + down[x] - 4.0 * mid[x]);
  out[width - 1] = mid[width - 1];
}

// Strip s of `pieces` holds rows [first_row(s), first_row(s + 1) - 1].
inline coord_t first_row(const params& p, int pieces, int strip) { return strip * p.height / pieces; }

// The sequential reference: the whole run on one thread, on plain arrays.
struct reference {
  std::vector<double> final_temperature;  // row after row
  std::vector<double> checkpointed;       // the state the last checkpoint saved (empty: none)
  int checkpoint_step = 0;
  std::vector<double> heat_at_report;  // the plate's heat after each reported step
};
reference run_reference(const params& p, const std::vector<int>& reported_steps);

}  // namespace plate
