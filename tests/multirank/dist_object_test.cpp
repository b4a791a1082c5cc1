// Distributed objects (rill/dist_object.hpp) across ranks: every rank runs the test body
// (run_spmd). Each rank's instance is its own, remote tasks reach it by id, fetch copies another
// rank's, a task that reaches an object its rank has not constructed yet waits for it, and
// misuse (a destroyed object, ranks constructing in different orders, an empty id) is an error
// naming the cause.
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "spmd_harness.hpp"

namespace rill_test {
namespace {

class dist_objects : public ::testing::TestWithParam<setup> {};

// What rank r's instance starts with.
long start_of(int r) { return 1000L * (r + 1); }

TEST_P(dist_objects, remote_tasks_reach_each_ranks_own_instance_by_id) {
  EXPECT_EQ(run_everywhere(GetParam(),
                           [] {
                             const int n = rill::rank_n();
                             const int me = rill::rank_me();
                             rill::dist_object<std::vector<long>> got(std::vector<long>{start_of(me)});
                             rill::dist_object<long> sum(start_of(me));
                             check(got.id().number() + 1 == sum.id().number(), "ids are not numbered in order");
                             // Every rank adds its rank to every rank's sum and appends it to its vector.
                             rill::finish_spmd([&] {
                               for (int r = 0; r < n; ++r)
                                 rill::async_at(
                                     r,
                                     [](rill::dist_id<std::vector<long>> v, rill::dist_id<long> s, int from) {
                                       // A rank with 2 workers runs two of these at once.
                                       static std::mutex m;
                                       std::lock_guard<std::mutex> g(m);
                                       v->push_back(from);
                                       *s += from;
                                     },
                                     got.id(), sum.id(), me);
                             });
                             check(*sum == start_of(me) + static_cast<long>(n) * (n - 1) / 2, "wrong sum here");
                             check(got->size() == static_cast<std::size_t>(n) + 1, "wrong number of appends here");
                             // Fetch every rank's: the values each computed.
                             for (int r = 0; r < n; ++r) {
                               const long theirs = sum.fetch(r).get();
                               check(theirs == start_of(r) + static_cast<long>(n) * (n - 1) / 2,
                                     "fetched a wrong sum from rank " + std::to_string(r));
                               const std::vector<long> v = got.fetch(r).get();
                               check(!v.empty() && v.front() == start_of(r),
                                     "fetched another rank's vector from rank " + std::to_string(r));
                             }
                             // No rank destroys its objects while another may still fetch them.
                             rill::finish_spmd([] {});
                           }),
            0);
}

TEST_P(dist_objects, a_task_that_reaches_an_object_not_yet_constructed_waits_for_it) {
  EXPECT_EQ(run_everywhere(GetParam(),
                           [] {
                             const int n = rill::rank_n();
                             const int me = rill::rank_me();
                             const int last = n - 1;
                             if (n < 2) return;
                             // The gate of each rank: an event its own rank waits for.
                             rill::dist_object<rill::user_event> gate(rill::user_event::create());
                             if (me == last) {
                               // Constructs `late` only once a task from rank 0 is on its way to it.
                               gate->wait();
                               rill::dist_object<long> late(start_of(me));
                               rill::finish_spmd([] {});
                               return;
                             }
                             rill::dist_object<long> late(start_of(me));
                             if (me == 0) {
                               // The task opens the gate, then reaches `late`, which its rank has not
                               // constructed yet (on one worker it always gets there first).
                               const long got = rill::rpc(
                                                    last,
                                                    [](rill::dist_id<rill::user_event> g, rill::dist_id<long> l) {
                                                      g->trigger();
                                                      return *l;
                                                    },
                                                    gate.id(), late.id())
                                                    .get();
                               check(got == start_of(last), "the waiting task read a wrong value");
                             }
                             rill::finish_spmd([] {});
                           }),
            0);
}

TEST_P(dist_objects, misuse_is_an_error_naming_its_cause) {
  EXPECT_EQ(run_everywhere(GetParam(),
                           [] {
                             const int n = rill::rank_n();
                             const int me = rill::rank_me();
                             auto message_of = [](auto&& fn) -> std::string {
                               try {
                                 fn();
                               } catch (const std::exception& e) {
                                 return e.what();
                               }
                               return "no error";
                             };
                             // A destroyed object.
                             rill::dist_id<int> gone;
                             {
                               rill::dist_object<int> brief(me);
                               gone = brief.id();
                               check(*gone == me, "the id did not reach this rank's instance");
                             }
                             const std::string destroyed = message_of([&] { return *gone; });
                             check(destroyed.find("was destroyed on rank " + std::to_string(me)) != std::string::npos,
                                   "reaching a destroyed object said: " + destroyed);
                             // An id of nothing.
                             const std::string empty = message_of([] { return *rill::dist_id<double>{}; });
                             check(empty.find("names no dist_object") != std::string::npos,
                                   "reaching an empty id said: " + empty);
                             if (n < 2) return;
                             // Ranks that construct in different orders: rank 0's int is the other
                             // ranks' std::string of the same number.
                             rill::finish_spmd([] {});
                             if (me == 0) {
                               rill::dist_object<int> first(1);
                               rill::dist_object<std::string> second("x");
                               const std::string mismatch = message_of([&] { return first.fetch(1).get(); });
                               check(mismatch.find("holds a std::__cxx11::basic_string") != std::string::npos &&
                                         mismatch.find("not a int") != std::string::npos,
                                     "a mismatched order said: " + mismatch);
                               rill::finish_spmd([] {});
                             } else {
                               rill::dist_object<std::string> first("x");
                               rill::dist_object<int> second(1);
                               rill::finish_spmd([] {});
                             }
                           }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, dist_objects, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
