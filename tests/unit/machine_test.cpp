// rill::machine's model from given rank descriptions: nodes, processes and the affinity tiers,
// including ranks on other nodes (which the tests cannot start for real).
#include <gtest/gtest.h>

#include <vector>

#include "rill/machine.hpp"

namespace {

rill::detail::rank_description rank_on(const char* host, const char* process) {
  rill::detail::rank_description d;
  d.host = host;
  d.process = process;
  d.workers = 2;
  d.cores = 4;
  d.pus = 8;
  d.bound_pus = 8;
  d.numa_domains = 2;
  d.memory_bytes = 1u << 30;
  return d;
}

TEST(Machine, HandlesAreSmallValues) {
  static_assert(std::is_trivially_copyable_v<rill::memory>);
  EXPECT_FALSE(rill::memory().exists());
  EXPECT_EQ(rill::memory::system(3).owner(), 3);
  EXPECT_EQ(rill::memory::system(3).kind(), rill::memory_kind::system);
  EXPECT_EQ(rill::memory::registered(3).kind(), rill::memory_kind::registered);
  EXPECT_NE(rill::memory::registered(3), rill::memory::system(3));
}

// Ranks 0, 1: one process on node a; rank 2: another process on a; rank 3: node b.
std::vector<rill::detail::rank_description> two_nodes() {
  return {rank_on("a", "a:1"), rank_on("a", "a:1"), rank_on("a", "a:2"), rank_on("b", "b:1")};
}

TEST(Machine, TwoNodesTwoProcessesEach) {
  const rill::machine m(two_nodes(), {1u << 20, true});
  ASSERT_EQ(m.nodes().size(), 2u);
  EXPECT_EQ(m.nodes()[0].ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(m.nodes()[1].ranks, (std::vector<int>{3}));
  EXPECT_EQ(m.node_of(3), 1);
  EXPECT_TRUE(m.same_process(0, 1));
  EXPECT_FALSE(m.same_process(0, 2));
  EXPECT_EQ(m.capacity(rill::memory::system(0)), (1u << 30) / 3);
  EXPECT_EQ(m.capacity(rill::memory::system(3)), 1u << 30);

  EXPECT_EQ(m.capacity(rill::memory::registered(2)), 1u << 20);
  ASSERT_EQ(m.memories().size(), 8u);
  EXPECT_EQ(m.memories()[2], rill::memory::system(1));
  EXPECT_EQ(m.memories()[3], rill::memory::registered(1));

  // Processors reach the system memories of their own process, and the registered memories of
  // their node (shared segments).
  EXPECT_EQ(m.proc_mem_affinity(rill::proc(0)).size(), 2u + 3u);
  EXPECT_EQ(m.proc_mem_affinity(rill::proc(2)).size(), 1u + 3u);
  EXPECT_EQ(m.proc_mem_affinity(rill::proc(3)).size(), 1u + 1u);
  EXPECT_TRUE(m.proc_mem_affinity(rill::proc(3), rill::memory::system(0)).empty());
  EXPECT_TRUE(m.proc_mem_affinity(rill::proc(3), rill::memory::registered(2)).empty());
  EXPECT_EQ(m.proc_mem_affinity(std::nullopt, rill::memory::system(1)).size(), 2u);
  const auto neighbour = m.proc_mem_affinity(rill::proc(2), rill::memory::registered(0));
  ASSERT_EQ(neighbour.size(), 1u);
  EXPECT_EQ(neighbour[0].bandwidth, rill::same_node_tier.bandwidth);
  const auto own = m.proc_mem_affinity(rill::proc(2), rill::memory::registered(2));
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].bandwidth, rill::same_process_tier.bandwidth);

  // Copies between every pair of the 8 memories, cheaper the closer the ranks.
  EXPECT_EQ(m.mem_mem_affinity().size(), 28u);
  auto pair = [&](int a, int b) {
    auto v = m.mem_mem_affinity(rill::memory::system(a), rill::memory::system(b));
    EXPECT_EQ(v.size(), 1u);
    return v.at(0);
  };
  const auto same_process = pair(0, 1), same_node = pair(0, 2), other_node = pair(2, 3);
  EXPECT_GT(same_process.bandwidth, same_node.bandwidth);
  EXPECT_GT(same_node.bandwidth, other_node.bandwidth);
  EXPECT_LT(same_process.latency, same_node.latency);
  EXPECT_LT(same_node.latency, other_node.latency);
  EXPECT_EQ(pair(3, 2).m1, rill::memory::system(2));  // either order names the pair
  EXPECT_EQ(m.mem_mem_affinity(rill::memory::system(3)).size(), 7u);
  EXPECT_EQ(m.mem_mem_affinity(rill::memory::system(3), rill::memory::registered(3)).at(0).bandwidth,
            rill::same_process_tier.bandwidth);
  EXPECT_THROW((void)m.node_of(4), rill::misuse_error);
  EXPECT_THROW((void)m.capacity(rill::memory::registered(4)), rill::misuse_error);
}

TEST(Machine, WithoutSharedSegmentsARegisteredMemoryIsReachedByItsRankAlone) {
  const rill::machine m(two_nodes(), {1u << 20, false});
  EXPECT_EQ(m.proc_mem_affinity(std::nullopt, rill::memory::registered(1)).size(), 1u);
  EXPECT_EQ(m.proc_mem_affinity(rill::proc(1), rill::memory::registered(1)).size(), 1u);
  EXPECT_TRUE(m.proc_mem_affinity(rill::proc(0), rill::memory::registered(1)).empty());
  EXPECT_EQ(m.proc_mem_affinity(rill::proc(0), rill::memory::system(1)).size(), 1u) << "one address space";
}

}  // namespace
