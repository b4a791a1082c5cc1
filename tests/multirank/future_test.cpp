// Futures and promises across ranks: remote puts satisfy local waiters, async_await runs after
// every input, then/when_all/async_future/rpc compose, poison travels, and a promise takes one
// value. Rank 0's top-level task drives each test.
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"

namespace rill_test {
namespace {

class futures : public ::testing::TestWithParam<setup> {};

TEST_P(futures, a_put_on_another_rank_satisfies_the_local_future) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    const int n = rill::rank_n();
                    std::vector<rill::promise<std::vector<long>>> ps(static_cast<std::size_t>(n));
                    std::vector<rill::future<std::vector<long>>> fs;
                    for (auto& p : ps) fs.push_back(p.get_future());
                    for (int r = 0; r < n; ++r) {
                      rill::async_at(
                          r,
                          [](rill::promise<std::vector<long>> p) {
                            for (int i = 0; i < 3; ++i) rill::yield();
                            p.put(std::vector<long>(static_cast<std::size_t>(rill::rank_me()) + 1, rill::rank_me()));
                          },
                          ps[static_cast<std::size_t>(r)]);
                    }
                    for (int r = 0; r < n; ++r) {
                      const auto& v = fs[static_cast<std::size_t>(r)].get();
                      expect(v == std::vector<long>(static_cast<std::size_t>(r) + 1, r), "wrong value");
                    }
                  }),
      0);
}

// get() on a temporary future returns a copy, so a range-for over it reads live memory (a
// reference into the temporary would dangle before the loop body runs).
TEST_P(futures, a_range_for_over_get_of_a_temporary_sees_the_value) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int last = rill::rank_n() - 1;
                          long sum = 0;
                          for (long x : rill::rpc(
                                            last, [](long n) { return std::vector<long>(4096, n); }, 3L)
                                            .get())
                            sum += x;
                          EXPECT_EQ(sum, 3L * 4096);
                          std::vector<long> more;
                          for (long x : rill::make_ready_future(std::vector<long>{1, 2, 3}).get()) more.push_back(x);
                          EXPECT_EQ(more, (std::vector<long>{1, 2, 3}));
                        }),
            0);
}

TEST_P(futures, async_await_runs_once_every_future_is_ready) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          constexpr int count = 64;
                          std::vector<rill::promise<long>> ps(count);
                          std::vector<rill::future<long>> fs;
                          for (auto& p : ps) fs.push_back(p.get_future());
                          long seen = -1;
                          rill::finish([&] {
                            auto sum_all = [&] {
                              long s = 0;
                              for (auto& f : fs) {
                                expect(f.ready(), "async_await ran before an input was ready");
                                s += f.get();
                              }
                              seen = s;
                            };
                            // Awaits all 64 (as events merged into one precondition).
                            rill::async_await(sum_all, rill::when_all(fs[0], fs[1], fs[2]),
                                              rill::merge(std::vector<rill::event>(fs.begin(), fs.end())));
                            for (int i = 0; i < count; ++i)
                              rill::async_at(
                                  i % n, [](rill::promise<long> p, long v) { p.put(v); },
                                  ps[static_cast<std::size_t>(i)], long{i});
                          });
                          expect(seen == count * (count - 1) / 2, "async_await saw a wrong sum");
                        }),
            0);
}

TEST_P(futures, then_async_future_and_rpc_compose) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          rill::future<int> a = rill::async_future([] { return 20; });
                          rill::future<int> b = a.then([](int x) { return x + 1; }).then([](int x) { return 2 * x; });
                          expect(b.get() == 42, "then chain");
                          rill::future<void> v = rill::async_future([] {});
                          expect(v.then([] { return std::string("done"); }).get() == "done", "then on void");
                          std::vector<rill::future<std::string>> names;
                          for (int r = 0; r < n; ++r)
                            names.push_back(rill::rpc(
                                r, [](std::string prefix) { return prefix + std::to_string(rill::rank_me()); },
                                std::string("rank ")));
                          for (int r = 0; r < n; ++r)
                            expect(names[static_cast<std::size_t>(r)].get() == "rank " + std::to_string(r),
                                   "rpc value");
                          rill::future<void> ping = rill::rpc(n - 1, [] {});
                          // A future is an event: a task can take it as its precondition.
                          rill::proc(0).spawn(rill::after(ping), [] {}).wait();
                          expect(ping.ready(), "the future's event triggered before the future was ready");
                        }),
            0);
}

TEST_P(futures, poison_reaches_futures_continuations_and_the_finish_scope) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int n = rill::rank_n();
                          rill::future<int> bad =
                              rill::rpc(n - 1, []() -> int { throw std::runtime_error("no value"); });
                          bool threw = false;
                          try {
                            (void)bad.then([](int x) { return x; }).get();
                          } catch (const rill::poisoned_error& e) {
                            threw = e.reason().find("no value") != std::string::npos;
                          }
                          expect(threw, "a continuation of a poisoned future did not carry the poison");
                          rill::promise<int> p;
                          rill::async_at(
                              n - 1, [](rill::promise<int> q) { q.poison("gave up"); }, p);
                          bool ran = false, caught = false;
                          try {
                            rill::finish([&] { rill::async_await([&] { ran = true; }, p.get_future()); });
                          } catch (const rill::poisoned_error& e) {
                            caught = e.reason().find("gave up") != std::string::npos;
                          }
                          expect(!ran, "async_await ran after a poisoned input");
                          expect(caught, "finish did not rethrow the poisoned input");
                        }),
            0);
}

TEST_P(futures, a_promise_takes_one_value) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          rill::promise<int> p;
                          p.put(1);
                          bool refused = false;
                          try {
                            p.put(2);
                          } catch (const rill::misuse_error&) {
                            refused = true;
                          }
                          expect(refused && p.get_future().get() == 1, "a second put was taken");
                          rill::future<int> empty;
                          bool invalid = false;
                          try {
                            (void)empty.get();
                          } catch (const rill::misuse_error&) {
                            invalid = true;
                          }
                          expect(invalid, "a default-constructed future did not refuse get()");
                        }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, futures, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
