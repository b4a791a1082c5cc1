// R5's circuit written on logical regions (rill/launch.hpp): index launches with privileges, the
// runtime finding the dependences, the ghost copies and the reductions (circuit_regions.cpp).
#pragma once
#include <vector>

#include "circuit.hpp"

namespace r5 {

// Runs c.prm.steps steps from the initial state, issued by the calling (top-level) task, and
// returns the seconds per step; `voltages` gets every node's final voltage, by id.
double run_regions(const circuit& c, std::vector<double>& voltages);

}  // namespace r5
