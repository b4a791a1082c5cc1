// --rill:trace on the local transport: a run of several ranks writes one trace (docs/tracing.md)
// whose structure tests/support/trace_check.hpp checks; the checker itself catches broken traces.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "rill/rill.hpp"
#include "test_argv.hpp"
#include "trace_check.hpp"

namespace {

std::filesystem::path temp_trace(const char* name) {
  return std::filesystem::temp_directory_path() / (std::string(name) + "." + std::to_string(getpid()) + ".json");
}

nlohmann::json load(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// Tasks on every rank that send to each other and wait (so fibers park), across 3 ranks with chaos.
int traced_program(const std::filesystem::path& path, const std::string& chaos) {
  rill_test::test_argv a(
      rill_test::command_line("trace_test", {"--rill:transport=local", "--rill:ranks=3", "--rill:workers=2",
                                             "--rill:chaos=" + chaos, "--rill:trace=" + path.string()}));
  rill::runtime rt(a.argc, a.argv());
  return rt.run([] {
    std::atomic<int> done{0};
    rill::finish([&] {
      for (int i = 0; i < 60; ++i)
        rill::async_at(i % rill::rank_n(), [] {
          rill::finish([] {
            for (int j = 0; j < 4; ++j) rill::async([] {});
          });
        });
      rill::async([&] { done.fetch_add(1); });
    });
    // Tasks released by a trigger: on another rank (through the owner's notification) and here.
    rill::user_event e = rill::user_event::create();
    rill::event later = rill::proc(1).spawn(rill::after(e), [] {});
    rill::event here = rill::proc(0).spawn(rill::after(e), [] {});
    e.trigger();
    later.wait();
    here.wait();
    return done.load() == 1 ? 0 : 1;
  });
}

TEST(RuntimeTrace, AMultiRankRunWritesOneWellFormedTrace) {
  for (const char* chaos : {"0", "7"}) {
    const auto path = temp_trace("rill_trace_test");
    ASSERT_EQ(traced_program(path, chaos), 0);
    ASSERT_TRUE(std::filesystem::exists(path)) << "chaos " << chaos;
    for (int r = 0; r < 3; ++r)
      EXPECT_FALSE(std::filesystem::exists(path.string() + ".part." + std::to_string(r))) << "parts are merged";
    const auto s = rill_test::check_trace(load(path));
    for (const auto& p : s.problems) ADD_FAILURE() << "chaos " << chaos << ": " << p;
    EXPECT_EQ(s.ranks.size(), 3u);
    for (long pid = 1; pid <= 3; ++pid) {
      EXPECT_GT(s.tasks.at(pid), 0u) << "rank " << pid - 1 << " ran traced tasks";
      EXPECT_GT(s.handlers.at(pid), 0u) << "rank " << pid - 1 << " ran traced handlers";
    }
    // Every async_at to another rank is a message whose send and handler are joined by an arrow.
    EXPECT_GE(s.arrows, 40u);
    // Both tasks spawned after e: an arrow from e's trigger to each (one per task, across ranks too).
    EXPECT_GE(s.event_arrows, 2u);
    std::filesystem::remove(path);
  }
}

// The data layer's work in the trace: a fill, a copy to another rank and a reduction from one are
// spans named for what they do, with the bytes they moved and the rank at the other end.
TEST(RuntimeTrace, CopiesReductionsAndFillsAreSpansWithTheirBytes) {
  const auto path = temp_trace("rill_trace_data");
  rill_test::test_argv a(rill_test::command_line(
      "trace_test", {"--rill:transport=local", "--rill:ranks=2", "--rill:workers=2", "--rill:trace=" + path.string()}));
  rill::runtime rt(a.argc, a.argv());
  constexpr rill::field_id value = 1;
  ASSERT_EQ(rt.run([] {
    const rill::field_space doubles = rill::field_space{}.add(value, sizeof(double));
    auto [src, src_ready] = rill::instance::create(rill::memory::system(0), rill::rect<1>{0, 1023}, doubles);
    auto [dst, dst_ready] = rill::instance::create(rill::memory::system(1), rill::rect<1>{0, 1023}, doubles);
    const rill::event filled = rill::fill(src, rill::field<double>{value}, 2.5, src_ready);
    const rill::event copied = rill::copy(src, dst, {value}, rill::merge(filled, dst_ready));
    using add = rill::reduce::sum<double>;
    auto [partial, partial_ready] =
        rill::create_fold_instance<add>(rill::memory::system(1), rill::rect<1>{0, 511}, value);
    const rill::event reduced = rill::reduce_into<add>(partial, value, src, value, rill::merge(partial_ready, copied));
    rill::merge(src.destroy(reduced), dst.destroy(copied), partial.destroy(reduced)).wait();
    return 0;
  }),
            0);
  const nlohmann::json doc = load(path);
  const auto s = rill_test::check_trace(doc);
  for (const auto& p : s.problems) ADD_FAILURE() << p;
  // Per span name, the (pid, bytes, peer) of each span.
  std::map<std::string, std::vector<std::tuple<long, std::uint64_t, long>>> spans;
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "copy") continue;
    const auto& args = e.at("args");
    spans[e.value("name", "")].emplace_back(e.value("pid", -1L), args.at("bytes").get<std::uint64_t>(),
                                            args.value("peer", -1L));
  }
  auto has = [&](const std::string& name, std::uint64_t bytes, long peer) {
    for (const auto& [pid, b, p] : spans[name])
      if (b == bytes && p == peer) return true;
    return false;
  };
  EXPECT_TRUE(has("fill", 1024 * sizeof(double), -1)) << "the fill of 1024 doubles";
  // The copy is received on rank 1 (pid 2) from rank 0, or written there directly by rank 0.
  EXPECT_TRUE(has("copy", 1024 * sizeof(double), 0) || has("copy", 1024 * sizeof(double), 1))
      << "the copy of 1024 doubles between the ranks";
  EXPECT_TRUE(has("reduction", 512 * sizeof(double), 1) || has("reduction", 512 * sizeof(double), 0))
      << "the reduction of 512 doubles between the ranks";
  for (const auto& [pid, b, p] : spans["copy"]) EXPECT_LE(b, 1024 * sizeof(double)) << "no copy moves more";
  std::filesystem::remove(path);
}

TEST(RuntimeTrace, WithoutTheOptionNothingIsWritten) {
  const auto path = temp_trace("rill_trace_off");
  rill_test::test_argv a(rill_test::command_line("trace_test", {"--rill:transport=local", "--rill:ranks=2"}));
  rill::runtime rt(a.argc, a.argv());
  EXPECT_EQ(rt.run([] {
    rill::finish([] { rill::async_at(1, [] {}); });
    return 0;
  }),
            0);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceCheck, FindsAFlowWithoutItsEndAndSpansThatDoNotNest) {
  nlohmann::json doc = {{"traceEvents",
                         {{{"ph", "X"}, {"name", "task"}, {"pid", 1}, {"tid", 11}, {"ts", 1.0}, {"dur", 5.0}},
                          {{"ph", "X"}, {"name", "task"}, {"pid", 1}, {"tid", 11}, {"ts", 2.0}, {"dur", 9.0}},
                          {{"ph", "s"}, {"id", 4}, {"pid", 1}, {"tid", 11}, {"ts", 2.5}}}}};
  const auto s = rill_test::check_trace(doc);
  ASSERT_EQ(s.problems.size(), 2u);
  EXPECT_NE(s.problems[0].find("flow 4: 1 start(s), 0 end(s)"), std::string::npos) << s.problems[0];
  EXPECT_NE(s.problems[1].find("overlaps its enclosing span"), std::string::npos) << s.problems[1];
}

TEST(TraceCheck, FindsALaneGoingBackInTime) {
  nlohmann::json doc = {{"traceEvents",
                         {{{"ph", "i"}, {"name", "steal"}, {"pid", 1}, {"tid", 11}, {"ts", 3.0}},
                          {{"ph", "i"}, {"name", "steal"}, {"pid", 1}, {"tid", 11}, {"ts", 2.0}}}}};
  const auto s = rill_test::check_trace(doc);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_NE(s.problems[0].find("goes back in time"), std::string::npos);
}

}  // namespace
