// COPY — instance copies (Realm §7; BENCHMARKS.md COPY). Run under `mpirun -np 2`.
//
// Local, on rank 0, 16 MiB each: a field of 2 Mi doubles between struct-of-arrays instances
// (system -> system, system -> registered, registered -> system), and an array-of-structs <->
// struct-of-arrays transpose of two 8-byte fields over 1 Mi points. Peer, in the MPI peer's rank 0
// (below): one memcpy of the same 16 MiB between two buffers of their own (the machine's copy rate).
// Remote: 16 MiB (one field of 2 Mi doubles) from an instance on rank 0 to one on rank 1, into
// system and into registered memory. Peer: MPI Isend/Irecv of 16 MiB messages, a window of 4 (OSU
// bandwidth style), in processes of its own at MPI_THREAD_SINGLE (peer_apart.hpp), which also
// time the memcpy.
// GB/s = bytes of field data moved / time from the copy's call to its event.
//
// Repetitions alternate peer and Rill, each Rill repetition in a runtime of its own: bench/run
// starts the peer's run and Rill's together, and they take turns (--mpi-peer-turns; M4 does the
// same, for the memory-bandwidth drift of these hosts).
#include <CLI/CLI.hpp>

#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"

namespace {

constexpr std::size_t bytes = std::size_t{16} << 20;
constexpr rill::field<double> a{1};
constexpr rill::field<double> b{2};

struct local_case {
  std::string name;
  rill::memory src, dst;
  rill::layout src_layout, dst_layout;
  bool two_fields;  // the transpose: a and b over half the points
};

std::vector<local_case> local_cases() {
  return {{"soa system -> system", rill::memory::system(0), rill::memory::system(0), rill::layout::soa(),
           rill::layout::soa(), false},
          {"soa system -> registered", rill::memory::system(0), rill::memory::registered(0), rill::layout::soa(),
           rill::layout::soa(), false},
          {"soa registered -> system", rill::memory::registered(0), rill::memory::system(0), rill::layout::soa(),
           rill::layout::soa(), false},
          {"aos -> soa transpose", rill::memory::system(0), rill::memory::system(0), rill::layout::aos(),
           rill::layout::soa(), true},
          {"soa -> aos transpose", rill::memory::system(0), rill::memory::system(0), rill::layout::soa(),
           rill::layout::aos(), true}};
}

// GB/s of one copy between fresh instances (after one untimed copy to touch every page).
double rill_copy(rill::memory src_m, rill::memory dst_m, const rill::layout& sl, const rill::layout& dl,
                 bool two_fields) {
  const rill::coord_t points = static_cast<rill::coord_t>(bytes / sizeof(double) / (two_fields ? 2 : 1));
  const rill::field_space fs = two_fields ? rill::field_space{a, b} : rill::field_space{a};
  const std::vector<rill::field_id> fields =
      two_fields ? std::vector<rill::field_id>{a, b} : std::vector<rill::field_id>{a};
  auto [src, s_ready] = rill::instance::create(src_m, rill::rect<1>{0, points - 1}, fs, sl);
  auto [dst, d_ready] = rill::instance::create(dst_m, rill::rect<1>{0, points - 1}, fs, dl);
  rill::event filled = rill::fill(src, a, 1.0, s_ready);
  if (two_fields) filled = rill::merge(std::vector<rill::event>{filled, rill::fill(src, b, 2.0, s_ready)});
  rill::copy(src, dst, fields, rill::merge(std::vector<rill::event>{filled, d_ready})).wait();
  const auto t0 = bench::clock::now();
  rill::copy(src, dst, fields).wait();
  const double gbs = static_cast<double>(bytes) / bench::seconds_since(t0) / 1e9;
  src.destroy().wait();
  dst.destroy().wait();
  return gbs;
}

double memcpy_rate() {
  std::vector<std::byte> from(bytes, std::byte{1}), to(bytes);
  std::memcpy(to.data(), from.data(), bytes);
  const auto t0 = bench::clock::now();
  std::memcpy(to.data(), from.data(), bytes);
  const double gbs = static_cast<double>(bytes) / bench::seconds_since(t0) / 1e9;
  bench::keep(to[bytes / 2]);
  return gbs;
}

}  // namespace

int main(int argc, char** argv) {
  bench::peer_apart::init_mpi(argc, argv);
  const int me = bench::mpi_peer::world_rank();
  if (bench::mpi_peer::world_size() != 2) {
    if (me == 0) std::fputs("COPY: run under mpirun -np 2\n", stderr);
    MPI_Finalize();
    return 2;
  }
  CLI::App app{"COPY: instance copies against memcpy and MPI bandwidth (mpirun -np 2)"};
  app.allow_extras();
  int reps = 7;
  bool quick = false;
  app.add_option("--reps", reps, "repetitions");
  app.add_flag("--quick", quick, "fewer repetitions");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files, true);
  CLI11_PARSE(app, argc, argv);
  if (quick) reps = std::min(reps, 5);

  const std::vector<local_case> locals = local_cases();
  const std::vector<rill::memory> remote_dst{rill::memory::system(1), rill::memory::registered(1)};
  std::vector<double> peer_memcpy, peer_mpi;
  std::vector<std::vector<double>> rill_local(locals.size()), rill_remote(remote_dst.size());
  const long mpi_messages = 16;
  const int window = 4;

  auto peer_repetition = [&](int r) {
    if (me == 0) peer_memcpy.push_back(memcpy_rate());
    if (r == 0) bench::mpi_peer::message_rate(bytes, window, window);
    peer_mpi.push_back(bench::mpi_peer::message_rate(bytes, mpi_messages, window) * static_cast<double>(bytes) / 1e9);
    if (me == 0)
      bench::progress("COPY peers rep {}: memcpy {:.2f} GB/s, mpi {:.2f} GB/s", r, peer_memcpy.back(), peer_mpi.back());
  };
  auto rill_repetition = [&](int r) {
    std::vector<char*> args(argv, argv + argc + 1);
    int args_count = argc;
    rill::runtime rt(args_count, args.data());
    rt.run([&] {
      for (std::size_t c = 0; c < locals.size(); ++c) {
        const local_case& k = locals[c];
        rill_local[c].push_back(rill_copy(k.src, k.dst, k.src_layout, k.dst_layout, k.two_fields));
        bench::progress("COPY rill {} rep {}: {:.2f} GB/s", k.name, r, rill_local[c].back());
      }
      for (std::size_t c = 0; c < remote_dst.size(); ++c) {
        rill_remote[c].push_back(
            rill_copy(rill::memory::system(0), remote_dst[c], rill::layout::soa(), rill::layout::soa(), false));
        bench::progress("COPY rill remote rep {}: {:.2f} GB/s", r, rill_remote[c].back());
      }
    });
  };
  const bench::peer_apart::turns turns(peer_files.turns, "rill_bench_copy", reps);
  using side = bench::peer_apart::turns::side;
  const char* const program = "rill_bench_copy";
  const nlohmann::json peer_config = {{"reps", reps}, {"bytes", bytes}};
  if (!peer_files.only.empty()) {
    turns.take(side::peer, peer_config, peer_repetition);
    turns.hand_over(peer_files.only, program, peer_config, {{"memcpy_gbps", peer_memcpy}, {"mpi_gbps", peer_mpi}});
    MPI_Finalize();
    return 0;
  }
  if (peer_files.results.empty()) bench::peer_apart::note_no_peer("COPY");
  turns.take(side::rill, peer_config, rill_repetition);
  if (!peer_files.results.empty()) {
    std::tie(peer_memcpy, peer_mpi) =
        turns.collect(peer_files.results, program, peer_config, [](const nlohmann::json& in) {
          return std::pair{bench::peer_apart::series(in, "memcpy_gbps"), bench::peer_apart::series(in, "mpi_gbps")};
        });
  }

  if (me == 0) {
    for (std::size_t c = 0; c < locals.size(); ++c) {
      bench::result res{"COPY",        locals[c].name + ", 16 MiB, 1 rank", "copy bandwidth", "GB/s", true,
                        rill_local[c], "memcpy of the same 16 MiB",         peer_memcpy};
      res.extra = {{"bytes", bytes}, {"ranks", 1}, {"transport", "mpi"}};
      bench::emit(res);
    }
    const char* names[] = {"soa system rank 0 -> system rank 1, 16 MiB",
                           "soa system rank 0 -> registered rank 1, 16 MiB"};
    for (std::size_t c = 0; c < remote_dst.size(); ++c) {
      bench::result res{"COPY",
                        names[c],
                        "copy bandwidth",
                        "GB/s",
                        true,
                        rill_remote[c],
                        "MPI Isend/Irecv 16 MiB, window 4, processes of its own at MPI_THREAD_SINGLE",
                        peer_mpi};
      res.extra = {{"bytes", bytes}, {"ranks", 2}, {"transport", "mpi"}};
      bench::emit(res);
    }
  }
  MPI_Finalize();
  return 0;
}
