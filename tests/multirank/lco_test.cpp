// LCOs across ranks: reductions and and-gates fed from every rank fire once with the right value,
// their event works as a precondition anywhere, a semaphore never grants more units than it has,
// user-defined kinds work, and misuse is reported.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.hpp"

namespace rill_test {
namespace {

class lcos : public ::testing::TestWithParam<setup> {};

TEST_P(lcos, a_reduction_fed_from_every_rank_fires_with_the_folded_value) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          constexpr int per_rank = 10;
                          auto sum = rill::reduce_lco<long>::create(static_cast<std::uint32_t>(n * per_rank));
                          auto top =
                              rill::reduce_lco<long, rill::reduce::max<long>>::create(static_cast<std::uint32_t>(n));
                          rill::finish([&] {
                            for (int r = 0; r < n; ++r)
                              rill::async_at(
                                  r,
                                  [](rill::reduce_lco<long> s, rill::reduce_lco<long, rill::reduce::max<long>> t) {
                                    for (int i = 0; i < per_rank; ++i) s.set(long{rill::rank_me() * per_rank + i});
                                    t.set(long{rill::rank_me()} * 7);
                                  },
                                  sum, top);
                          });
                          const long m = static_cast<long>(n) * per_rank;
                          expect(sum.get().get() == m * (m - 1) / 2, "wrong sum");
                          expect(top.get().get() == 7L * (n - 1), "wrong max");
                          // Read from another rank: a round trip to the home.
                          expect(rill::rpc(
                                     n - 1, [](rill::reduce_lco<long> s) { return s.get().get(); }, sum)
                                         .get() == m * (m - 1) / 2,
                                 "wrong sum read from another rank");
                          sum.destroy();
                          top.destroy();
                        }),
            0);
}

TEST_P(lcos, an_and_gate_fires_only_after_every_arrival) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          constexpr std::uint32_t arrivals = 8;
                          auto gate = rill::and_gate::create(arrivals);
                          // Tasks on every rank wait for it, started before any arrival.
                          std::vector<rill::event> waiters;
                          for (int r = 0; r < n; ++r)
                            waiters.push_back(rill::proc(r).spawn(rill::after(gate.fired()), [] {}));
                          // All arrivals but one, on the home (so each is counted when set() returns).
                          for (std::uint32_t k = 0; k + 1 < arrivals; ++k) gate.set();
                          for (int i = 0; i < 10; ++i) rill::yield();
                          expect(!gate.fired().has_triggered(), "the gate fired before its last arrival");
                          for (auto& w : waiters) expect(!w.has_triggered(), "a waiter ran before the gate fired");
                          // The last one from another rank.
                          rill::async_at(
                              n - 1, [](rill::and_gate g) { g.set(); }, gate);
                          rill::merge(waiters).wait();
                          gate.get().wait();
                          gate.destroy();
                        }),
            0);
}

TEST_P(lcos, a_semaphore_never_grants_more_units_than_it_has) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          static std::atomic<int> inside{0}, most{0};
                          inside = 0;
                          most = 0;
                          rill::semaphore sem = rill::semaphore::create(2);
                          std::vector<rill::event> done;
                          for (int r = 0; r < n; ++r)
                            for (int k = 0; k < 8; ++k)
                              done.push_back(rill::proc(r).spawn(
                                  [](rill::semaphore s) {
                                    s.acquire().wait();
                                    // Count on rank 0, the home, so every rank's holders are seen together.
                                    rill::rpc(0, [] {
                                      const int now = inside.fetch_add(1) + 1;
                                      int m = most.load();
                                      while (now > m && !most.compare_exchange_weak(m, now)) {
                                      }
                                    }).wait();
                                    rill::yield();
                                    rill::rpc(0, [] { inside.fetch_sub(1); }).wait();
                                    s.release();
                                  },
                                  sem));
                          rill::merge(done).wait();
                          expect(most.load() >= 1 && most.load() <= 2,
                                 "more holders than units: " + std::to_string(most.load()));
                          // A poisoned precondition poisons the grant instead of queueing it.
                          rill::user_event bad = rill::user_event::create();
                          rill::event grant = sem.acquire(bad);
                          bad.poison("no");
                          bool poisoned = false;
                          try {
                            grant.wait();
                          } catch (const rill::poisoned_error&) {
                            poisoned = true;
                          }
                          expect(poisoned, "a grant behind a poisoned precondition was not poisoned");
                          // release() is one-way: a holder's task can end before its release
                          // reaches the home. Taking both units back proves every release arrived,
                          // so destroy() cannot overtake one.
                          sem.acquire().wait();
                          sem.acquire().wait();
                          sem.destroy();
                        }),
            0);
}

// A user-defined kind: the largest of n strings.
struct longest {
  using input_type = std::string;
  using value_type = std::string;
  explicit longest(int n) : remaining(n) {}
  void set(std::string s) {
    if (s.size() > best.size()) best = std::move(s);
    --remaining;
  }
  bool ready() const { return remaining == 0; }
  std::string value() const { return best; }
  int remaining;
  std::string best;
};

TEST_P(lcos, a_user_defined_kind_takes_inputs_from_every_rank) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          auto l = rill::lco<longest>::create(n);
                          for (int r = 0; r < n; ++r)
                            rill::async_at(
                                r,
                                [](rill::lco<longest> x) {
                                  x.set(std::string(static_cast<std::size_t>(rill::rank_me()) + 1, 'x'));
                                },
                                l);
                          expect(l.get().get() == std::string(static_cast<std::size_t>(n), 'x'), "wrong longest");
                          l.destroy();
                        }),
            0);
}

TEST_P(lcos, misuse_is_reported) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          auto g = rill::and_gate::create(1);
                          g.set();
                          bool extra = false;
                          try {
                            g.set();
                          } catch (const rill::misuse_error&) {
                            extra = true;
                          }
                          expect(extra, "an extra arrival was taken");
                          g.destroy();
                          bool stale = false;
                          try {
                            g.set();
                          } catch (const rill::misuse_error& e) {
                            stale = std::string(e.what()).find("no such LCO") != std::string::npos;
                          }
                          expect(stale, "a destroyed LCO was used without an error");
                        }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, lcos, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
