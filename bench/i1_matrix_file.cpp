// I1 (BENCHMARKS.md; issue 22; Iris §VI-A, Fig. 8): a matrix read from a file, split into tiles,
// each tile multiplied by a matrix in memory. One rank, its workers computing, its I/O thread
// reading; the file's pages are dropped from the page cache before every variant, so that each
// reads the disk.
//
//   compute alone      the tiles in memory already: the index launch of the multiplications only.
//   I/O alone          the file read whole, sequentially, by one thread in 8 MiB reads (as dd would):
//                      through the page cache, and again with O_DIRECT (the disk straight into the
//                      buffer, as Rill reads large pieces: --rill:io-direct); the faster of the two
//                      is the disk's time.
//   load then compute  an index launch of tasks that each read their tile from the file (pread),
//                      waited for, then the multiplications: the application's first way.
//   in-task I/O        one index launch whose tasks each read their tile and multiply it: the
//                      application's second way, where tasks at different speeds overlap some of
//                      the I/O with others' computing, and block their worker while they read.
//   attach             the file attached to the matrix's region and acquired, then the index launch
//                      of the multiplications: the runtime reads each tile on its I/O thread and a
//                      tile's task runs once its tile is in.
//
// Metrics: total time of each (ms), the time tasks spent blocked in reads (thread-ms), and
// attach's total over max(compute alone, the faster I/O alone) -- the target (issue 22) is <= 1.1: the I/O
// hidden behind the computation. Also the process's CPU time (user + system) in compute alone and
// in attach: when the workers and the I/O thread are more threads than the machine has cores,
// attach cannot end before its CPU time over the cores ("cpu_bound"), however well it overlaps. Check: every variant's
// products equal compute alone's, bit for bit (else exit 1).
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "rill/attach.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"
#include "rill/rill.hpp"

namespace {

constexpr rill::field<double> value{1};

struct params {
  rill::coord_t tiles = 256;
  rill::coord_t edge = 256;  // a tile is edge x edge doubles, row after row
  rill::coord_t k = 32;      // the matrix in memory is edge x k
};

// The program's state that every task reads (one rank: this process).
params prm;
std::vector<double> b_matrix;
int file_fd = -1;
std::atomic<std::uint64_t> blocked_ns{0};

double a_element(rill::coord_t t, rill::coord_t i) { return static_cast<double>((t * 131 + i * 7) % 1009) / 1009; }

// out (edge x k) = tile (edge x edge) x B (edge x k).
void multiply(const double* tile, double* out) {
  const auto n = static_cast<std::size_t>(prm.edge), k = static_cast<std::size_t>(prm.k);
  for (std::size_t i = 0; i < n * k; ++i) out[i] = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t l = 0; l < n; ++l) {
      const double a = tile[i * n + l];
      const double* b = &b_matrix[l * k];
      double* c = &out[i * k];
      for (std::size_t j = 0; j < k; ++j) c[j] += a * b[j];
    }
}

// Reads tile t from the file into `to`, counting the time blocked.
void read_tile(std::size_t t, double* to) {
  const std::size_t bytes = static_cast<std::size_t>(prm.edge * prm.edge) * sizeof(double);
  const auto start = bench::clock::now();
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n =
        ::pread(file_fd, reinterpret_cast<char*>(to) + done, bytes - done, static_cast<off_t>(t * bytes + done));
    if (n <= 0) throw std::runtime_error("I1: reading the matrix file failed");
    done += static_cast<std::size_t>(n);
  }
  blocked_ns.fetch_add(static_cast<std::uint64_t>(bench::seconds_since(start) * 1e9));
}

void drop_cached(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

struct matrices {
  rill::region a, c;
  rill::partition a_tiles, c_tiles;
  matrices() {
    const rill::coord_t tile_points = prm.edge * prm.edge;
    a = rill::region::create(rill::rect<1>{0, prm.tiles * tile_points - 1}, rill::field_space{value});
    c = rill::region::create(rill::rect<1>{0, prm.tiles * prm.edge * prm.k - 1}, rill::field_space{value});
    a_tiles = rill::partition_equal(a, static_cast<std::size_t>(prm.tiles));
    c_tiles = rill::partition_equal(c, static_cast<std::size_t>(prm.tiles));
  }
  ~matrices() {
    (void)a.destroy();
    (void)c.destroy();
  }
  std::vector<double> products() const {
    rill::promise<std::vector<double>> out;
    rill::launch(
        [](const rill::physical_regions& rs, rill::promise<std::vector<double>> p) {
          const auto v = rs[0].read<double, 1>(value);
          const rill::rect<1> r = rs[0].reg.space<1>().bounds();
          p.put(std::vector<double>(v.ptr({r.lo[0]}), v.ptr({r.lo[0]}) + r.volume()));
        },
        {rill::req(c, {value.id}, rill::privilege::read_only)}, out);
    return out.get_future().get();
  }
};

double* tile_of(const rill::physical_regions& rs, std::size_t i, bool write) {
  const rill::coord_t lo = rs[i].reg.space<1>().bounds().lo[0];
  return write ? rs[i].write<double, 1>(value).ptr({lo}) : const_cast<double*>(rs[i].read<double, 1>(value).ptr({lo}));
}

rill::event multiply_all(const matrices& m) {
  return rill::index_launch(
      [](const rill::physical_regions& rs, std::size_t) { multiply(tile_of(rs, 0, false), tile_of(rs, 1, true)); },
      m.a_tiles,
      {rill::req(m.a_tiles, {value.id}, rill::privilege::read_only),
       rill::req(m.c_tiles, {value.id}, rill::privilege::write_discard)});
}

rill::event load_all(const matrices& m) {
  return rill::index_launch([](const rill::physical_regions& rs, std::size_t t) { read_tile(t, tile_of(rs, 0, true)); },
                            m.a_tiles, {rill::req(m.a_tiles, {value.id}, rill::privilege::write_discard)});
}

// CPU time of the whole process so far (every thread, user and system), in seconds.
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  CLI::App app{"I1: a matrix from a file, tile by tile, multiplied by a matrix in memory"};
  int reps = 3;
  bool quick = false;
  std::string dir = std::filesystem::temp_directory_path().string();
  app.add_option("--tiles", prm.tiles, "tiles of the matrix");
  app.add_option("--edge", prm.edge, "a tile is edge x edge doubles");
  app.add_option("--k", prm.k, "columns of the matrix in memory (the work per tile)");
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--dir", dir, "where the matrix file is written");
  app.add_flag("--quick", quick, "a small matrix, two repetitions");
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);
  if (quick) prm.tiles = 32, reps = 2;

  const std::string path = dir + "/rill-i1-matrix.bin";
  const std::size_t tile_bytes = static_cast<std::size_t>(prm.edge * prm.edge) * sizeof(double);
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::vector<double> tile(static_cast<std::size_t>(prm.edge * prm.edge));
    for (rill::coord_t t = 0; t < prm.tiles; ++t) {
      for (rill::coord_t i = 0; i < prm.edge * prm.edge; ++i) tile[static_cast<std::size_t>(i)] = a_element(t, i);
      std::fwrite(tile.data(), sizeof(double), tile.size(), f);
    }
    std::fclose(f);
  }
  b_matrix.resize(static_cast<std::size_t>(prm.edge * prm.k));
  for (std::size_t i = 0; i < b_matrix.size(); ++i) b_matrix[i] = static_cast<double>(i % 17) / 16;
  file_fd = ::open(path.c_str(), O_RDONLY);

  const int code = rt.run([&] {
    std::vector<double> compute, io, io_direct, load_then, in_task, attached, load_blocked, in_task_blocked;
    std::vector<double> compute_cpu, attached_cpu;
    std::vector<double> reference;
    bool same = true;
    for (int rep = 0; rep < reps; ++rep) {
      {  // compute alone: the tiles loaded (and waited for) before the clock starts
        matrices m;
        load_all(m).wait();
        const auto t0 = bench::clock::now();
        const double cpu0 = cpu_seconds();
        multiply_all(m).wait();
        compute.push_back(bench::seconds_since(t0));
        compute_cpu.push_back(cpu_seconds() - cpu0);
        if (reference.empty()) reference = m.products();
      }
      {  // I/O alone: through the page cache, then direct
        drop_cached(path);
        constexpr std::size_t chunk = std::size_t{8} << 20;
        const std::unique_ptr<char, decltype(&std::free)> buffer(static_cast<char*>(std::aligned_alloc(4096, chunk)),
                                                                 &std::free);
        const auto read_whole = [&](int fd) {
          const auto t0 = bench::clock::now();
          for (off_t at = 0;;) {
            const ssize_t n = ::pread(fd, buffer.get(), chunk, at);
            if (n <= 0) break;
            at += n;
          }
          return bench::seconds_since(t0);
        };
        io.push_back(read_whole(file_fd));
        drop_cached(path);
        const int direct_fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
        io_direct.push_back(direct_fd < 0 ? io.back() : read_whole(direct_fd));
        if (direct_fd >= 0) ::close(direct_fd);
      }
      {  // load then compute
        drop_cached(path);
        matrices m;
        blocked_ns = 0;
        const auto t0 = bench::clock::now();
        load_all(m).wait();
        multiply_all(m).wait();
        load_then.push_back(bench::seconds_since(t0));
        load_blocked.push_back(static_cast<double>(blocked_ns.load()) * 1e-9);
        same = same && m.products() == reference;
      }
      {  // in-task I/O
        drop_cached(path);
        matrices m;
        blocked_ns = 0;
        const auto t0 = bench::clock::now();
        rill::index_launch(
            [](const rill::physical_regions& rs, std::size_t t) {
              double* tile = tile_of(rs, 0, true);
              read_tile(t, tile);
              multiply(tile, tile_of(rs, 1, true));
            },
            m.a_tiles,
            {rill::req(m.a_tiles, {value.id}, rill::privilege::write_discard),
             rill::req(m.c_tiles, {value.id}, rill::privilege::write_discard)})
            .wait();
        in_task.push_back(bench::seconds_since(t0));
        in_task_blocked.push_back(static_cast<double>(blocked_ns.load()) * 1e-9);
        same = same && m.products() == reference;
      }
      {  // attach + acquire
        drop_cached(path);
        matrices m;
        const auto t0 = bench::clock::now();
        const double cpu0 = cpu_seconds();
        rill::attach(m.a, {value.id}, rill::file_resource{path, rill::io_mode::read_only});
        rill::acquire(m.a);
        multiply_all(m).wait();
        attached.push_back(bench::seconds_since(t0));
        attached_cpu.push_back(cpu_seconds() - cpu0);
        rill::detach(m.a).wait();
        same = same && m.products() == reference;
      }
      bench::progress(
          "I1 rep {}: compute {:.1f} ms, I/O {:.1f} ms (direct {:.1f}), load then compute {:.1f} ms, in-task {:.1f} "
          "ms, attach {:.1f} ms; CPU: compute {:.1f} ms, attach {:.1f} ms",
          rep, compute.back() * 1e3, io.back() * 1e3, io_direct.back() * 1e3, load_then.back() * 1e3,
          in_task.back() * 1e3, attached.back() * 1e3, compute_cpu.back() * 1e3, attached_cpu.back() * 1e3);
    }
    if (!same) {
      bench::progress("I1: a variant's products differ from compute alone's");
      return 1;
    }
    const nlohmann::json extra{
        {"tiles", prm.tiles},
        {"tile_bytes", tile_bytes},
        {"file_mib", static_cast<double>(tile_bytes * static_cast<std::size_t>(prm.tiles)) / (1 << 20)},
        {"k", prm.k},
        {"workers", rt.options().workers},
        {"io_threads", rt.options().io_threads},
        {"io_direct_bytes", rt.options().io_direct_bytes}};
    bench::emit_ms("I1", "attach_vs_load_then_compute", "total time", attached, "load then compute", load_then, extra);
    bench::emit_ms("I1", "attach_vs_in_task_io", "total time", attached, "in-task I/O", in_task, extra);
    bench::emit_ms("I1", "compute_alone", "total time", compute, "", {}, extra);
    bench::emit_ms("I1", "io_alone", "total time (one thread reading the file whole)", io, "", {}, extra);
    bench::emit_ms("I1", "io_alone_direct", "total time (one thread reading the file whole, O_DIRECT)", io_direct, "",
                   {}, extra);
    bench::emit_ms("I1", "blocked_load_then_compute", "task time blocked in reads (thread-ms)", load_blocked, "", {},
                   extra);
    bench::emit_ms("I1", "blocked_in_task_io", "task time blocked in reads (thread-ms)", in_task_blocked, "", {},
                   extra);
    bench::emit_ms("I1", "cpu_compute_alone", "CPU time, user + system (thread-ms)", compute_cpu, "", {}, extra);
    bench::emit_ms("I1", "cpu_attach", "CPU time, user + system (thread-ms)", attached_cpu, "", {}, extra);
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    const double cores = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0
                             ? std::max(1, CPU_COUNT(&allowed))
                             : std::max(1u, std::thread::hardware_concurrency());
    std::vector<double> overlap, cpu_bound;
    for (std::size_t r = 0; r < attached.size(); ++r) {
      overlap.push_back(attached[r] / std::max(compute[r], std::min(io[r], io_direct[r])));
      cpu_bound.push_back(attached_cpu[r] / cores);
    }
    bench::emit_ms("I1", "attach_cpu_bound", "attach's CPU time / cores: the least its total can be", cpu_bound, "", {},
                   extra);
    bench::result hidden{"I1",
                         "attach_over_max_compute_io",
                         "attach total / max(compute alone, faster I/O alone)",
                         "ratio",
                         false,
                         overlap,
                         "",
                         {},
                         extra};
    bench::emit(hidden);
    return 0;
  });
  ::close(file_fd);
  std::filesystem::remove(path);
  return code;
}
