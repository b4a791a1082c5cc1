// REGIONS, case `stencil` (the whole story is at the top of regions_stencil.cpp): the grid, its cut
// into pieces and the arithmetic of a step, shared by the version on logical regions
// (stencil_regions.cpp), the one on Rill's data layer with explicit copies (regions_stencil.cpp)
// and the MPI peer (stencil_mpi.cpp). I4 (i4_snapshots.cpp) runs the regions and MPI versions with
// a snapshot of the grid every k steps, through the hooks below.
#pragma once
#include <algorithm>
#include <cstddef>
#include <functional>
#include <span>
#include <stdexcept>
#include <vector>

#include "rill/rill.hpp"

namespace stencil {

using rill::coord_t;

struct params {
  coord_t width = 2048;   // points per row (x, dimension 0: contiguous in memory)
  coord_t height = 1024;  // rows (y, dimension 1)
  int pieces = 8;         // strips of rows, on every rank count (strong scaling)
  int steps = 100;
};

constexpr double alpha = 0.125;      // the diffusion coefficient of a Jacobi step
constexpr double tolerance = 1e-12;  // relative difference allowed between versions
// Two fields: a step reads one and writes the other, the next step the other way round.
constexpr rill::field<double> f_a{1}, f_b{2};
inline rill::field<double> input_of(int step) { return step % 2 ? f_b : f_a; }
inline rill::field<double> output_of(int step) { return step % 2 ? f_a : f_b; }

// Piece p holds rows [first_row(p), first_row(p + 1) - 1].
inline coord_t first_row(const params& prm, int piece) { return piece * prm.height / prm.pieces; }
// Contiguous blocks of pieces per rank, so that neighbouring pieces share a rank.
inline int owner_of(const params& prm, int piece, int ranks) { return piece * ranks / prm.pieces; }

inline double initial(coord_t x, coord_t y) { return static_cast<double>((x * 37 + y * 91) % 256) / 256.0; }

// Row y of the next field from rows y - 1, y and y + 1 of the current one. The grid's edge (its
// first and last row and column) keeps its values; `up` and `down` are not read for edge rows.
inline void relax_row(const double* up, const double* mid, const double* down, double* out, coord_t width,
                      bool edge_row) {
  if (edge_row) {
    std::copy_n(mid, width, out);
    return;
  }
  out[0] = mid[0];
  for (coord_t x = 1; x < width - 1; ++x)
    out[x] = mid[x] + alpha * (mid[x - 1] + mid[x + 1] + up[x] + down[x] - 4 * mid[x]);
  out[width - 1] = mid[width - 1];
}

// Rows [lo, hi] of the next field through accessors of any kind (x contiguous, as instances lay
// out dimension 0 by default).
template <class In, class Out>
void relax_rows(const In& in, const Out& out, coord_t lo, coord_t hi, const params& prm) {
  if (in.stride(0) != sizeof(double) || out.stride(0) != sizeof(double))
    throw std::logic_error("stencil: rows are not contiguous in the instance");
  for (coord_t y = lo; y <= hi; ++y) {
    const bool edge = y == 0 || y == prm.height - 1;
    relax_row(edge ? nullptr : in.ptr({0, y - 1}), in.ptr({0, y}), edge ? nullptr : in.ptr({0, y + 1}), out.ptr({0, y}),
              prm.width, edge);
  }
}

// The logical-region version: the grid as one region, its strips as a disjoint partition and each
// strip with one row either side as an aliased one. Made once per runtime, reused by every run.
struct grid_regions {
  rill::region grid;
  rill::partition strips, ghosts;
};
grid_regions make_regions(const params& prm);
// Called after the launch of step s (0-based), which wrote output_of(s); the run's time includes
// waiting for the event it returns.
using regions_hook = std::function<rill::event(int step)>;
// Seconds per step of a run from the initial values; `values` gets the final grid, row by row.
double run_regions(const params& prm, const grid_regions& r, std::vector<double>& values,
                   const regions_hook& after_step = {});

// Called on every rank after step s (0-based) with the rank's rows of the grid that step wrote
// (contiguous, row after row) and the first of them; inside the timed loop.
using mpi_hook = std::function<void(int step, std::span<const double> rows, coord_t first_row)>;
// The bulk-synchronous MPI version on MPI_COMM_WORLD (a block of rows per rank, MPI_Irecv/MPI_Isend
// of the halo rows, MPI_Waitall, compute). Seconds per step; `values` gets, on rank 0, the final
// grid.
double run_mpi(const params& prm, std::vector<double>& values, const mpi_hook& after_step = {});

}  // namespace stencil
