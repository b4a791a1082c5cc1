// I4 (BENCHMARKS.md; issue 22; Iris §VI-D, Fig. 11): a 2D stencil that saves a snapshot of its whole
// grid every k steps (k = 100, 50, 20, 10, 5), three ways, in the same processes:
//
//   blocking  the stencil on logical regions (stencil_regions.cpp); after every k-th step an index
//             launch whose tasks each write their strip of the grid into the snapshot file (pwrite
//             at the strip's offset), then a task that syncs the file (fdatasync) once they have:
//             the I/O in the application's tasks, which hold their worker meanwhile (one worker
//             per rank: the rank computes nothing else). One sync per snapshot, as MPI_File_sync,
//             on the issuing rank (the ranks share a node, whose page cache holds every rank's
//             writes): a sync per strip halved the bandwidth (460-510 against 940-970 MB/s, 1 rank).
//   attached  the same stencil; after every k-th step a region attached write_discard to the
//             snapshot file (rill::file_resource), a copy of each strip into it (rill::index_copy:
//             the I/O thread writes the file from the strip's instance, no task runs), and its
//             detach (docs/checkpoint.md): the runtime writes, syncs and renames the file on its
//             I/O threads while the next steps run. The steps wait only where data dependences
//             say: the step after next (which overwrites the field copied) for the copy, and a
//             snapshot's copy for the write of the one two before it (two snapshot regions in
//             turn, so that at most two snapshots wait in memory for the disk).
//   mpiio     the stencil's bulk-synchronous MPI version (stencil_mpi.cpp); after every k-th step
//             every rank writes its rows with MPI_File_open, MPI_File_write_at_all, MPI_File_sync
//             and MPI_File_close: an MPI code's usual checkpoint.
//   attached_parts (I/O-bound runs only) as attached, but the snapshot file is made at its size
//             (posix_fallocate) and each rank's strips attached read_write on that rank, its part
//             of the file (rill::attach_options::within), so that every rank writes its own
//             strips, as MPI-IO's ranks do; no temporary file renamed into place.
// and without snapshots (the Rill stencil, and the MPI one). A snapshot is a new file,
// <variant>-<n>.bin, the grid row after row: the same bytes in all three (an attached region's file
// holds its instance's layout, dimension 0, x, fastest). A run's files are deleted after it, outside
// its time (deleting a file is the file system's work, not the snapshot's: on a file system mounted
// with `discard` it costs as much as writing it).
//
// Metrics, per variant and k: the run's total time (its first step to its last step done and its
// last snapshot durable), time per step, and the I/O overhead per step = (total - total without
// snapshots) / steps, each run against a run without snapshots made just before it.
// Then, I/O-bound (a snapshot after every step, --io-steps steps), each variant's write bandwidth
// (snapshot bytes / total time) against the disk's sequential write bandwidth, measured in every
// repetition by `dd if=/dev/zero bs=1M conv=fdatasync` writing as many bytes, through the page
// cache and again with oflag=direct (as Rill writes large pieces: --rill:io-direct), the faster
// of the two. Targets (issue 22):
// attached's overhead per step within 2x from k = 100 to k = 5 while blocking's grows as 1/k;
// I/O-bound, attached >= 0.8 x dd's bandwidth.
// Check: every run's last snapshot file holds its final grid byte for byte, and every final grid
// equals the MPI version's without snapshots (else exit 1).
//
// Snapshots go to a directory of their own under --dir (default: $TMPDIR, else /tmp), removed at
// exit. Run as an MPI singleton with --rill:ranks=1, or under `mpirun -np N`.
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "rill/attach.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"
#include "rill/region_copy.hpp"
#include "stencil.hpp"

namespace {

using namespace stencil;

constexpr rill::field<double> saved{3};  // the field of the attached variant's snapshot regions
constexpr int in_memory = 2;             // the attached variant's snapshot regions, used in turn

// (parts: in the I/O-bound runs only.)
enum class variant { blocking, attached, mpiio, parts };
constexpr variant variants[] = {variant::blocking, variant::attached, variant::mpiio};
constexpr variant io_variants[] = {variant::blocking, variant::attached, variant::mpiio, variant::parts};
const char* name_of(variant v) {
  switch (v) {
    case variant::blocking: return "blocking";
    case variant::attached: return "attached";
    case variant::mpiio: return "mpiio";
    case variant::parts: return "attached_parts";
  }
  return "?";
}

// This run's directory, the same path on every rank (made by rank 0, broadcast).
std::string scratch;

std::string snapshot_path(variant v, int n) { return fmt::format("{}/{}-{}.bin", scratch, name_of(v), n); }

// Deletes the files of the scratch directory and commits the deletions (syncfs; on a file system
// mounted with `discard`, their blocks are discarded then), so that the next run does not share
// the disk with them.
void clear_scratch() {
  for (const auto& entry : std::filesystem::directory_iterator(scratch)) std::filesystem::remove(entry.path());
  const int fd = ::open(scratch.c_str(), O_RDONLY | O_DIRECTORY);
  const bool synced = fd >= 0 && ::syncfs(fd) == 0;
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!synced) throw std::runtime_error(fmt::format("I4: cannot sync {}: {}", scratch, std::strerror(error)));
}

std::size_t grid_bytes(const params& prm) { return static_cast<std::size_t>(prm.width * prm.height) * sizeof(double); }

// Opens the file (made if missing), runs io(fd) and closes it; throws naming the file and `what`
// when io returns false or the file cannot be opened.
template <class F>
void with_file(const std::string& path, const char* what, F&& io) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  const bool done = fd >= 0 && io(fd);
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!done) throw std::runtime_error(fmt::format("I4: {} {} failed: {}", what, path, std::strerror(error)));
}

// A point of the blocking variant's snapshot launch: its strip of the field step `step` wrote, into
// snapshot n.
void write_strip(const rill::physical_regions& rs, std::size_t, params prm, int step, int n) {
  const auto grid = rs[0].read<double, 2>(output_of(step));
  const rill::rect<2> b = rs[0].reg.space<2>().bounds();
  const std::size_t row_bytes = static_cast<std::size_t>(prm.width) * sizeof(double);
  if (grid.stride(1) != static_cast<std::ptrdiff_t>(row_bytes))
    throw std::logic_error("I4: a strip's rows are not contiguous in its instance");
  const auto* data = reinterpret_cast<const char*>(grid.ptr({0, b.lo[1]}));
  const std::size_t bytes = row_bytes * static_cast<std::size_t>(b.hi[1] - b.lo[1] + 1);
  const auto offset = static_cast<off_t>(row_bytes) * b.lo[1];
  with_file(snapshot_path(variant::blocking, n), "writing", [&](int fd) {
    for (std::size_t done = 0; done < bytes;) {
      const ssize_t w = ::pwrite(fd, data + done, bytes - done, offset + static_cast<off_t>(done));
      if (w <= 0) return false;
      done += static_cast<std::size_t>(w);
    }
    return true;
  });
}

// The blocking variant's task that makes snapshot n durable once every strip is written.
void sync_snapshot(int n) {
  with_file(snapshot_path(variant::blocking, n), "syncing", [](int fd) { return ::fdatasync(fd) == 0; });
}

// A region the attached variant copies a snapshot into, cut into the grid's strips (so that each
// strip's copy runs where the strip is).
// (by_rank: the strips each rank computes, by the stencil's block mapper, as the attached_parts
// variant attaches them.)
struct snapshot_region {
  rill::region root;
  rill::partition strips, by_rank;
};

snapshot_region make_snapshot_region(const params& prm) {
  snapshot_region r;
  r.root = rill::region::create(rill::rect<2>{{0, 0}, {prm.width - 1, prm.height - 1}}, rill::field_space{saved});
  std::vector<rill::index_space<2>> strips, by_rank(static_cast<std::size_t>(rill::rank_n()));
  for (int p = 0; p < prm.pieces; ++p) {
    strips.emplace_back(rill::rect<2>{{0, first_row(prm, p)}, {prm.width - 1, first_row(prm, p + 1) - 1}});
    auto& mine = by_rank[static_cast<std::size_t>(owner_of(prm, p, rill::rank_n()))];
    mine = mine.unite(strips.back());
  }
  r.strips = rill::partition_by_subspaces(r.root, strips);
  r.by_rank = rill::partition_by_subspaces(r.root, by_rank);
  return r;
}

// Seconds of a Rill run with a snapshot after every k-th step (k = 0: none); `values` gets the
// final grid.
double run_rill(const params& prm, const grid_regions& g, const std::vector<snapshot_region>& pool, variant v, int k,
                std::vector<double>& values) {
  using rill::privilege;
  regions_hook hook;
  if (k > 0 && v == variant::blocking)
    hook = [&](int s) -> rill::event {
      if ((s + 1) % k) return rill::event::none();
      const rill::event written = rill::index_launch(
          write_strip, g.strips, {rill::req(g.strips, {output_of(s).id}, privilege::read_only)}, prm, s, (s + 1) / k);
      return rill::proc(rill::rank_me()).spawn(rill::after(written), sync_snapshot, (s + 1) / k);
    };
  else if (k > 0 && v == variant::attached)
    hook = [&](int s) -> rill::event {
      if ((s + 1) % k) return rill::event::none();
      const int n = (s + 1) / k;
      const snapshot_region& to = pool[static_cast<std::size_t>(n % in_memory)];
      rill::attach(to.root, {saved.id}, rill::file_resource{snapshot_path(v, n), rill::io_mode::write_discard});
      rill::index_copy(g.strips, rill::req(g.strips, {output_of(s).id}, privilege::read_only),
                       rill::req(to.strips, {saved.id}, privilege::write_discard));
      return rill::detach(to.root);
    };
  else if (k > 0 && v == variant::parts)
    hook = [&](int s) -> rill::event {
      if ((s + 1) % k) return rill::event::none();
      const int n = (s + 1) / k;
      const snapshot_region& to = pool[static_cast<std::size_t>(n % in_memory)];
      const std::string path = snapshot_path(v, n);
      // Room for every byte first, as a write_discard attach makes it.
      with_file(path, "sizing",
                [&](int fd) { return ::posix_fallocate(fd, 0, static_cast<off_t>(grid_bytes(prm))) == 0; });
      // Each rank's strips attached on it, their part of the file, which it writes.
      const auto ranks = static_cast<std::size_t>(rill::rank_n());
      for (std::size_t r = 0; r < ranks; ++r)
        rill::attach(to.by_rank.subregion(r), {saved.id}, rill::file_resource{path, rill::io_mode::read_write},
                     rill::event::none(), {.rank = static_cast<int>(r), .within = to.root});
      rill::index_copy(g.strips, rill::req(g.strips, {output_of(s).id}, privilege::read_only),
                       rill::req(to.strips, {saved.id}, privilege::write_discard));
      std::vector<rill::event> detached;
      for (std::size_t r = 0; r < ranks; ++r) detached.push_back(rill::detach(to.by_rank.subregion(r)));
      return rill::merge(detached);
    };
  return run_regions(prm, g, values, hook) * prm.steps;
}

// Aborts every rank on a failed MPI call (MPI-IO returns its errors by default).
void check_mpi(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  std::fprintf(stderr, "I4: %s failed: %.*s\n", what.c_str(), length, text);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// Seconds of an MPI run with a snapshot after every k-th step (k = 0: none); `values` gets, on
// rank 0, the final grid.
double run_mpiio(const params& prm, int k, std::vector<double>& values) {
  mpi_hook hook;
  if (k > 0)
    hook = [&](int s, std::span<const double> rows, coord_t first_row) {
      if ((s + 1) % k) return;
      const std::string path = snapshot_path(variant::mpiio, (s + 1) / k);
      MPI_File file;
      check_mpi(MPI_File_open(MPI_COMM_WORLD, path.c_str(), MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &file),
                "MPI_File_open " + path);
      const auto offset = static_cast<MPI_Offset>(first_row * prm.width * static_cast<coord_t>(sizeof(double)));
      check_mpi(MPI_File_write_at_all(file, offset, rows.data(), static_cast<int>(rows.size()), MPI_DOUBLE,
                                      MPI_STATUS_IGNORE),
                "MPI_File_write_at_all " + path);
      check_mpi(MPI_File_sync(file), "MPI_File_sync " + path);
      check_mpi(MPI_File_close(&file), "MPI_File_close " + path);
    };
  return run_mpi(prm, values, hook) * prm.steps;
}

// True when the file holds exactly the grid's bytes.
bool file_holds(const std::string& path, const std::vector<double>& grid) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  std::vector<double> got(grid.size() + 1);  // one more: a longer file does not hold the grid
  const std::size_t n = std::fread(got.data(), sizeof(double), got.size(), f);
  std::fclose(f);
  return n == grid.size() && std::memcmp(got.data(), grid.data(), grid.size() * sizeof(double)) == 0;
}

// The disk's sequential write bandwidth (bytes/s) by dd: `mib` MiB of zeros written into the
// (empty) scratch directory and synced, the time dd reports; `flags` are dd's more.
double dd_run(std::size_t mib, const char* flags) {
  const std::string file = scratch + "/dd.bin";
  const std::string command =
      fmt::format("LC_ALL=C dd if=/dev/zero of='{}' bs=1M count={} conv=fdatasync {} 2>&1", file, mib, flags);
  std::FILE* p = ::popen(command.c_str(), "r");
  if (!p) throw std::runtime_error("I4: cannot run dd");
  std::string out;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, p)) out += buffer;
  const int status = ::pclose(p);
  clear_scratch();
  // Its last line: "N bytes (...) copied, T s, R MB/s".
  const std::size_t copied = out.rfind(" copied, ");
  const std::size_t line = copied == std::string::npos ? 0 : out.rfind('\n', copied);
  if (status != 0 || copied == std::string::npos) throw std::runtime_error("I4: `" + command + "` failed: " + out);
  const double bytes = std::strtod(out.c_str() + (line == std::string::npos ? 0 : line + 1), nullptr);
  const double seconds = std::strtod(out.c_str() + copied + 9, nullptr);
  if (bytes <= 0 || seconds <= 0) throw std::runtime_error("I4: cannot read dd's report: " + out);
  return bytes / seconds;
}
// Through the page cache and direct: the faster.
double dd_bandwidth(std::size_t mib) { return std::max(dd_run(mib, ""), dd_run(mib, "oflag=direct")); }

// Makes the scratch directory on rank 0 and gives its path to every rank.
void make_scratch(const std::string& under) {
  std::string path = under + "/rill-i4-XXXXXX";
  int length = 0;
  if (bench::mpi_peer::world_rank() == 0) {
    if (!::mkdtemp(path.data())) {
      std::fprintf(stderr, "I4: cannot make a directory in %s: %s\n", under.c_str(), std::strerror(errno));
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    length = static_cast<int>(path.size());
  }
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  path.resize(static_cast<std::size_t>(length));
  MPI_Bcast(path.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  scratch = path;
}

// Seconds of one configuration, one per repetition.
using times = std::vector<double>;

nlohmann::json spread(const times& seconds) {
  const bench::summary s = bench::summarize(seconds);
  return {{"median", s.median * 1e3}, {"min", s.min * 1e3}, {"max", s.max * 1e3}};
}

// One JSON line of I4 (bench/common.hpp), with a peer when `peer` is named.
void emit(const std::string& case_name, const std::string& metric, const std::string& unit, bool higher_is_better,
          times values, const nlohmann::json& extra, const std::string& peer = "", times peer_values = {}) {
  bench::emit(
      {"I4", case_name, metric, unit, higher_is_better, std::move(values), peer, std::move(peer_values), extra});
}

}  // namespace

int main(int argc, char** argv) {
  bench::mpi_peer::init(argc, argv);
  const int me = bench::mpi_peer::world_rank(), mpi_ranks = bench::mpi_peer::world_size();
  CLI::App app{"I4: a stencil with a snapshot every k steps: in-task blocking writes, attached files, MPI-IO"};
  app.allow_extras();
  params prm;
  prm.steps = 200;
  int reps = 3, io_steps = 32;
  bool quick = false;
  std::vector<int> intervals{100, 50, 20, 10, 5};
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir = tmpdir && *tmpdir ? tmpdir : "/tmp";
  app.add_option("--width", prm.width, "points per row");
  app.add_option("--height", prm.height, "rows");
  app.add_option("--pieces", prm.pieces, "strips of rows (all ranks together)");
  app.add_option("--steps", prm.steps, "steps per run (a multiple of every k)");
  app.add_option("--every", intervals, "the values of k: steps between snapshots");
  app.add_option("--io-steps", io_steps, "steps of the I/O-bound runs (a snapshot after each)");
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--dir", dir, "where the snapshots' scratch directory is made");
  app.add_flag("--quick", quick, "a 1024 x 512 grid, 100 steps, 16 I/O-bound steps, one repetition");
  CLI11_PARSE(app, argc, argv);
  if (quick) prm.width = 1024, prm.height = 512, prm.steps = 100, io_steps = 16, reps = 1;
  bool fits = prm.width >= 3 && prm.pieces >= 1 && prm.height >= prm.pieces && prm.height >= mpi_ranks &&
              prm.steps >= 1 && io_steps >= 1 && reps >= 1 && !intervals.empty();
  for (int k : intervals) fits = fits && k >= 1 && prm.steps % k == 0;
  if (!fits) {
    if (me == 0)
      std::fputs(
          "I4: need --width >= 3, --pieces >= 1, --height >= pieces and MPI ranks, --steps, --io-steps and --reps "
          ">= 1, and --steps a multiple of every --every\n",
          stderr);
    MPI_Finalize();
    return 2;
  }
  make_scratch(dir);
  params io_bound = prm;
  io_bound.steps = io_steps;
  const std::size_t io_bytes = grid_bytes(prm) * static_cast<std::size_t>(io_steps);

  times rill_none, mpi_none, dd;
  // The runs without snapshots next to each k's (the overhead is measured against the nearest:
  // the machine drifts by more than the overhead at k = 100).
  std::map<int, times> rill_none_at, mpi_none_at;
  std::map<variant, std::map<int, times>> total;  // per variant and k
  std::map<variant, times> io_total;              // the I/O-bound runs
  std::vector<double> reference;                  // rank 0: the final grid of the MPI run without snapshots
  bool checked = true;
  std::string failure;
  bench::mpi_peer::rill_shape shape;
  // On rank 0, after a run with a snapshot every k steps (0: none): its last snapshot holds its
  // final grid, which equals the reference's unless the run had other steps; then its files go.
  const auto check = [&](variant v, const params& p, int k, const std::vector<double>& values) {
    if (me != 0) return;
    const bool file_ok = k == 0 || file_holds(snapshot_path(v, p.steps / k), values);
    const bool grid_ok = p.steps != prm.steps || values == reference;
    if (!file_ok || !grid_ok)
      bench::progress("I4: {} every {} steps: {}", name_of(v), k,
                      grid_ok ? "the last snapshot does not hold the final grid" : "the final grid differs from MPI's");
    checked = checked && file_ok && grid_ok;
    clear_scratch();
  };

  for (int rep = 0; rep < reps; ++rep) {
    // The disk alone, the other ranks sleeping.
    if (me == 0) dd.push_back(dd_bandwidth(std::max<std::size_t>(io_bytes >> 20, 1)));
    bench::mpi_peer::sleeping_barrier();

    std::vector<double> values;
    if (rep == 0) {  // the pages touched and the MPI connections made before the first timed run
      (void)run_mpiio(prm, 0, values);
      params warm = prm;
      warm.steps = 2;
      (void)run_mpiio(warm, 1, values);
      if (me == 0) clear_scratch();
    }
    mpi_none.push_back(run_mpiio(prm, 0, values));
    if (rep == 0) reference = values;
    check(variant::mpiio, prm, 0, values);
    for (int k : intervals) {
      mpi_none_at[k].push_back(run_mpiio(prm, 0, values));
      total[variant::mpiio][k].push_back(run_mpiio(prm, k, values));
      check(variant::mpiio, prm, k, values);
    }
    io_total[variant::mpiio].push_back(run_mpiio(io_bound, 1, values));
    check(variant::mpiio, io_bound, 1, values);

    shape = bench::mpi_peer::rill_repetition(argc, argv, [&] {
      try {
        const grid_regions g = make_regions(prm);
        std::vector<snapshot_region> pool;
        for (int i = 0; i < in_memory; ++i) pool.push_back(make_snapshot_region(prm));
        // Two snapshots of each Rill variant first: instances made, pages touched.
        params warm = prm;
        warm.steps = 2;
        for (variant v : {variant::blocking, variant::attached, variant::parts})
          (void)run_rill(warm, g, pool, v, 1, values);
        clear_scratch();
        rill_none.push_back(run_rill(prm, g, pool, variant::blocking, 0, values));
        check(variant::blocking, prm, 0, values);
        // The two variants in turn, the first alternating, so that neither always runs on a warmer
        // machine.
        for (int k : intervals) {
          rill_none_at[k].push_back(run_rill(prm, g, pool, variant::blocking, 0, values));
          for (int i = 0; i < 2; ++i) {
            const variant v = (i + rep) % 2 ? variant::attached : variant::blocking;
            total[v][k].push_back(run_rill(prm, g, pool, v, k, values));
            check(v, prm, k, values);
          }
        }
        for (int i = 0; i < 3; ++i) {
          const variant v = std::array{variant::blocking, variant::attached, variant::parts}[(i + rep) % 3];
          io_total[v].push_back(run_rill(io_bound, g, pool, v, 1, values));
          check(v, io_bound, 1, values);
        }
      } catch (const std::exception& e) {
        failure = e.what();
      }
    });
    int failed = failure.empty() ? 0 : 1;
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (failed) break;
    if (me == 0) {
      std::string line = fmt::format("I4 rep {}: dd {:.0f} MB/s; ms without snapshots: regions {:.0f}, MPI {:.0f}", rep,
                                     dd.back() / 1e6, rill_none.back() * 1e3, mpi_none.back() * 1e3);
      for (variant v : variants) {
        line += fmt::format("; {} every", name_of(v));
        for (int k : intervals) line += fmt::format(" {}: {:.0f}", k, total[v][k].back() * 1e3);
        line += fmt::format(", every step: {:.0f} MB/s", static_cast<double>(io_bytes) / io_total[v].back() / 1e6);
      }
      line += fmt::format("; {} every step: {:.0f} MB/s", name_of(variant::parts),
                          static_cast<double>(io_bytes) / io_total[variant::parts].back() / 1e6);
      bench::progress("{}", line);
    }
  }

  int ok = checked && failure.empty() ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (me == 0 && !failure.empty()) bench::progress("I4: {}", failure);
  if (me == 0 && failure.empty()) {
    const nlohmann::json common = {{"ranks", shape.ranks},
                                   {"mpi_ranks", mpi_ranks},
                                   {"workers", shape.workers},
                                   {"io_threads", shape.io_threads},
                                   {"io_direct_bytes", shape.io_direct_bytes},
                                   {"width", prm.width},
                                   {"height", prm.height},
                                   {"pieces", prm.pieces},
                                   {"steps", prm.steps},
                                   {"snapshot_mib", static_cast<double>(grid_bytes(prm)) / (1 << 20)},
                                   {"checked", ok == 1}};
    const std::string where =
        fmt::format(", {} rank(s){}", shape.ranks,
                    shape.io_direct_bytes ? fmt::format(", direct from {} KiB", shape.io_direct_bytes >> 10) : "");
    bench::emit_ms("I4", "no snapshots, regions" + where, "total time", rill_none, "", {}, common);
    bench::emit_ms("I4", "no snapshots, MPI" + where, "total time", mpi_none, "", {}, common);
    std::map<variant, std::map<int, double>> overhead_median;
    for (variant v : variants)
      for (int k : intervals) {
        const times& base = (v == variant::mpiio ? mpi_none_at : rill_none_at)[k];
        const times& t = total[v][k];
        times overhead;  // ms per step, each run against the run without snapshots before it
        for (std::size_t r = 0; r < t.size(); ++r) overhead.push_back((t[r] - base[r]) / prm.steps * 1e3);
        overhead_median[v][k] = bench::summarize(overhead).median;
        nlohmann::json extra = common;
        extra["variant"] = name_of(v);
        extra["k"] = k;
        extra["snapshots"] = prm.steps / k;
        extra["total_ms"] = spread(t);
        extra["step_ms"] = bench::summarize(t).median * 1e3 / prm.steps;
        extra["baseline_total_ms"] = bench::summarize(base).median * 1e3;
        emit(fmt::format("{} every {} steps{}", name_of(v), k, where), "I/O overhead per step", "ms", false, overhead,
             extra);
      }
    for (int k : intervals) {
      nlohmann::json extra = common;
      extra["k"] = k;
      bench::emit_ms("I4", fmt::format("attached vs blocking, every {} steps{}", k, where), "total time",
                     total[variant::attached][k], "blocking (pwrite + fdatasync in the tasks)",
                     total[variant::blocking][k], extra);
      bench::emit_ms("I4", fmt::format("attached vs mpiio, every {} steps{}", k, where), "total time",
                     total[variant::attached][k], "MPI-IO (write_at_all + sync)", total[variant::mpiio][k], extra);
    }
    // How the overhead grows from the longest interval to the shortest (the target: attached
    // within 2x), from the medians: as a difference, since at the longest the overhead is about
    // as small as the runs' spread (and a ratio of it says nothing).
    const int longest = *std::max_element(intervals.begin(), intervals.end());
    const int shortest = *std::min_element(intervals.begin(), intervals.end());
    for (variant v : variants) {
      nlohmann::json extra = common;
      extra["variant"] = name_of(v);
      extra["overhead_ms_per_step"] = {{std::to_string(longest), overhead_median[v][longest]},
                                       {std::to_string(shortest), overhead_median[v][shortest]}};
      emit(fmt::format("{} overhead growth, every {} to every {} steps{}", name_of(v), longest, shortest, where),
           fmt::format("median overhead per step, every {} minus every {} steps", shortest, longest), "ms", false,
           {overhead_median[v][shortest] - overhead_median[v][longest]}, extra);
    }
    // I/O-bound: bytes written per second against dd's.
    times dd_mb;
    for (double b : dd) dd_mb.push_back(b / 1e6);
    nlohmann::json io_extra = common;
    io_extra["io_steps"] = io_steps;
    io_extra["mib_written"] = io_bytes >> 20;
    emit("dd sequential write" + where, "write bandwidth (dd bs=1M conv=fdatasync)", "MB/s", true, dd_mb, io_extra);
    for (variant v : io_variants) {
      times mb;
      for (double t : io_total[v]) mb.push_back(static_cast<double>(io_bytes) / t / 1e6);
      nlohmann::json extra = io_extra;
      extra["variant"] = name_of(v);
      extra["total_ms"] = spread(io_total[v]);
      emit(fmt::format("{} I/O-bound (a snapshot every step) vs dd{}", name_of(v), where),
           "write bandwidth (snapshot bytes / total time)", "MB/s", true, mb, extra, "dd conv=fdatasync", dd_mb);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) std::filesystem::remove_all(scratch);
  MPI_Finalize();
  return ok ? 0 : 1;
}
