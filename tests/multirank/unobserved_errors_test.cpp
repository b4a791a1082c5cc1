// Errors nobody observed (--rill:unobserved-errors): a poisoned event that no wait, query or
// dependent operation saw is reported when the run ends, and fails it unless the program says
// otherwise. Before this, a failed proc::spawn or a dropped failing rpc ended in exit 0, silently.
#include <stdexcept>
#include <string>

#include "harness.hpp"
#include "rill/rill.hpp"
#include "stderr_capture.hpp"

namespace {

using rill_test::args;
using rill_test::setup;

struct outcome {
  int code = -1;
  bool ran_top = false;  // this process runs rank 0, which made (and owns) the events
  std::string err;
};

// Runs fn as rank 0's top-level task with `extra` flags, capturing stderr.
template <class F>
outcome run_capturing(const setup& s, F fn, std::vector<std::string> extra = {}) {
  outcome o;
  rill_test::stderr_capture err;
  {
    args a(s, std::move(extra));
    rill::runtime rt(a.argc, a.argv());
    o.code = rt.run([&] {
      o.ran_top = true;
      fn();
      return 0;
    });
  }
  o.err = err.text();
  return o;
}

int other_rank() { return 1 % rill::rank_n(); }

// Rank 0 spawns a task that throws on another rank and never looks at its event.
void drop_a_failed_spawn() {
  (void)rill::proc(other_rank()).spawn([] { throw std::runtime_error("lost on purpose"); });
}

class unobserved_errors : public ::testing::TestWithParam<setup> {};

TEST_P(unobserved_errors, a_failed_spawn_nobody_waits_on_fails_the_run_naming_the_error) {
  const outcome o = run_capturing(GetParam(), drop_a_failed_spawn);
  if (!o.ran_top) {
    EXPECT_EQ(o.code, 0);  // (mpi: a rank that owns none of the events)
    return;
  }
  EXPECT_EQ(o.code, rill::exit_fatal);
  EXPECT_NE(o.err.find("rank 0: 1 error(s) nobody observed"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("lost on purpose"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("completion of a task spawned from rank 0"), std::string::npos) << o.err;
}

TEST_P(unobserved_errors, warn_reports_and_keeps_the_exit_code) {
  const outcome o = run_capturing(GetParam(), drop_a_failed_spawn, {"--rill:unobserved-errors=warn"});
  EXPECT_EQ(o.code, 0);
  if (o.ran_top) {
    EXPECT_NE(o.err.find("lost on purpose"), std::string::npos) << o.err;
  }
}

TEST_P(unobserved_errors, ignore_says_nothing) {
  const outcome o = run_capturing(GetParam(), drop_a_failed_spawn, {"--rill:unobserved-errors=ignore"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.err.find("nobody observed"), std::string::npos) << o.err;
}

TEST_P(unobserved_errors, an_error_that_was_waited_on_or_queried_is_not_reported) {
  const outcome o = run_capturing(GetParam(), [] {
    const rill::event waited = rill::proc(other_rank()).spawn([] { throw std::runtime_error("waited on"); });
    EXPECT_THROW(waited.wait(), rill::poisoned_error);
    const rill::event queried = rill::proc(other_rank()).spawn([] { throw std::runtime_error("queried"); });
    while (!queried.has_triggered()) rill::yield();
    EXPECT_TRUE(queried.poisoned());
    // Passed on: a task after it is poisoned with the same cause, and that task's event is waited on.
    const rill::event failed = rill::proc(other_rank()).spawn([] { throw std::runtime_error("passed on"); });
    const rill::event after = rill::proc(other_rank()).spawn(rill::after(failed), [] {});
    EXPECT_THROW(after.wait(), rill::poisoned_error);
  });
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.err.find("nobody observed"), std::string::npos) << o.err;
}

// has_triggered() says nothing about the error, and a merge hands it on: neither observes it.
TEST_P(unobserved_errors, asking_only_whether_it_triggered_does_not_observe_it) {
  const outcome o = run_capturing(GetParam(), [] {
    const rill::event e = rill::proc(other_rank()).spawn([] { throw std::runtime_error("only polled"); });
    while (!e.has_triggered()) rill::yield();
    (void)rill::merge(e, rill::event::none());
  });
  if (!o.ran_top) return;
  EXPECT_EQ(o.code, rill::exit_fatal);
  EXPECT_NE(o.err.find("only polled"), std::string::npos) << o.err;
}

// A merge with a poisoned input takes its cause and sees every other input: those poisoned
// already, and those poisoned after it was made. Waiting on the merge observes them all (an index
// launch whose points all fail is one error, not one the program saw and three nobody did).
TEST_P(unobserved_errors, a_merge_of_several_failures_observes_them_all) {
  const outcome o = run_capturing(GetParam(), [] {
    const rill::event first = rill::proc(other_rank()).spawn([] { throw std::runtime_error("first failure"); });
    while (!first.has_triggered()) rill::yield();
    const rill::event early = rill::proc(other_rank()).spawn([] { throw std::runtime_error("early failure"); });
    while (!early.has_triggered()) rill::yield();
    rill::user_event gate = rill::user_event::create();
    const rill::event late =
        rill::proc(other_rank()).spawn(rill::after(gate), [] { throw std::runtime_error("late failure"); });
    EXPECT_THROW(rill::merge(std::vector<rill::event>{late, first, early}).wait(), rill::poisoned_error);
    gate.trigger();
    while (!late.has_triggered()) rill::yield();
  });
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.err.find("nobody observed"), std::string::npos) << o.err;
}

// An error passed down a chain nobody looks at is one error, reported at the end of the chain.
TEST_P(unobserved_errors, an_error_passed_down_a_chain_is_reported_once) {
  const outcome o = run_capturing(GetParam(), [] {
    const rill::event first = rill::proc(other_rank()).spawn([] { throw std::runtime_error("first link"); });
    const rill::event second = rill::proc::here().spawn(rill::after(first), [] {});
    (void)rill::proc(other_rank()).spawn(rill::after(second), [] {});
  });
  if (!o.ran_top) return;
  EXPECT_EQ(o.code, rill::exit_fatal);
  EXPECT_NE(o.err.find("1 error(s) nobody observed"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("first link"), std::string::npos) << o.err;
}

TEST_P(unobserved_errors, a_dropped_failing_rpc_or_async_future_is_reported) {
  const outcome o = run_capturing(GetParam(), [] {
    rill::finish([] {
      (void)rill::rpc(other_rank(), []() -> int { throw std::runtime_error("dropped rpc"); });
      (void)rill::async_future([]() -> int { throw std::runtime_error("dropped async_future"); });
    });
  });
  if (!o.ran_top) return;
  EXPECT_EQ(o.code, rill::exit_fatal);
  EXPECT_NE(o.err.find("2 error(s) nobody observed"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("dropped rpc"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("dropped async_future"), std::string::npos) << o.err;
}

// Rank 0 owns the event; another rank poisons it and then waits on it itself: observed there,
// and the owner hears so (whichever came first: the poison or that rank's wait).
TEST_P(unobserved_errors, a_poison_observed_on_the_rank_that_made_it_is_not_reported) {
  const outcome o = run_capturing(GetParam(), [] {
    const rill::user_event u = rill::user_event::create();
    rill::proc(other_rank())
        .spawn(
            [](rill::user_event ev) {
              ev.poison("seen where it was made");
              try {
                rill::event(ev).wait();
              } catch (const rill::poisoned_error&) {
                return;
              }
              throw std::logic_error("the poisoned event did not throw");
            },
            u)
        .wait();
  });
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.err.find("nobody observed"), std::string::npos) << o.err;
}

INSTANTIATE_TEST_SUITE_P(setups, unobserved_errors, ::testing::ValuesIn(rill_test::setups()), rill_test::name_of);

}  // namespace
