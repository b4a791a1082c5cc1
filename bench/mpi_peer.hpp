// MPI for the benchmark programs: the MPI levels they initialise (a peer's own processes at
// MPI_THREAD_SINGLE, Rill's at MPI_THREAD_SERIALIZED; peer_apart.hpp runs the two apart), the
// OSU-style message rate and the ping-pong of M4, M5, R1 and COPY (rank 0 the sender, which times;
// rank 1 the receiver), and a Rill repetition between sleeping barriers.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <thread>
#include <vector>

#include "common.hpp"
#include "rill/launcher.hpp"
#include "rill/runtime.hpp"

namespace bench::mpi_peer {

constexpr int tag_data = 11;
constexpr int tag_ack = 12;

// OSU-style message rate: per window, the receiver posts `window` receives and the sender
// `window` sends; both wait for all, then the receiver sends a zero-byte ack. Returns messages per
// second on rank 0 (0 on other ranks).
inline double message_rate(std::size_t bytes, long messages, int window) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const long windows = std::max(1L, messages / window);
  std::vector<std::byte> buf(bytes * static_cast<std::size_t>(window) + 1);
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(window));
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock::now();
  for (long w = 0; w < windows; ++w) {
    for (int i = 0; i < window; ++i) {
      std::byte* p = buf.data() + bytes * static_cast<std::size_t>(i);
      if (me == 0)
        MPI_Isend(p, static_cast<int>(bytes), MPI_BYTE, 1, tag_data, MPI_COMM_WORLD,
                  &reqs[static_cast<std::size_t>(i)]);
      else if (me == 1)
        MPI_Irecv(p, static_cast<int>(bytes), MPI_BYTE, 0, tag_data, MPI_COMM_WORLD,
                  &reqs[static_cast<std::size_t>(i)]);
      else
        reqs[static_cast<std::size_t>(i)] = MPI_REQUEST_NULL;
    }
    MPI_Waitall(window, reqs.data(), MPI_STATUSES_IGNORE);
    if (me == 0)
      MPI_Recv(nullptr, 0, MPI_BYTE, 1, tag_ack, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else if (me == 1)
      MPI_Send(nullptr, 0, MPI_BYTE, 0, tag_ack, MPI_COMM_WORLD);
  }
  const double t = seconds_since(t0);
  return me == 0 ? static_cast<double>(windows * window) / t : 0;
}

// Round trip of `bytes` between ranks 0 and 1 (blocking send/recv ping-pong). Returns seconds per
// round trip on rank 0.
inline double ping_pong(std::size_t bytes, long iterations) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::vector<std::byte> buf(bytes + 1);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock::now();
  for (long i = 0; i < iterations; ++i) {
    if (me == 0) {
      MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, tag_data, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, tag_data, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == 1) {
      MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, tag_data, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, tag_data, MPI_COMM_WORLD);
    }
  }
  const double t = seconds_since(t0);
  return me == 0 ? t / static_cast<double>(iterations) : 0;
}

// Initialises MPI at MPI_THREAD_SINGLE, for a process that runs only an MPI peer and never starts
// Rill: the level a plain MPI program (Task Bench's mpi/nonblock, Graph500's reference) runs at.
// Any higher level costs Open MPI 4.1 on every call: measured here with task-bench's own
// mpi/nonblock, 1,000 steps of spread (3 small messages per rank per step) took 1.39 ms at SINGLE
// and 1.94 ms at SERIALIZED or FUNNELED (medians of 8 interleaved runs, 2026-11-30), so a peer
// that shares Rill's processes (and their level) is weaker than the program it stands for.
inline void init_single(int& argc, char**& argv) { MPI_Init(&argc, &argv); }

// Initialises MPI at MPI_THREAD_SERIALIZED (what Rill's MPI transport needs; Rill then finds MPI
// initialised and leaves MPI_Finalize to us). Exits when the level is not provided.
inline void init(int& argc, char**& argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    std::fputs("bench: this MPI does not provide MPI_THREAD_SERIALIZED\n", stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

// A barrier that sleeps while it waits: MPI_Barrier polls, and would take a core from a rank that
// is measuring something on both cores of the node meanwhile.
inline void sleeping_barrier() {
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  for (int done = 0;;) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// What a Rill runtime ran on.
struct rill_shape {
  int ranks = 1;
  int workers = 1;
  int io_threads = 1;
  std::size_t io_direct_bytes = 0;  // --rill:io-direct (0: never)
};

// One repetition of a program that times Rill beside an MPI peer: a runtime of its own (over a
// copy of the arguments, which the runtime consumes) running `body` as its main task, between
// sleeping barriers so that neither side's ranks poll while the other measures.
template <class F>
rill_shape rill_repetition(int argc, char** argv, F&& body) {
  sleeping_barrier();
  std::vector<char*> args(argv, argv + argc + 1);
  int args_count = argc;
  rill::runtime rt(args_count, args.data());
  const rill_shape shape{rt.ranks(), rt.options().workers, rt.options().io_threads, rt.options().io_direct_bytes};
  rt.run(std::forward<F>(body));
  sleeping_barrier();
  return shape;
}

inline int world_rank() {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  return me;
}

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

}  // namespace bench::mpi_peer
