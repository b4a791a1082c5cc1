// rill-demo's plate as logical regions, and every operation the run issues on it. Each returns at
// once with an event or a future: the runtime finds the order from the regions and privileges,
// moves the halo rows between strips, and does the file I/O on its I/O threads.
#pragma once

#include <string>
#include <vector>

#include "plate.hpp"
#include "rill/rill.hpp"

namespace plate {

struct plate_regions {
  params p;
  int pieces = 0;
  rill::region grid;       // the plate: both temperatures and the conductivity
  rill::partition strips;  // disjoint strips of rows, one task each per step
  rill::partition ghosts;  // each strip with a row of each neighbour (aliased)
  rill::region totals;     // one point: the heat the strips reduce into

  plate_regions(const params& prm, int piece_count);
};

// Puts each strip's tasks on a rank of its own block of strips, so that neighbours share a rank
// and only the rows between blocks cross ranks. Launches that are not index points go where
// their data is (the default).
void use_block_mapper(const plate_regions& r);

// Writes the demo's input -- the initial temperature and the conductivity -- to an HDF5 file
// through a region attached to it: tasks fill the region, the detach makes the file durable.
rill::event generate_input(const plate_regions& r, const std::string& path);
// Reads the input file into the plate: attached read-only, pulled in by the strips' tasks where
// they run, detached.
rill::event load_input(const plate_regions& r, const std::string& path);
// Step s (from 0): every strip's next temperature.
rill::event step(const plate_regions& r, int s);
// The plate's heat after step s: the strips' sums reduced into `totals`.
rill::future<double> heat_after(const plate_regions& r, int s);
// A checkpoint of the temperature after step s to an HDF5 file: copied by tasks into a region
// attached write_discard, written by the I/O threads while the next steps run. Its event triggers
// when the file is complete and synced under its name.
rill::event checkpoint(const plate_regions& r, int s, const std::string& path);
// The temperature after step s, row after row, gathered strip by strip from where they are.
std::vector<double> temperature_after_step(const plate_regions& r, int s);
// The temperature a checkpoint file holds, read back through an attached region.
std::vector<double> read_checkpoint(const params& p, const std::string& path);

}  // namespace plate
