// Hierarchical aggregation (--rill:ranks-per-node, src/messages/node_routes.hpp): with several
// ranks per node, every message reaches its rank exactly once, from the rank that sent it, whether
// its buffer went straight to that rank or through another rank of its node that split a routed
// buffer; and a rank keeps at most one aggregation queue per rank of its node and per other node.
#include <mpi.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"
#include "transport/node_layout.hpp"

namespace rill_test {
namespace {

struct node_setup {
  setup base;
  int ranks_per_node;
};

std::vector<node_setup> node_setups() {
  if (under_mpi()) return {{{0, 1, 0}, 2}, {{0, 2, 0}, 3}};
  return {{{1, 1, 0}, 2},  {{4, 1, 0}, 2},  {{5, 2, 3}, 2},  {{7, 1, 11}, 3},
          {{16, 1, 0}, 4}, {{16, 2, 5}, 8}, {{64, 1, 0}, 8}, {{64, 1, 13}, 4}};
}

std::string node_setup_name(const ::testing::TestParamInfo<node_setup>& info) {
  return setup_name(info.param.base) + "_k" + std::to_string(info.param.ranks_per_node);
}

class hierarchical : public ::testing::TestWithParam<node_setup> {};

constexpr int most_ranks = 64;
constexpr int per_pair = 40;

// seen[(to * most_ranks + from) * per_pair + i]: how often message i from `from` reached `to`.
std::unique_ptr<std::atomic<int>[]> g_seen;
std::array<std::atomic<int>, most_ranks> g_received{};  // per rank
std::atomic<int> g_wrong_sender{0};
std::atomic<int> g_corrupt{0};

void arrived(int from, int i) {
  const int to = rill::rank_me();
  if (rill::am::sender() != from) g_wrong_sender.fetch_add(1);
  g_seen[static_cast<std::size_t>((to * most_ranks + from) * per_pair + i)].fetch_add(1);
  g_received[static_cast<std::size_t>(to)].fetch_add(1);
}

// Small, medium (a few fill a buffer: buffers leave full mid-stream) and large messages (above
// large-bytes: a buffer of their own, always straight to their rank), to every rank in turn.
void send_everything() {
  const int me = rill::rank_me(), n = rill::rank_n();
  for (int i = 0; i < per_pair; ++i) {
    for (int k = 1; k <= n; ++k) {
      const int to = (me + k) % n;
      if (i % 10 == 9) {
        rill::am::send(
            to,
            [](int from, int index, const std::vector<std::uint32_t>& big) {
              for (std::uint32_t x : big)
                if (x != static_cast<std::uint32_t>(from * 1000 + index)) g_corrupt.fetch_add(1);
              arrived(from, index);
            },
            me, i, std::vector<std::uint32_t>(6000, static_cast<std::uint32_t>(me * 1000 + i)));
      } else if (i % 3 == 1) {
        rill::am::send(
            to,
            [](int from, int index, const std::string& text) {
              if (text != std::string(static_cast<std::size_t>(200 + index), static_cast<char>('a' + from % 26)))
                g_corrupt.fetch_add(1);
              arrived(from, index);
            },
            me, i, std::string(static_cast<std::size_t>(200 + i), static_cast<char>('a' + me % 26)));
      } else {
        rill::am::send(
            to, [](int from, int index) { arrived(from, index); }, me, i);
      }
    }
  }
}

std::uint64_t counter_named(const std::string& name) {
  for (const rill::counter& c : rill::counters())
    if (c.layer == "messages" && c.name == name) return c.value;
  return ~std::uint64_t{0};
}

TEST_P(hierarchical, every_message_reaches_its_rank_exactly_once_from_its_sender) {
  const node_setup ns = GetParam();
  g_seen.reset(new std::atomic<int>[most_ranks * most_ranks * per_pair]());
  g_wrong_sender = 0;
  g_corrupt = 0;
  for (auto& r : g_received) r = 0;
  std::atomic<int> too_many_queues{0};
  std::atomic<std::uint64_t> routed{0}, forwarded{0};
  args a(ns.base, {"--rill:ranks-per-node=" + std::to_string(ns.ranks_per_node)});
  rill::runtime rt(a.argc, a.argv());
  const int n = rt.ranks();
  ASSERT_LE(n, most_ranks);
  EXPECT_EQ(rt.run_spmd([&] {
    send_everything();
    // Once every rank has all its messages, every forwarding rank has counted its forwards.
    const int me = rill::rank_me();
    while (g_received[static_cast<std::size_t>(me)].load() < n * per_pair) rill::yield();
    rill::team::world().barrier().wait();
    // Queues for the ranks of this node (this one included) and one per other node.
    const int k = std::min(ns.ranks_per_node, n), nodes = (n + k - 1) / k;
    if (counter_named("agg_queues_used") > static_cast<std::uint64_t>(k + nodes - 1)) too_many_queues++;
    routed += counter_named("routed_buffers_sent");
    forwarded += counter_named("buffers_forwarded");
  }),
            0);
  // Every rank sent every other rank messages at once: where a node has ranks of two nodes to write
  // to, some buffers held messages for several of them and were split there (counted here where
  // this process runs every rank).
  if (!under_mpi() && ns.ranks_per_node > 1 && n > ns.ranks_per_node + 1) {
    EXPECT_GT(routed.load(), 0u);
    EXPECT_GT(forwarded.load(), 0u);
  }
  EXPECT_EQ(too_many_queues.load(), 0) << "a rank used more aggregation queues than its node's ranks and other nodes";
  EXPECT_EQ(g_wrong_sender.load(), 0) << "a handler saw another rank than the sender as rill::am::sender()";
  EXPECT_EQ(g_corrupt.load(), 0);
  int my_rank = 0;
  if (under_mpi()) MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  for (int to : hosted_ranks(n, my_rank))
    for (int from = 0; from < n; ++from)
      for (int i = 0; i < per_pair; ++i)
        ASSERT_EQ(g_seen[static_cast<std::size_t>((to * most_ranks + from) * per_pair + i)].load(), 1)
            << "message " << i << " from rank " << from << " to rank " << to;
}

INSTANTIATE_TEST_SUITE_P(setups, hierarchical, ::testing::ValuesIn(node_setups()), node_setup_name);

// Left to the runtime (the default, 0), the nodes are the launcher's under mpi -- here, where
// mpirun places ranks in blocks, the ranks that share this node's memory -- and on the local
// transport 1 (its nodes are simulated only when asked); messages then reach every rank as above.
TEST(hierarchical_default, ranks_per_node_is_the_launchers_nodes) {
  const setup s = under_mpi() ? setup{0, 1, 0} : setup{4, 1, 3};
  args a(s);
  rill::runtime rt(a.argc, a.argv());
  int expected = 1;
  if (under_mpi()) {
    // The lowest rank of each rank's node, as the launcher placed them (on one machine: 0 for all,
    // so the job's size).
    int me = 0, n = 0, first = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    std::vector<int> first_of(static_cast<std::size_t>(n));
    MPI_Allgather(&first, 1, MPI_INT, first_of.data(), 1, MPI_INT, MPI_COMM_WORLD);
    expected = rill::detail::consecutive_ranks_per_node(first_of);
  }
  EXPECT_EQ(rt.options().ranks_per_node, expected);
  const int n = rt.ranks(), k = rt.options().ranks_per_node, nodes = (n + k - 1) / k;
  std::atomic<int> too_many_queues{0};
  static std::array<std::atomic<int>, most_ranks> heard{};
  for (auto& h : heard) h = 0;
  EXPECT_EQ(rt.run_spmd([&] {
    const int me = rill::rank_me();
    for (int to = 0; to < n; ++to)
      rill::am::send(
          to, [](int) { heard[static_cast<std::size_t>(rill::rank_me())].fetch_add(1); }, me);
    while (heard[static_cast<std::size_t>(me)].load() < n) rill::yield();
    rill::team::world().barrier().wait();
    if (counter_named("agg_queues_used") > static_cast<std::uint64_t>(k + nodes - 1)) too_many_queues++;
  }),
            0);
  EXPECT_EQ(too_many_queues.load(), 0);
}

}  // namespace
}  // namespace rill_test
