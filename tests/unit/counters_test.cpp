// rill::counters: every layer's counters of the calling rank through one interface, agreeing with
// the typed views (stats, event_stats, reservation_stats, steal_stats, gas::stats, launch_counts_here).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "one_rank.hpp"
#include "rill/rill.hpp"
#include "test_argv.hpp"

namespace {

std::map<std::string, std::uint64_t> by_name(const std::vector<rill::counter>& list) {
  std::map<std::string, std::uint64_t> m;
  for (const auto& c : list) m[c.layer + "." + c.name] = c.value;
  return m;
}

TEST(Counters, EveryLayerReportsAndAgreesWithItsTypedView) {
  rill_test::test_argv a(rill_test::command_line("counters_test", {"--rill:transport=local", "--rill:ranks=2"}));
  rill::runtime rt(a.argc, a.argv());
  EXPECT_EQ(rt.run([] {
    for (int i = 0; i < 5; ++i) rill::user_event::create().trigger();
    rill::reservation r = rill::reservation::create();
    r.acquire().wait();
    r.release();
    rill::finish([] { rill::async_at(1, [] {}); });
    const auto list = rill::counters();
    // Bottom up, each layer's counters together.
    std::vector<std::string> layers;
    for (const auto& c : list)
      if (layers.empty() || layers.back() != c.layer) layers.push_back(c.layer);
    EXPECT_EQ(layers, (std::vector<std::string>{"scheduler", "messages", "events", "sync", "global", "steal", "regions",
                                                "runtime"}));
    const auto m = by_name(list);
    const rill::event_counts e = rill::event_stats();
    EXPECT_GE(m.at("events.created"), 5u);
    EXPECT_EQ(m.at("events.created"), e.created);
    EXPECT_EQ(m.at("sync.reservations_created"), rill::reservation_stats().created);
    EXPECT_EQ(m.at("sync.reservations_created"), 1u);
    EXPECT_EQ(m.at("sync.reservation_grants"), rill::reservation_stats().grants);
    EXPECT_EQ(m.at("steal.requests_sent"), rill::steal_stats().requests_sent);
    EXPECT_EQ(m.at("global.gas_blocks_held"), rill::gas::stats().blocks_held);
    EXPECT_GE(m.at("messages.messages_sent"), 1u);
    EXPECT_EQ(m.at("scheduler.tasks_run"), rill::stats().tasks_run);
    EXPECT_EQ(m.at("regions.launches"), rill::launch_counts_here().launches);
    // Termination detection's waves start once this top-level task has returned.
    EXPECT_EQ(m.at("runtime.waves"), 0u);
    EXPECT_EQ(m.at("runtime.wave_messages"), 0u);
    return 0;
  }),
            0);
}

TEST(Counters, OutsideATaskIsAMisuse) { EXPECT_THROW(rill::counters(), rill::misuse_error); }

}  // namespace
