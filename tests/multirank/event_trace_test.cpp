// The hang report and the event graph on every rank (docs/debugging.md): a deliberate deadlock
// round a ring of ranks — rank r waits for rank r+1's user event and would trigger its own only
// after that — must make every rank report the two events it is part of, their owners and who
// waits; a watcher task per rank reads the report from this process's captured stderr, then rank
// 0's watcher breaks the cycle and the run ends cleanly. Each rank writes its part of the graph.
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "stderr_capture.hpp"

namespace rill_test {
namespace {

using namespace std::chrono_literals;

// Watchers sleep on one worker while another goes idle and reports: two workers per rank.
std::vector<setup> trace_setups() {
  if (under_mpi()) return {{0, 2, 0}};
  return {{1, 2, 0}, {2, 2, 0}, {3, 2, 5}, {4, 2, 7}};
}

class event_trace : public ::testing::TestWithParam<setup> {};

stderr_capture* captured = nullptr;   // this process's stderr while a test runs
rill::latch* all_reported = nullptr;  // on rank 0: opens once every rank's watcher found its report
rill::event owned_here[max_ranks];    // rank r's user event, as its watcher saw it

std::string name(rill::event e) {
  return "(rank " + std::to_string(e.owner()) + ", slot " + std::to_string(e.slot()) + ", gen " +
         std::to_string(e.generation()) + ")";
}

void expect_in(const std::string& text, const std::string& what) {
  if (text.find(what) == std::string::npos)
    throw std::logic_error("rank " + std::to_string(rill::rank_me()) + "'s hang report lacks \"" + what + "\":\n" +
                           text);
}

// Rank r: waits for `next` (rank r+1's), then triggers its own event — rank 0 leaves that to its
// watcher, which breaks the cycle.
void ring(rill::user_event mine, rill::event next) {
  next.wait();
  if (rill::rank_me() != 0) mine.trigger();
}

void watch(rill::user_event mine, rill::event next) {
  const int me = rill::rank_me();
  const int n = rill::rank_n();
  owned_here[me] = mine;
  const std::string end = "rill: end of rank " + std::to_string(me) + "'s hang report";
  const bool found = captured->wait_for(end);
  rill::am::send(0, [] { all_reported->count_down(); });
  if (!found) throw std::logic_error("no hang report on rank " + std::to_string(me));
  const std::string report = section(captured->text(), "rill: hang report: rank " + std::to_string(me) + " ", end);
  expect_in(report, "a task suspended in event::wait()");
  if (n == 1) {
    expect_in(report, name(mine) + " user_event created on rank 0, untriggered; waited on by:\n      a task suspended");
  } else {
    expect_in(report, name(next) + " owned by rank " + std::to_string(next.owner()));
    expect_in(report, name(mine) + " user_event created on rank " + std::to_string(me) +
                          ", untriggered; waited on by:\n      waiters on rank(s) " + std::to_string((me + n - 1) % n));
  }
  expect_in(report, "only the program can trigger: " + name(mine));
  if (me != 0) return;
  all_reported->wait();
  mine.trigger();  // every rank has reported: break the cycle
}

std::string graph_prefix() {
  // One name per test run, the same in every process of an mpirun job.
  const char* job = std::getenv("PMIX_NAMESPACE");
  std::string id = job ? std::string(job) : std::to_string(getpid());
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return "/tmp/rill_ring_" + id;
}

TEST_P(event_trace, a_deadlock_round_the_ranks_is_reported_by_every_rank_then_resolved) {
  stderr_capture err;
  captured = &err;
  const std::string graph = graph_prefix() + ".dot";
  args a(GetParam(), {"--rill:hang-report-s=0.2", "--rill:event-graph=" + graph});
  std::vector<rill::user_event> events(max_ranks);
  int ranks = 0;
  {
    rill::runtime rt(a.argc, a.argv());
    ranks = rt.ranks();
    rill::latch reported(ranks);
    all_reported = &reported;
    const int code = rt.run([&]() -> int {
      const int n = rill::rank_n();
      // One user event per rank, owned by that rank.
      rill::latch got(n);
      for (int r = 0; r < n; ++r) {
        rill::am::send(
            r,
            [](rill::user_event* slot, rill::latch* done) {
              rill::am::send(
                  rill::am::sender(),
                  [](rill::user_event* s, rill::latch* d, rill::user_event e) {
                    *s = e;
                    d->count_down();
                  },
                  slot, done, rill::user_event::create());
            },
            &events[static_cast<std::size_t>(r)], &got);
      }
      got.wait();
      std::vector<rill::event> done;
      for (int r = 0; r < n; ++r) {
        const auto& mine = events[static_cast<std::size_t>(r)];
        const auto& next = events[static_cast<std::size_t>((r + 1) % n)];
        done.push_back(rill::proc(r).spawn(ring, mine, rill::event(next)));
        done.push_back(rill::proc(r).spawn(watch, mine, rill::event(next)));
      }
      try {
        rill::merge(done).wait();
      } catch (const rill::poisoned_error& e) {
        ADD_FAILURE() << e.what();
        return 1;
      }
      return 0;
    });
    EXPECT_EQ(code, 0);
  }
  captured = nullptr;

  // Each rank this process ran wrote its part of the graph, naming the user event it owns.
  int my_mpi_rank = 0;
  if (under_mpi()) MPI_Comm_rank(MPI_COMM_WORLD, &my_mpi_rank);
  for (int r : hosted_ranks(ranks, my_mpi_rank)) {
    std::string base = graph.substr(0, graph.size() - 4);
    const std::string file = base + ".rank" + std::to_string(r) + ".dot";
    std::ifstream in(file);
    ASSERT_TRUE(in) << file;
    std::ostringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str().rfind("digraph rill_events {", 0), 0u) << file;
    EXPECT_TRUE(text.str().ends_with("}\n")) << file;
    // Rank r's user event: created by rank 0's request, so the node is in rank r's part.
    const rill::event e = owned_here[r];
    EXPECT_EQ(e.owner(), r);
    const std::string node = "e" + std::to_string(e.owner()) + "_" + std::to_string(e.slot()) + "_" +
                             std::to_string(e.generation()) + " [label=\"user_event";
    EXPECT_NE(text.str().find(node), std::string::npos) << file << "\n" << text.str();
    std::remove(file.c_str());
  }
  if (!under_mpi()) std::remove(graph.c_str());
}

INSTANTIATE_TEST_SUITE_P(setups, event_trace, ::testing::ValuesIn(trace_setups()), name_of);

}  // namespace
}  // namespace rill_test
