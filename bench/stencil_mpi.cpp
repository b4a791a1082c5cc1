// The stencil's MPI peer (stencil.hpp): the Parallel Research Kernels' Stencil (MPI1) on a 1D cut,
// run by REGIONS (regions_stencil.cpp) and, with a snapshot hook, by I4 (i4_snapshots.cpp).
#include <mpi.h>

#include <numeric>

#include "common.hpp"
#include "stencil.hpp"

namespace stencil {

double run_mpi(const params& prm, std::vector<double>& values, const mpi_hook& after_step) {
  int me = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const coord_t lo = me * prm.height / ranks, hi = (me + 1) * prm.height / ranks - 1, rows = hi - lo + 1;
  const coord_t W = prm.width;
  const auto at = [W](coord_t local_row) { return static_cast<std::size_t>(local_row * W); };
  // Local row i is global row lo - 1 + i: rows 1 .. rows are this rank's, 0 and rows + 1 halos.
  std::vector<double> a(at(rows + 2)), b(at(rows + 2));
  for (coord_t i = 1; i <= rows; ++i)
    for (coord_t x = 0; x < W; ++x) a[at(i) + static_cast<std::size_t>(x)] = initial(x, lo - 1 + i);
  const int up = me > 0 ? me - 1 : MPI_PROC_NULL, down = me + 1 < ranks ? me + 1 : MPI_PROC_NULL;
  constexpr int tag = 61;
  const int n = static_cast<int>(W);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = bench::clock::now();
  for (int s = 0; s < prm.steps; ++s) {
    double* in = (s % 2 ? b : a).data();
    double* out = (s % 2 ? a : b).data();
    MPI_Request r[4];
    MPI_Irecv(in, n, MPI_DOUBLE, up, tag, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(in + at(rows + 1), n, MPI_DOUBLE, down, tag, MPI_COMM_WORLD, &r[1]);
    MPI_Isend(in + at(1), n, MPI_DOUBLE, up, tag, MPI_COMM_WORLD, &r[2]);
    MPI_Isend(in + at(rows), n, MPI_DOUBLE, down, tag, MPI_COMM_WORLD, &r[3]);
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
    for (coord_t i = 1; i <= rows; ++i) {
      const coord_t y = lo - 1 + i;
      relax_row(in + at(i - 1), in + at(i), in + at(i + 1), out + at(i), W, y == 0 || y == prm.height - 1);
    }
    if (after_step) after_step(s, {out + at(1), at(rows)}, lo);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double per_step = bench::seconds_since(t0) / prm.steps;
  const std::vector<double>& last = prm.steps % 2 ? b : a;
  const int mine = static_cast<int>(rows * W);
  std::vector<int> counts(static_cast<std::size_t>(ranks)), displs(static_cast<std::size_t>(ranks));
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
  values.assign(me == 0 ? static_cast<std::size_t>(W * prm.height) : 0, 0.0);
  MPI_Gatherv(last.data() + at(1), mine, MPI_DOUBLE, values.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  return per_step;
}

}  // namespace stencil
