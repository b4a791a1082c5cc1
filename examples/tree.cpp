// rill-tree: a storm of remote function calls that grows a random tree across all ranks.
//
// Every node is an active message run on a pseudo-random rank; it spawns one local task per child,
// and each task sends the child on. Leaves report to rank 0, which waits on a latch (whose address
// travels down the tree as a plain value, valid where it is used: on rank 0). Then rank 0 collects
// every rank's counters and prints a summary.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

#include "rill/rill.hpp"

namespace {

struct tree_job {
  rill::latch* leaves_left;  // on rank 0
  std::uint32_t depth;
  std::uint32_t fanout;
  std::uint64_t id;
};

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

void leaf_done(rill::latch* leaves_left) { leaves_left->count_down(); }

void grow(tree_job job) {
  if (job.depth == 0) {
    rill::am::send(0, leaf_done, job.leaves_left);
    return;
  }
  for (std::uint32_t c = 0; c < job.fanout; ++c) {
    rill::spawn([job, c] {
      tree_job child{job.leaves_left, job.depth - 1, job.fanout, job.id * job.fanout + c + 1};
      rill::am::send(static_cast<int>(mix(child.id) % static_cast<std::uint64_t>(rill::rank_n())), grow, child);
    });
  }
}

struct rank_report {
  int rank;
  rill::rank_stats stats;
};

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  CLI::App app{"rill-tree: a distributed tree of remote calls (runtime flags: --rill:help)"};
  std::uint32_t depth = 7;
  std::uint32_t fanout = 6;
  app.add_option("--depth", depth, "depth of the tree")->check(CLI::Range(1, 12));
  app.add_option("--fanout", fanout, "children per inner node")->check(CLI::Range(1, 16));
  CLI11_PARSE(app, argc, argv);

  return rt.run([&] {
    std::uint64_t leaves = 1;
    for (std::uint32_t d = 0; d < depth; ++d) leaves *= fanout;
    rill::latch leaves_left(static_cast<std::ptrdiff_t>(leaves));
    const auto t0 = std::chrono::steady_clock::now();
    rill::am::send(0, grow, tree_job{&leaves_left, depth, fanout, 0});
    leaves_left.wait();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    const int n = rill::rank_n();
    std::vector<rank_report> reports(static_cast<std::size_t>(n));
    rill::latch reported(n);
    for (int r = 0; r < n; ++r) {
      rill::am::send(
          r,
          [](rank_report* out, rill::latch* done) {
            rill::am::send(
                0,
                [](rank_report* o, rill::latch* d, rank_report rep) {
                  o[rep.rank] = rep;
                  d->count_down();
                },
                out, done, rank_report{rill::rank_me(), rill::stats()});
          },
          reports.data(), &reported);
    }
    reported.wait();

    std::uint64_t messages = 0, buffers = 0, nodes = 0;
    std::string tasks;
    for (const auto& rep : reports) {
      messages += rep.stats.messages_sent;
      buffers += rep.stats.buffers_sent;
      nodes += rep.stats.tasks_run;
      tasks += fmt::format("{}{}", tasks.empty() ? "" : " ", rep.stats.tasks_run);
    }
    fmt::print("rill-tree: tree of depth {} and fanout {} ({} leaves) on {} ranks in {:.1f} ms\n", depth, fanout,
               leaves, n, ms);
    fmt::print("summary: messages={} buffers={} aggregation={:.1f} msgs/buffer tasks per rank=[{}]\n", messages,
               buffers, buffers ? double(messages) / double(buffers) : 0.0, tasks);
    return 0;
  });
}
