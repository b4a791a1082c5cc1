// REGIONS, case `stencil` (BENCHMARKS.md; issue 21): a 2D stencil with ghost cells found by
// partitions, against the same stencil on Rill's data layer with explicit copies and a
// bulk-synchronous MPI version. Run as an MPI singleton with --rill:ranks=1, or under
// `mpirun -np N`.
//
// The stencil: a Jacobi heat step on a grid of W x H doubles (default 2048 x 1024: 16 MiB a
// field, a step ~1-3 ms on one core, bound by memory), two fields read and written in turn, the
// grid's edge fixed; 100 steps a run (quick: 20). The grid is cut into P strips of rows (default
// 8, the same at every rank count: strong scaling), blocks of P / ranks neighbouring strips per
// rank; a step of a strip reads one row of each neighbour strip (its halo).
//   regions   (stencil_regions.cpp) the grid as one region, strips as a disjoint partition, strips
//             with their halo rows as an aliased one; one index launch a step, each point reading
//             its ghost region of one field and writing its strip of the other. The runtime finds
//             the halo copies and the order; a mapper of the program's places the strips.
//   explicit  Realm's way (R5's deferred version): an instance per strip with its halo rows (in
//             memory::registered of its rank), and per step a rill::copy of each halo row from
//             the neighbour's instance, after the neighbour's step before that wrote it and after
//             this strip's step before that last read it; the strip's step after its halo copies,
//             its own step before, and the copies out of it of the step before (which read what
//             it overwrites). The whole run is issued at once; the issuer yields after each step.
//   MPI       (the peer, stencil_mpi.cpp; in processes of its own at MPI_THREAD_SINGLE that take
//             turns with Rill's repetition by repetition, peer_apart.hpp, and write their final
//             grid beside their results for the check) one block of rows per rank with a halo row
//             either side; per step MPI_Irecv/MPI_Isend of the two halo rows,
//             MPI_Waitall, then the block's rows: the Parallel Research Kernels' Stencil (MPI1) on
//             a 1D cut.
// All three run the same row kernel (stencil.hpp). Metric: time per step (first issue to last
// completion over the steps); target (issue 21): regions >= 0.9 x explicit. Check: the final grids
// of regions and explicit agree with MPI's within a relative 1e-12 (else exit 1).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <tuple>
#include <utility>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "stencil.hpp"

namespace {

using namespace stencil;

// --- Rill, explicit copies -------------------------------------------------------------------------

// A strip's instance (its rows and halo rows) and the rows it owns: trivially copyable, so tasks
// on other ranks take it as an argument.
struct strip {
  rill::instance inst;
  coord_t lo, hi;
};

struct piece {
  int owner;
  strip s;
};

void init_piece(strip s, params prm) {
  const rill::accessor<double, 2> a(s.inst, f_a);
  for (coord_t y = s.lo; y <= s.hi; ++y)
    for (coord_t x = 0; x < prm.width; ++x) a[{x, y}] = initial(x, y);
}

void relax_piece(strip s, params prm, int step) {
  relax_rows(rill::accessor<double, 2>(s.inst, input_of(step)), rill::accessor<double, 2>(s.inst, output_of(step)),
             s.lo, s.hi, prm);
}

std::vector<double> read_piece(strip s, rill::field_id f, params prm) {
  const rill::accessor<double, 2> v(s.inst, f);
  std::vector<double> rows;
  for (coord_t y = s.lo; y <= s.hi; ++y)
    for (coord_t x = 0; x < prm.width; ++x) rows.push_back(v[{x, y}]);
  return rows;
}

std::vector<piece> create_pieces(const params& prm) {
  std::vector<piece> pieces;
  std::vector<rill::event> ready;
  for (int p = 0; p < prm.pieces; ++p) {
    const int owner = owner_of(prm, p, rill::rank_n());
    const coord_t lo = first_row(prm, p), hi = first_row(prm, p + 1) - 1;
    const rill::rect<2> rows{{0, std::max<coord_t>(lo - 1, 0)}, {prm.width - 1, std::min(hi + 1, prm.height - 1)}};
    auto made = rill::instance::create(rill::memory::registered(owner), rows, rill::field_space{f_a, f_b});
    pieces.push_back({owner, {made.inst, lo, hi}});
    ready.push_back(made.ready);
  }
  rill::merge(ready).wait();
  return pieces;
}

// Seconds per step of one run from the initial values; `values` gets the final grid.
double run_explicit(const params& prm, const std::vector<piece>& pieces, std::vector<double>& values) {
  const std::size_t P = pieces.size();
  std::vector<rill::event> stepped(P), stepped_before(P);  // each strip's last step, the one before
  std::vector<std::vector<rill::event>> read_out(P);       // copies out of a strip, last step
  for (std::size_t p = 0; p < P; ++p) stepped[p] = rill::proc(pieces[p].owner).spawn(init_piece, pieces[p].s, prm);
  rill::merge(stepped).wait();
  const auto t0 = bench::clock::now();
  for (int s = 0; s < prm.steps; ++s) {
    const rill::field<double> in = input_of(s);
    std::vector<std::vector<rill::event>> copied_in(P), copied_out(P);
    for (std::size_t p = 0; p < P; ++p)
      for (std::size_t q : {p - 1, p + 1}) {
        if (q >= P) continue;  // (p - 1 wraps for p = 0)
        // The neighbour's row next to p: after the neighbour's last step wrote it, and after p's
        // step before that read the halo row last.
        const coord_t row = q < p ? pieces[p].s.lo - 1 : pieces[p].s.hi + 1;
        const rill::event e =
            rill::copy(pieces[q].s.inst, pieces[p].s.inst, {in.id}, rill::rect<2>{{0, row}, {prm.width - 1, row}},
                       rill::merge(stepped[q], stepped_before[p]));
        copied_in[p].push_back(e);
        copied_out[q].push_back(e);
      }
    for (std::size_t p = 0; p < P; ++p) {
      std::vector<rill::event> pre = std::move(copied_in[p]);
      pre.insert(pre.end(), read_out[p].begin(), read_out[p].end());
      pre.push_back(stepped[p]);
      stepped_before[p] = stepped[p];
      stepped[p] = rill::proc(pieces[p].owner).spawn(rill::after(rill::merge(pre)), relax_piece, pieces[p].s, prm, s);
    }
    read_out = std::move(copied_out);
    // One worker per rank: let rank 0's own tasks and incoming requests run between steps.
    rill::yield();
  }
  rill::merge(stepped).wait();
  const double per_step = bench::seconds_since(t0) / prm.steps;
  std::vector<rill::future<std::vector<double>>> parts;
  for (const piece& p : pieces) parts.push_back(rill::rpc(p.owner, read_piece, p.s, input_of(prm.steps).id, prm));
  values.clear();
  for (auto& f : parts) {
    const std::vector<double> v = f.get();
    values.insert(values.end(), v.begin(), v.end());
  }
  return per_step;
}

}  // namespace

// The MPI version's final grid (rank 0's), as raw doubles in a file beside the peer's results: 16
// MiB would not go well in JSON.
void write_grid(const std::string& file, const std::vector<double>& grid) {
  std::ofstream f(file, std::ios::binary);
  f.write(reinterpret_cast<const char*>(grid.data()), static_cast<std::streamsize>(grid.size() * sizeof(double)));
  if (!f) throw std::runtime_error("cannot write " + file);
}

std::vector<double> read_grid(const std::string& file, std::size_t points) {
  std::ifstream f(file, std::ios::binary);
  std::vector<double> grid(points);
  f.read(reinterpret_cast<char*>(grid.data()), static_cast<std::streamsize>(points * sizeof(double)));
  if (!f || f.peek() != std::ifstream::traits_type::eof())
    throw std::runtime_error(file + " does not hold " + std::to_string(points) + " doubles");
  return grid;
}

int main(int argc, char** argv) {
  bench::peer_apart::init_mpi(argc, argv);
  const int me = bench::mpi_peer::world_rank(), mpi_ranks = bench::mpi_peer::world_size();
  CLI::App app{"REGIONS stencil: a 2D stencil on logical regions, with explicit copies, and bulk-synchronous MPI"};
  app.allow_extras();
  params prm;
  int reps = 5;
  bool quick = false;
  app.add_option("--width", prm.width, "points per row");
  app.add_option("--height", prm.height, "rows");
  app.add_option("--pieces", prm.pieces, "strips of rows (all ranks together)");
  app.add_option("--steps", prm.steps, "steps per run");
  app.add_option("--reps", reps, "repetitions");
  app.add_flag("--quick", quick, "fewer steps and repetitions");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files, true);
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    reps = std::min(reps, 3);
    prm.steps = std::min(prm.steps, 20);
  }
  if (prm.width < 3 || prm.pieces < 1 || prm.height < prm.pieces || prm.height < mpi_ranks || prm.steps < 1 ||
      reps < 1) {
    if (me == 0)
      std::fputs(
          "regions_stencil: need --width >= 3, --pieces >= 1, --height >= pieces and MPI ranks, --steps and "
          "--reps >= 1\n",
          stderr);
    MPI_Finalize();
    return 2;
  }

  std::vector<double> explicit_s, regions_s, mpi_s;
  double diff_explicit = 0, diff_regions = 0;
  bench::mpi_peer::rill_shape shape;
  const bench::peer_apart::turns turns(peer_files.turns, "rill_bench_regions_stencil", reps);
  using side = bench::peer_apart::turns::side;
  const char* const program = "rill_bench_regions_stencil";
  const nlohmann::json peer_config = {{"ranks", mpi_ranks},   {"width", prm.width}, {"height", prm.height},
                                      {"pieces", prm.pieces}, {"steps", prm.steps}, {"reps", reps}};
  if (!peer_files.only.empty()) {
    std::vector<double> mpi_v;
    turns.take(side::peer, peer_config, [&](int rep) {
      mpi_s.push_back(run_mpi(prm, mpi_v));
      if (me == 0) bench::progress("REGIONS stencil rep {}: MPI {:.3f} ms/step", rep, mpi_s.back() * 1e3);
    });
    turns.before_results();  // the grid too is written after Rill's last turn
    const std::string grid_file = peer_files.only + ".grid";
    if (me == 0) write_grid(grid_file, mpi_v);
    turns.hand_over(peer_files.only, program, peer_config, {{"seconds_per_step", mpi_s}, {"grid_file", grid_file}});
    MPI_Finalize();
    return 0;
  }
  if (peer_files.results.empty()) {
    bench::peer_apart::note_no_peer("REGIONS stencil");
    if (me == 0)
      bench::progress("REGIONS stencil: without the MPI version, the final grids are checked against each other");
  }
  std::vector<std::vector<double>> rill_v;  // per repetition: explicit, regions
  turns.take(side::rill, peer_config, [&](int rep) {
    shape = bench::mpi_peer::rill_repetition(argc, argv, [&] {
      const std::vector<piece> pieces = create_pieces(prm);
      const grid_regions regions = make_regions(prm);
      // Two steps of each first: instances made, pages touched, the strips' data in the
      // instances the steps use.
      params warm = prm;
      warm.steps = 2;
      std::vector<double> v_explicit, v_regions;
      (void)run_explicit(warm, pieces, v_explicit);
      (void)run_regions(warm, regions, v_regions);
      // Alternate which goes first, so that neither always runs on a warmer machine.
      for (int k = 0; k < 2; ++k) {
        if ((k + rep) % 2 == 0)
          explicit_s.push_back(run_explicit(prm, pieces, v_explicit));
        else
          regions_s.push_back(run_regions(prm, regions, v_regions));
      }
      diff_regions = std::max(diff_regions, bench::relative_difference(v_explicit, v_regions));
      bench::progress("REGIONS stencil rep {}: regions {:.3f} ms/step, explicit {:.3f} ms/step", rep,
                      regions_s.back() * 1e3, explicit_s.back() * 1e3);
      rill_v.push_back(std::move(v_explicit));
      rill_v.push_back(std::move(v_regions));
      std::vector<rill::event> gone;
      for (const piece& p : pieces) gone.push_back(p.s.inst.destroy());
      rill::merge(gone).wait();
    });
  });
  if (!peer_files.results.empty()) {
    // Every rank reads the grid (rank 0 compares it), so that a bad grid file stops every rank.
    std::vector<double> mpi_v;
    std::tie(mpi_s, mpi_v) = turns.collect(peer_files.results, program, peer_config, [&](const nlohmann::json& in) {
      const auto points = static_cast<std::size_t>(prm.width * prm.height);
      return std::pair{bench::peer_apart::series(in, "seconds_per_step"),
                       read_grid(in.at("grid_file").get<std::string>(), points)};
    });
    if (me == 0) {
      diff_regions = 0;  // against MPI's from here
      for (std::size_t i = 0; i + 1 < rill_v.size(); i += 2) {
        diff_explicit = std::max(diff_explicit, bench::relative_difference(mpi_v, rill_v[i]));
        diff_regions = std::max(diff_regions, bench::relative_difference(mpi_v, rill_v[i + 1]));
      }
    }
  }
  int ok = std::max(diff_explicit, diff_regions) <= tolerance ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (me == 0) {
    const nlohmann::json extra = {{"ranks", shape.ranks},
                                  {"mpi_ranks", mpi_ranks},
                                  {"workers", shape.workers},
                                  {"width", prm.width},
                                  {"height", prm.height},
                                  {"pieces", prm.pieces},
                                  {"steps", prm.steps},
                                  {"max_rel_diff_regions_vs_mpi", diff_regions},
                                  {"max_rel_diff_explicit_vs_mpi", diff_explicit},
                                  {"tolerance", tolerance},
                                  {"checked", ok == 1}};
    const std::string where = ", " + std::to_string(shape.ranks) + " rank(s)";
    const std::string mpi_name = "MPI bulk-synchronous (Isend/Irecv halo rows)";
    const auto emit = [&](const std::string& name, const std::vector<double>& value, const std::string& peer,
                          const std::vector<double>& peer_value) {
      bench::emit_ms("REGIONS", name + where, "time per step", value, peer, peer_value, extra);
    };
    emit("stencil regions vs explicit", regions_s, "explicit copies (data layer, deferred)", explicit_s);
    emit("stencil regions vs MPI", regions_s, mpi_name, mpi_s);
    emit("stencil explicit vs MPI", explicit_s, mpi_name, mpi_s);
    if (!ok)
      std::fprintf(stderr, "regions_stencil: final grids differ from MPI's by more than %g: regions %g, explicit %g\n",
                   tolerance, diff_regions, diff_explicit);
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
