// Stress: 10^6 active messages of mixed sizes between all pairs of ranks, each delivered exactly
// once, with memory bounded by the queues (back-pressure), not by the number of messages.
#include <mpi.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "harness.hpp"

namespace rill_test {
namespace {

constexpr std::uint64_t total_messages = 1'000'000;

per_pair got;
per_pair sum;

template <std::size_t N>
struct blob {
  std::uint64_t tag;
  std::byte pad[N - sizeof(std::uint64_t)];
};

template <std::size_t N>
void receive(int from, blob<N> b) {
  got[static_cast<std::size_t>(rill::rank_me() * max_ranks + from)]++;
  sum[static_cast<std::size_t>(rill::rank_me() * max_ranks + from)] += b.tag;
}

void receive_vector(int from, const std::vector<std::uint64_t>& v) {
  got[static_cast<std::size_t>(rill::rank_me() * max_ranks + from)]++;
  sum[static_cast<std::size_t>(rill::rank_me() * max_ranks + from)] += v.back();
}

// Mix by index: mostly small, some medium, a few large enough to travel alone (~1 KiB on average).
void send_one(int to, int from, std::uint64_t i) {
  switch (i % 16) {
    case 0: rill::am::send(to, receive_vector, from, std::vector<std::uint64_t>(2048, i)); break;  // 16 KiB
    case 1:
    case 2: rill::am::send(to, receive<1024>, from, blob<1024>{i, {}}); break;
    case 3:
    case 4:
    case 5: rill::am::send(to, receive<256>, from, blob<256>{i, {}}); break;
    case 6:
    case 7:
    case 8:
    case 9: rill::am::send(to, receive<64>, from, blob<64>{i, {}}); break;
    default: rill::am::send(to, receive<16>, from, blob<16>{i, {}});
  }
}

std::uint64_t peak_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

void stress(const setup& s) {
  reset(got);
  reset(sum);
  args a(s);
  rill::runtime rt(a.argc, a.argv());
  const int n = rt.ranks();
  const std::uint64_t per_pair_count = total_messages / static_cast<std::uint64_t>(n * n);
  const std::uint64_t rss_before = peak_rss_kib();
  EXPECT_EQ(rt.run_spmd([&] {
    const int me = rill::rank_me();
    // One task per destination so that workers share the sending.
    rill::latch sent(n);
    for (int to = 0; to < n; ++to) {
      rill::spawn([&, to] {
        for (std::uint64_t i = 0; i < per_pair_count; ++i) send_one(to, me, i);
        sent.count_down();
      });
    }
    sent.wait();
  }),
            0);
  int my_mpi = 0;
  if (under_mpi()) MPI_Comm_rank(MPI_COMM_WORLD, &my_mpi);
  const std::uint64_t expected_sum = per_pair_count * (per_pair_count - 1) / 2;
  for (int to : hosted_ranks(n, my_mpi)) {
    for (int from = 0; from < n; ++from) {
      EXPECT_EQ(got[static_cast<std::size_t>(to * max_ranks + from)].load(), per_pair_count) << from << "->" << to;
      EXPECT_EQ(sum[static_cast<std::size_t>(to * max_ranks + from)].load(), expected_sum) << from << "->" << to;
    }
  }
  // About 1 GiB crossed the transport; queues bound what is held at once to a few MiB per pair.
  const std::uint64_t growth_mib = (peak_rss_kib() - rss_before) / 1024;
  std::printf("peak memory growth during the run: %llu MiB\n", static_cast<unsigned long long>(growth_mib));
  EXPECT_LT(growth_mib, 400u) << "peak memory grew by " << growth_mib << " MiB";
}

TEST(stress, million_mixed_messages_all_pairs) { stress({4, 1, 0}); }
TEST(stress, million_mixed_messages_all_pairs_under_chaos) { stress({4, 2, 99}); }

}  // namespace
}  // namespace rill_test
