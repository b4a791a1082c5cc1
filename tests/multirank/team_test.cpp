// Teams and deferred collectives (rill/team.hpp), and finish_spmd: every rank runs the test body
// (run_spmd); each collective's result is checked against the answer computed sequentially from
// the values every rank is known to pass. Many collectives are in flight at once, on the world
// and on split teams, under the local transport's chaos and under mpirun.
//
// A failed check does not throw (the other ranks would wait for this one's collectives forever):
// it is recorded and the rank's result becomes non-zero once its body ends.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "spmd_harness.hpp"

namespace rill_test {
namespace {

class teams : public ::testing::TestWithParam<setup> {};

struct sample {
  long sum;
  int lowest_rank;
  double weight;
};

// What rank r passes to the collectives of round `size`: deterministic, so any rank can compute
// what every other rank passed.
long value_of(int r, int size) { return 1000L * r + size; }
std::vector<long> vector_of(int r, int size) {
  std::vector<long> v(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) v[static_cast<std::size_t>(i)] = static_cast<long>(r) * 7919 + i * 31 + size;
  return v;
}
std::string string_of(int r, int size) {
  return std::string(static_cast<std::size_t>(size % 97), 'a' + r % 26) + std::to_string(r);
}
// What rank `from` sends rank `to` in an alltoallv: a length that varies with both, empty too.
std::vector<std::uint64_t> part_of(int from, int to, int size) {
  const int len = (size * (from + 1) + 13 * to) % (size + 1);
  std::vector<std::uint64_t> v(static_cast<std::size_t>(len));
  for (int i = 0; i < len; ++i)
    v[static_cast<std::size_t>(i)] = (std::uint64_t(from) << 40) ^ (std::uint64_t(to) << 20) ^ i;
  return v;
}

const int sizes[] = {1, 2, 7, 64, 1000, 3000};

TEST_P(teams, every_collective_matches_the_sequential_answer) {
  EXPECT_EQ(run_everywhere(
                GetParam(),
                [] {
                  const rill::team w = rill::team::world();
                  const int n = w.rank_n(), me = w.rank_me();
                  check(me == rill::rank_me() && n == rill::rank_n(), "world team's ranks");
                  for (int size : sizes) {
                    const int root = size % n;
                    // Issue all of them first: every one is in flight at once.
                    auto bcast = w.broadcast(me == root ? vector_of(root, size) : std::vector<long>{}, root);
                    auto red = w.reduce(value_of(me, size), rill::reduce::sum<long>{}, root);
                    auto maxed = w.allreduce(static_cast<double>(value_of(me, size)) / 3, rill::reduce::max<double>{});
                    auto combined =
                        w.allreduce(sample{value_of(me, size), me, 0.5 * me}, [](const sample& a, const sample& b) {
                          return sample{a.sum + b.sum, std::min(a.lowest_rank, b.lowest_rank), a.weight + b.weight};
                        });
                    auto elementwise =
                        w.allreduce(vector_of(me, size), [](std::vector<long>& acc, const std::vector<long>& v) {
                          for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
                        });
                    auto names = w.gather(string_of(me, size), root);
                    auto everyone = w.allgather(sample{value_of(me, size), me, 1.0});
                    std::vector<long> ones;
                    std::vector<std::string> words;
                    std::vector<std::vector<std::uint64_t>> parts;
                    for (int to = 0; to < n; ++to) {
                      ones.push_back(value_of(me, size) * 100 + to);
                      words.push_back(string_of(me, size) + ">" + std::to_string(to));
                      parts.push_back(part_of(me, to, size));
                    }
                    auto a2a = w.alltoall(ones);
                    auto a2a_words = w.alltoall(words);
                    auto a2av = w.alltoallv(parts);
                    auto fence = w.barrier();

                    const std::string at = " (size " + std::to_string(size) + ")";
                    check(bcast.get() == vector_of(root, size), "broadcast" + at);
                    if (me == root) {
                      long want = 0;
                      for (int r = 0; r < n; ++r) want += value_of(r, size);
                      check(red.get() == want, "reduce at the root" + at);
                      std::vector<std::string> want_names;
                      for (int r = 0; r < n; ++r) want_names.push_back(string_of(r, size));
                      check(names.get() == want_names, "gather at the root" + at);
                    } else {
                      red.wait();
                      check(names.get().empty(), "gather away from the root" + at);
                    }
                    check(maxed.get() == static_cast<double>(value_of(n - 1, size)) / 3, "allreduce max" + at);
                    const sample s = combined.get();
                    long want_sum = 0;
                    double want_weight = 0;
                    std::vector<long> want_vec(static_cast<std::size_t>(size), 0);
                    for (int r = 0; r < n; ++r) {
                      want_sum += value_of(r, size);
                      want_weight += 0.5 * r;
                      const auto v = vector_of(r, size);
                      for (int i = 0; i < size; ++i)
                        want_vec[static_cast<std::size_t>(i)] += v[static_cast<std::size_t>(i)];
                    }
                    check(s.sum == want_sum && s.lowest_rank == 0 && s.weight == want_weight,
                          "allreduce of a struct with a lambda" + at);
                    check(elementwise.get() == want_vec, "allreduce of vectors, folding in place" + at);
                    const auto& all = everyone.get();
                    bool ok = static_cast<int>(all.size()) == n;
                    for (int r = 0; ok && r < n; ++r)
                      ok = all[static_cast<std::size_t>(r)].sum == value_of(r, size) &&
                           all[static_cast<std::size_t>(r)].lowest_rank == r;
                    check(ok, "allgather" + at);
                    const auto& got = a2a.get();
                    const auto& got_words = a2a_words.get();
                    const auto& got_parts = a2av.get();
                    ok = static_cast<int>(got.size()) == n && static_cast<int>(got_words.size()) == n &&
                         static_cast<int>(got_parts.size()) == n;
                    for (int from = 0; ok && from < n; ++from) {
                      const auto f = static_cast<std::size_t>(from);
                      ok = got[f] == value_of(from, size) * 100 + me &&
                           got_words[f] == string_of(from, size) + ">" + std::to_string(me) &&
                           got_parts[f] == part_of(from, me, size);
                    }
                    check(ok, "alltoall and alltoallv" + at);
                    fence.wait();
                  }
                }),
            0);
}

TEST_P(teams, collectives_complete_in_the_order_issued) {
  EXPECT_EQ(run_everywhere(GetParam(),
                           [] {
                             const rill::team w = rill::team::world();
                             const int n = w.rank_n(), me = w.rank_me();
                             // The last rank issues late, so that the others' collectives wait for it.
                             if (me == n - 1)
                               for (int i = 0; i < 20; ++i) rill::yield();
                             constexpr int count = 120;
                             std::vector<rill::event> done;
                             std::vector<rill::future<long>> sums;
                             for (int i = 0; i < count; ++i) {
                               switch (i % 4) {
                                 case 0: done.push_back(w.barrier()); break;
                                 case 1: {
                                   auto f = w.allreduce(long{me + i}, rill::reduce::sum<long>{});
                                   sums.push_back(f);
                                   done.push_back(f);
                                   break;
                                 }
                                 case 2:
                                   done.push_back(w.broadcast(std::string(static_cast<std::size_t>(i), 'x'), i % n));
                                   break;
                                 default: done.push_back(w.gather(i, (i / 4) % n)); break;
                               }
                             }
                             // Whichever completes, every collective issued before it has completed too.
                             for (int k : {count - 1, count / 2, 3, 0}) {
                               done[static_cast<std::size_t>(k)].wait();
                               for (int j = 0; j < k; ++j)
                                 check(done[static_cast<std::size_t>(j)].has_triggered(),
                                       "collective " + std::to_string(j) + " completed after " + std::to_string(k));
                             }
                             for (std::size_t k = 0; k < sums.size(); ++k) {
                               const long i = 4 * static_cast<long>(k) + 1;
                               check(sums[k].get() == static_cast<long>(n) * (n - 1) / 2 + n * i,
                                     "allreduce in flight");
                             }
                           }),
            0);
}

TEST_P(teams, split_forms_teams_by_color_and_key_and_they_run_collectives) {
  EXPECT_EQ(run_everywhere(
                GetParam(),
                [] {
                  const rill::team w = rill::team::world();
                  const int n = w.rank_n(), me = w.rank_me();
                  // Two splits in flight at once, with world collectives between them.
                  const int color = (n > 2 && me == n - 1) ? -1 : me % 3;
                  auto by_three = w.split(color, -me);  // keys reverse the world order
                  auto total = w.allreduce(me, rill::reduce::sum<int>{});
                  auto halves = w.split(me % 2, 0);  // equal keys: world order
                  const rill::team t = by_three.get();
                  const rill::team h = halves.get();
                  check(total.get() == n * (n - 1) / 2, "world allreduce between splits");

                  // The halves: ranks of my parity, in world order.
                  std::vector<int> parity;
                  for (int r = me % 2; r < n; r += 2) parity.push_back(r);
                  check(h.valid() && h.rank_n() == static_cast<int>(parity.size()), "halves: size");
                  check(h.rank_me() == me / 2, "halves: my place");
                  for (int i = 0; i < h.rank_n(); ++i)
                    check(h.world_rank(i) == parity[static_cast<std::size_t>(i)], "halves: order");
                  check(h.id() != w.id(), "a split team has its own id");
                  auto on_h = h.allgather(me);  // every member of the halves calls it

                  if (color < 0) {
                    check(!t.valid(), "a negative color gives no team");
                  } else {
                    std::vector<int> mine;  // same color, by key -r: descending world rank
                    for (int r = n - 1; r >= 0; --r)
                      if (r % 3 == color && !(n > 2 && r == n - 1)) mine.push_back(r);
                    check(t.rank_n() == static_cast<int>(mine.size()), "split: size");
                    for (int i = 0; i < t.rank_n(); ++i)
                      check(t.world_rank(i) == mine[static_cast<std::size_t>(i)], "split: ordered by key");
                    check(t.world_rank(t.rank_me()) == me, "split: my place");
                    // Collectives on the sub-team, interleaved with ones on the halves.
                    const int last = t.rank_n() - 1;
                    auto sum = t.allreduce(me, rill::reduce::sum<int>{});
                    auto ranks = t.gather(me, last);
                    auto word = t.broadcast(t.rank_me() == last ? std::string("from the last") : std::string(), last);
                    std::vector<std::vector<int>> parts(static_cast<std::size_t>(t.rank_n()));
                    for (int i = 0; i < t.rank_n(); ++i)
                      parts[static_cast<std::size_t>(i)] = std::vector<int>(static_cast<std::size_t>(i + 1), me);
                    auto swapped = t.alltoallv(parts);
                    t.barrier().wait();
                    check(sum.get() == std::accumulate(mine.begin(), mine.end(), 0), "sub-team allreduce");
                    if (t.rank_me() == last) check(ranks.get() == mine, "sub-team gather");
                    check(word.get() == "from the last", "sub-team broadcast");
                    bool ok = true;
                    for (int i = 0; i < t.rank_n(); ++i)
                      ok = ok && swapped.get()[static_cast<std::size_t>(i)] ==
                                     std::vector<int>(static_cast<std::size_t>(t.rank_me() + 1),
                                                      mine[static_cast<std::size_t>(i)]);
                    check(ok, "sub-team alltoallv");
                    // A split of a split: a team of one each.
                    const rill::team one = t.split(t.rank_me(), 0).get();
                    check(one.rank_n() == 1 && one.rank_me() == 0 && one.world_rank(0) == me, "split of a split");
                    check(one.allreduce(5, rill::reduce::sum<int>{}).get() == 5, "collective on a team of one");
                  }
                  check(on_h.get() == parity, "allgather on the halves");
                  w.barrier().wait();
                }),
            0);
}

per_rank g_landed;  // tasks of finish_spmd's chains that ran on each rank (this process's ranks)

void hop(int left) {
  for (int i = 0; i < 2; ++i) rill::yield();
  g_landed[static_cast<std::size_t>(rill::rank_me())].fetch_add(1);
  if (left > 1) rill::async_at((rill::rank_me() + 1) % rill::rank_n(), &hop, left - 1);
}

TEST_P(teams, finish_spmd_covers_tasks_shipped_between_ranks) {
  reset(g_landed);
  EXPECT_EQ(run_everywhere(GetParam(),
                           [] {
                             const int n = rill::rank_n(), me = rill::rank_me();
                             constexpr int chains = 3;
                             for (int round = 1; round <= 3; ++round) {
                               // Each rank starts chains of 2n hops that visit every rank twice; the
                               // rank's own finish covers only its chains, the others land here later.
                               rill::finish_spmd([&] {
                                 for (int c = 0; c < chains; ++c) rill::async_at((me + c) % n, &hop, 2 * n);
                               });
                               const std::uint64_t want = static_cast<std::uint64_t>(round) * chains * 2 * n;
                               check(g_landed[static_cast<std::size_t>(me)].load() == want,
                                     "finish_spmd returned before every rank's tasks ended here (round " +
                                         std::to_string(round) + ")");
                               // Nobody starts the next round's chains before every rank has checked.
                               rill::team::world().barrier().wait();
                             }
                             // A task that throws: the error reaches the rank whose body started it.
                             bool caught = false;
                             try {
                               rill::finish_spmd([&] {
                                 rill::async_at((me + 1) % n,
                                                [](int from) {
                                                  if (from == 0) throw std::runtime_error("from rank 0's task");
                                                },
                                                me);
                               });
                             } catch (const std::exception& e) {
                               caught = std::string(e.what()).find("from rank 0's task") != std::string::npos;
                             }
                             check(caught == (me == 0), "finish_spmd rethrows a task's error on its rank only");
                           }),
            0);
}

template <class F>
bool throws_misuse(F f) {
  try {
    f();
  } catch (const rill::misuse_error&) {
    return true;
  }
  return false;
}

TEST_P(teams, bad_input_is_a_misuse_error_and_costs_no_sequence_number) {
  EXPECT_EQ(run_everywhere(
                GetParam(),
                [] {
                  const rill::team w = rill::team::world();
                  const int n = w.rank_n(), me = w.rank_me();
                  check(throws_misuse([&] { (void)w.broadcast(1, n); }), "broadcast root n");
                  check(throws_misuse([&] { (void)w.reduce(1, rill::reduce::sum<int>{}, -1); }), "reduce root -1");
                  check(throws_misuse([&] { (void)w.gather(1, n + 5); }), "gather root out of range");
                  check(throws_misuse([&] { (void)w.alltoall(std::vector<int>(static_cast<std::size_t>(n + 1))); }),
                        "alltoall with a wrong count");
                  check(throws_misuse([&] { (void)w.world_rank(n); }), "world_rank out of range");
                  check(throws_misuse([] { (void)rill::team().barrier(); }), "a collective on no team");
                  // Rank 0's half, sent to everyone as a value: the others are not members.
                  const rill::team h = w.split(me % 2, me).get();
                  const rill::team evens = w.broadcast(h, 0).get();
                  if (me % 2 == 1) {
                    check(throws_misuse([&] { (void)evens.barrier(); }), "a non-member calls a collective");
                    check(throws_misuse([&] { (void)evens.rank_me(); }), "a non-member asks its place");
                  } else {
                    check(evens == h, "the broadcast team handle");
                  }
                  // None of the refused calls took a sequence number: these still match.
                  check(w.allreduce(1, rill::reduce::sum<int>{}).get() == n, "world after misuse");
                  check(h.allreduce(1, rill::reduce::sum<int>{}).get() == h.rank_n(), "half after misuse");
                }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, teams, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
