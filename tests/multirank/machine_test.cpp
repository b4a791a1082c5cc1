// rill::machine on every local setup and under mpirun: every rank sees the same processors,
// memories, nodes and affinities, every processor reaches its own rank's memory best, and copies
// are possible between every pair of memories.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"

namespace rill_test {
namespace {

class machines : public ::testing::TestWithParam<setup> {};

void expect(bool ok, const std::string& what) {
  if (!ok) throw std::logic_error(what + " on rank " + std::to_string(rill::rank_me()));
}

// Everything the machine says, as text, to compare between ranks.
std::string digest() {
  const rill::machine& m = rill::machine::get();
  std::string s;
  for (rill::proc p : m.processors()) s += fmt::format("p{} w{} n{};", p.rank(), m.workers(p), m.node_of(p.rank()));
  for (rill::memory x : m.memories())
    s += fmt::format("m{}:{} {};", x.owner(), static_cast<int>(x.kind()), m.capacity(x));
  for (const auto& n : m.nodes()) {
    s += fmt::format("node {} c{} pu{} numa{} mem{} ranks", n.host, n.cores, n.pus, n.numa_domains, n.memory_bytes);
    for (int r : n.ranks) s += fmt::format(" {}", r);
    s += ";";
  }
  for (const auto& a : m.proc_mem_affinity())
    s += fmt::format("pm{}-{}:{}/{};", a.p.rank(), a.m.owner(), a.bandwidth, a.latency);
  for (const auto& a : m.mem_mem_affinity())
    s += fmt::format("mm{}-{}:{}/{};", a.m1.owner(), a.m2.owner(), a.bandwidth, a.latency);
  return s;
}

// The checks every rank makes of its own view.
void check_view() {
  const rill::machine& m = rill::machine::get();
  const int n = rill::rank_n();
  expect(static_cast<int>(m.processors().size()) == n, "one processor per rank");
  expect(static_cast<int>(m.memories().size()) == 2 * n, "a system and a registered memory per rank");
  int ranks_on_nodes = 0;
  for (const auto& node : m.nodes()) {
    expect(node.cores >= 1 && node.pus >= node.cores && node.numa_domains >= 1 && node.memory_bytes > 0,
           "implausible node facts");
    ranks_on_nodes += static_cast<int>(node.ranks.size());
  }
  expect(ranks_on_nodes == n, "every rank on exactly one node");
  for (rill::proc p : m.processors()) {
    expect(m.workers(p) >= 1, "a processor without workers");
    const rill::memory own = m.local_memory(p);
    expect(own == rill::memory::system(p.rank()) && own.kind() == rill::memory_kind::system, "wrong local memory");
    const auto reach = m.proc_mem_affinity(p);
    bool found = false;
    for (const auto& a : reach) {
      expect(a.p == p, "an affinity of another processor");
      if (a.m == own) {
        found = true;
        for (const auto& b : reach) expect(a.bandwidth >= b.bandwidth && a.latency <= b.latency, "own memory not best");
      }
      // System memories of the processor's address space, registered memories of its node.
      if (a.m.kind() == rill::memory_kind::system)
        expect(m.same_process(p.rank(), a.m.owner()), "direct access to system memory across processes");
      else
        expect(m.node_of(p.rank()) == m.node_of(a.m.owner()), "direct access to a segment across nodes");
    }
    expect(found, "a processor without affinity to its own memory");
    expect(m.proc_mem_affinity(p, own).size() == 1, "restricting to one pair");
    expect(m.proc_mem_affinity(p, rill::memory::registered(p.rank())).size() == 1, "its own segment out of reach");
    // What the data layer can hold there: as much as a registered instance can take.
    expect(m.capacity(rill::memory::registered(p.rank())) > 0, "a registered memory without room");
  }
  // Copies between every pair of memories.
  const int memories = 2 * n;
  expect(static_cast<int>(m.mem_mem_affinity().size()) == memories * (memories - 1) / 2,
         "a pair of memories without copies");
  for (rill::memory x : m.memories())
    expect(static_cast<int>(m.mem_mem_affinity(x).size()) == memories - 1, "pairs of one memory");
}

TEST_P(machines, every_rank_sees_the_same_machine_with_local_affinity) {
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  const int code = rt.run([]() -> int {
    const int n = rill::rank_n();
    check_view();
    const std::string mine = digest();
    std::vector<rill::event> same;
    for (int r = 0; r < n; ++r) {
      same.push_back(rill::proc(r).spawn(
          [](std::string want) {
            check_view();
            expect(digest() == want, "a different machine");
          },
          mine));
    }
    try {
      rill::merge(same).wait();
    } catch (const rill::poisoned_error& e) {
      ADD_FAILURE() << e.what();
      return 1;
    }
    const rill::machine& m = rill::machine::get();
    if (!under_mpi()) {
      // The local transport: one process, one node, every memory reachable from every processor
      // (registered ones through shared segments, on by default).
      EXPECT_EQ(m.nodes().size(), 1u);
      EXPECT_EQ(m.proc_mem_affinity().size(), 2 * static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
    }
    return 0;
  });
  EXPECT_EQ(code, 0);
}

INSTANTIATE_TEST_SUITE_P(setups, machines, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
