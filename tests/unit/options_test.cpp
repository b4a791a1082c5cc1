// Unit tests of --rill:* flag and RILL_* variable parsing (src/common/options.hpp).
#include "common/options.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include "rill/detail/segment_layout.hpp"
#include "rill/error.hpp"
#include "test_argv.hpp"

namespace {

using rill::usage_error;
using rill::detail::options_help;
using rill::detail::parse_options;
using rill::detail::parsed_options;

const char* const all_names[] = {"ranks",
                                 "workers",
                                 "transport",
                                 "stack",
                                 "agg-bytes",
                                 "agg-age-us",
                                 "large-bytes",
                                 "queue-buffers",
                                 "chaos",
                                 "log",
                                 "idle-poll-us",
                                 "event-graph",
                                 "hang-report-s",
                                 "steal",
                                 "steal-batch",
                                 "segment",
                                 "global-heap",
                                 "shared-segments",
                                 "gas-cache",
                                 "gas-cache-entries",
                                 "tag-checks",
                                 "node-ring",
                                 "inline-queue",
                                 "trace",
                                 "stats",
                                 "unobserved-errors",
                                 "faults",
                                 "unresponsive-s",
                                 "channels",
                                 "instance-budget",
                                 "launch-memo",
                                 "io-threads",
                                 "write-after-read",
                                 "io-order",
                                 "bind",
                                 "progress",
                                 "agg-idle-flush",
                                 "ranks-per-node",
                                 "io-depth",
                                 "io-direct",
                                 "io-fuse",
                                 "memory-keep",
                                 "tree-fanout"};

std::string env_of(const std::string& name) {
  std::string e = "RILL_";
  for (char c : name) e += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return e;
}

// An argv whose strings the parser may reorder; keeps a null terminator like a real one.
struct args : rill_test::test_argv {
  args(std::initializer_list<std::string> words) : test_argv(std::vector<std::string>(words)) {}
};

parsed_options parse(args& a) { return parse_options(a.argc, a.argv()); }

// Parses one flag and expects a usage_error whose text names `name`.
void expect_usage_error(const std::string& flag, const std::string& name) {
  args a{"prog", flag};
  try {
    parse(a);
    ADD_FAILURE() << flag << " was accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << "message for " << flag << ": " << e.what();
  }
}

class Options : public ::testing::Test {
 protected:
  void SetUp() override { clear_env(); }
  void TearDown() override { clear_env(); }
  static void clear_env() {
    for (const char* n : all_names) unsetenv(env_of(n).c_str());
    unsetenv("RILL_HELP");
  }
};

TEST_F(Options, NoFlagsGiveDefaults) {
  args a{"prog"};
  parsed_options o = parse(a);
  const rill::config d;
  EXPECT_EQ(o.cfg.ranks, d.ranks);
  EXPECT_EQ(o.cfg.workers, d.workers);
  EXPECT_EQ(o.cfg.transport, d.transport);
  EXPECT_EQ(o.cfg.stack_bytes, d.stack_bytes);
  EXPECT_EQ(o.cfg.agg_bytes, d.agg_bytes);
  EXPECT_EQ(o.cfg.agg_age_us, d.agg_age_us);
  EXPECT_EQ(o.cfg.large_bytes, d.large_bytes);
  EXPECT_EQ(o.cfg.queue_buffers, d.queue_buffers);
  EXPECT_EQ(o.cfg.node_ring_bytes, std::size_t{1} << 20);
  EXPECT_EQ(o.cfg.chaos, d.chaos);
  EXPECT_EQ(o.cfg.log, d.log);
  EXPECT_EQ(o.cfg.idle_poll_us, d.idle_poll_us);
  EXPECT_EQ(o.cfg.event_graph, "");  // off
  EXPECT_EQ(o.cfg.hang_report_s, 30.0);
  EXPECT_FALSE(o.was_given("workers"));
  EXPECT_FALSE(o.was_given("transport"));
  EXPECT_FALSE(o.help);
  EXPECT_EQ(a.argc, 1);
  EXPECT_EQ(a.ptrs[1], nullptr);
}

TEST_F(Options, ConsumesRillFlagsAndKeepsOthersInOrder) {
  args a{
      "prog",          "first",        "--rill:ranks=3",   "--other=1", "--rill:workers=2", "-x", "--rill-not-a-flag",
      "-rill:ranks=9", "rill:ranks=9", "--rill:log=error", "last"};
  char* const first = a.ptrs[1];
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.ranks, 3);
  EXPECT_EQ(o.cfg.workers, 2);
  EXPECT_EQ(o.cfg.log, "error");
  EXPECT_EQ(a.left(), (std::vector<std::string>{"prog", "first", "--other=1", "-x", "--rill-not-a-flag",
                                                "-rill:ranks=9", "rill:ranks=9", "last"}));
  EXPECT_EQ(a.argc, 8);
  EXPECT_EQ(a.ptrs[8], nullptr);
  EXPECT_EQ(a.ptrs[1], first);  // the same strings, moved, not copied
}

TEST_F(Options, OnlyRillFlagsLeavesProgramName) {
  args a{"prog", "--rill:ranks=2", "--rill:chaos=7"};
  parsed_options o = parse(a);
  EXPECT_EQ(a.argc, 1);
  EXPECT_EQ(a.left(), std::vector<std::string>{"prog"});
  EXPECT_EQ(a.ptrs[1], nullptr);
  EXPECT_EQ(o.cfg.ranks, 2);
  EXPECT_EQ(o.cfg.chaos, 7u);
}

TEST_F(Options, ProgramNameIsNeverParsed) {
  args a{"--rill:ranks=7", "--rill:ranks=2"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.ranks, 2);
  EXPECT_EQ(a.left(), std::vector<std::string>{"--rill:ranks=7"});
}

TEST_F(Options, AnArgcPastArgvsEndIsRefused) {
  // A second runtime built from a copy of argc taken before the first removed its flags: argv
  // ends (a null pointer) before argc says it does.
  args a{"prog", "--rill:ranks=2", "data.h5"};
  int stale = a.argc;
  parse(a);
  ASSERT_EQ(a.argc, 2);
  try {
    parse_options(stale, a.argv());
    ADD_FAILURE() << "an argc of " << stale << " over 2 arguments was accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("argc"), std::string::npos) << e.what();
  }
}

TEST_F(Options, EmptyArgvIsAccepted) {
  std::vector<char*> argv{nullptr};
  int argc = 0;
  parsed_options o = parse_options(argc, argv.data());
  EXPECT_EQ(argc, 0);
  EXPECT_EQ(o.cfg.ranks, 1);
}

TEST_F(Options, ParsesEveryValue) {
  args a{"prog",
         "--rill:ranks=4",
         "--rill:workers=3",
         "--rill:transport=mpi",
         "--rill:stack=128K",
         "--rill:agg-bytes=8K",
         "--rill:agg-age-us=750",
         "--rill:large-bytes=1M",
         "--rill:queue-buffers=17",
         "--rill:node-ring=4100",
         "--rill:chaos=18446744073709551615",
         "--rill:log=debug",
         "--rill:idle-poll-us=0",
         "--rill:inline-queue=0",
         "--rill:channels=0"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.ranks, 4);
  EXPECT_EQ(o.cfg.workers, 3);
  EXPECT_TRUE(o.was_given("workers"));
  EXPECT_EQ(o.cfg.transport, rill::transport_kind::mpi);
  EXPECT_TRUE(o.was_given("transport"));
  EXPECT_EQ(o.cfg.stack_bytes, 128u * 1024);
  EXPECT_EQ(o.cfg.agg_bytes, 8u * 1024);
  EXPECT_EQ(o.cfg.agg_age_us, 750u);
  EXPECT_EQ(o.cfg.large_bytes, 1024u * 1024);
  EXPECT_EQ(o.cfg.queue_buffers, 17);
  EXPECT_EQ(o.cfg.node_ring_bytes, 4160u);  // rounded up to whole cache lines
  EXPECT_EQ(o.cfg.chaos, 18446744073709551615ull);
  EXPECT_EQ(o.cfg.log, "debug");
  EXPECT_EQ(o.cfg.idle_poll_us, 0u);
  EXPECT_EQ(o.cfg.inline_queue, 0);
  EXPECT_EQ(o.cfg.channels, 0);
  EXPECT_EQ(a.argc, 1);
}

TEST_F(Options, TransportLocalIsGiven) {
  args a{"prog", "--rill:transport=local"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.transport, rill::transport_kind::local);
  EXPECT_TRUE(o.was_given("transport"));
}

TEST_F(Options, SizeSuffixes) {
  struct {
    const char* text;
    std::size_t bytes;
  } cases[] = {{"8192", 8192},     {"16K", 16384},   {"16KiB", 16384},   {"2M", 2u << 20},
               {"2MiB", 2u << 20}, {"1G", 1u << 30}, {"1GiB", 1u << 30}, {"1048576", 1u << 20}};
  for (const auto& c : cases) {
    args a{"prog", std::string("--rill:stack=") + c.text};
    EXPECT_EQ(parse(a).cfg.stack_bytes, c.bytes) << c.text;
  }
  args b{"prog", "--rill:agg-bytes=64", "--rill:large-bytes=64"};
  parsed_options o = parse(b);
  EXPECT_EQ(o.cfg.agg_bytes, 64u);
  EXPECT_EQ(o.cfg.large_bytes, 64u);
}

TEST_F(Options, LastFlagWins) {
  args a{"prog", "--rill:ranks=2", "--rill:ranks=5", "--rill:log=off", "--rill:log=trace"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.ranks, 5);
  EXPECT_EQ(o.cfg.log, "trace");
}

TEST_F(Options, EveryLogLevelIsAccepted) {
  for (const char* level : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    args a{"prog", std::string("--rill:log=") + level};
    EXPECT_EQ(parse(a).cfg.log, level);
  }
}

TEST_F(Options, HelpFlag) {
  args a{"prog", "--rill:help", "keep"};
  parsed_options o = parse(a);
  EXPECT_TRUE(o.help);
  EXPECT_EQ(a.left(), (std::vector<std::string>{"prog", "keep"}));
  expect_usage_error("--rill:help=yes", "help");
}

TEST_F(Options, UnknownFlagThrows) {
  expect_usage_error("--rill:bogus=1", "bogus");
  expect_usage_error("--rill:rank=2", "rank");
  expect_usage_error("--rill:Ranks=2", "Ranks");
  expect_usage_error("--rill:", "--rill:");
}

// --rill:faults reads every kind of fault, and --rill:help shows them as they are written.
TEST_F(Options, FaultPlansParse) {
  args a{"prog", "--rill:faults=drop=50,stall=2@100,slow=1:20"};
  const rill::fault_plan plan = parse(a).cfg.faults;
  EXPECT_EQ(plan.drop_one_in, 50u);
  EXPECT_EQ(plan.stall_rank, 2);
  EXPECT_EQ(plan.stall_after, 100u);
  EXPECT_EQ(plan.slow_rank, 1);
  EXPECT_EQ(plan.slow_ms, 20u);
  EXPECT_TRUE(plan.any());
  EXPECT_FALSE(rill::config{}.faults.any());
  args b{"prog", "--rill:faults=slow=3:7"};
  const rill::fault_plan slow = parse(b).cfg.faults;
  EXPECT_EQ(slow.drop_one_in, 0u);
  EXPECT_EQ(slow.stall_rank, -1);
  EXPECT_EQ(slow.slow_rank, 3);
}

TEST_F(Options, MalformedNumbersThrow) {
  expect_usage_error("--rill:ranks=abc", "ranks");
  expect_usage_error("--rill:ranks=3x", "ranks");
  expect_usage_error("--rill:ranks= 3", "ranks");
  expect_usage_error("--rill:ranks=", "ranks");
  expect_usage_error("--rill:ranks=1.5", "ranks");
  expect_usage_error("--rill:workers=-1", "workers");
  expect_usage_error("--rill:agg-age-us=-5", "agg-age-us");
  expect_usage_error("--rill:queue-buffers=0", "queue-buffers");
  expect_usage_error("--rill:node-ring=100", "node-ring");  // neither 0 (off) nor room for a ring
  expect_usage_error("--rill:chaos=18446744073709551616", "chaos");
  expect_usage_error("--rill:idle-poll-us=many", "idle-poll-us");
  expect_usage_error("--rill:inline-queue=-1", "inline-queue");
  expect_usage_error("--rill:channels=65", "channels");
  expect_usage_error("--rill:stack=12Q", "stack");
  expect_usage_error("--rill:faults=drop=0", "faults");
  expect_usage_error("--rill:faults=drop", "faults");
  expect_usage_error("--rill:faults=stall=1", "faults");
  expect_usage_error("--rill:faults=slow=1:", "faults");
  expect_usage_error("--rill:faults=slow=2000:5", "faults");
  expect_usage_error("--rill:faults=drop=5,,", "faults");
  expect_usage_error("--rill:faults=burn=1", "faults");
  expect_usage_error("--rill:unresponsive-s=-1", "unresponsive-s");
  expect_usage_error("--rill:stack=K", "stack");
  expect_usage_error("--rill:agg-bytes=4k", "agg-bytes");
  expect_usage_error("--rill:large-bytes=", "large-bytes");
}

TEST_F(Options, StealPolicyAndBatch) {
  args d{"prog"};
  EXPECT_EQ(parse(d).cfg.steal, rill::steal_policy::random);
  EXPECT_EQ(parse(d).cfg.steal_batch, 8u);
  args a{"prog", "--rill:steal=hierarchical", "--rill:steal-batch=3"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.steal, rill::steal_policy::hierarchical);
  EXPECT_EQ(o.cfg.steal_batch, 3u);
  args b{"prog", "--rill:steal=off"};
  EXPECT_EQ(parse(b).cfg.steal, rill::steal_policy::off);
  expect_usage_error("--rill:steal=always", "steal");
  expect_usage_error("--rill:steal-batch=0", "steal-batch");
}

TEST_F(Options, InstanceBudget) {
  args d{"prog"};
  EXPECT_EQ(parse(d).cfg.instance_budget, 0u);
  args a{"prog", "--rill:instance-budget=64M"};
  EXPECT_EQ(parse(a).cfg.instance_budget, std::size_t{64} << 20);
  expect_usage_error("--rill:instance-budget=lots", "instance-budget");
}

// Switches that are on unless turned off.
TEST_F(Options, SwitchesOnByDefaultTurnOff) {
  const std::pair<const char*, bool rill::config::*> switches[] = {{"launch-memo", &rill::config::launch_memo},
                                                                   {"agg-idle-flush", &rill::config::agg_idle_flush}};
  for (const auto& [name, member] : switches) {
    SCOPED_TRACE(name);
    args d{"prog"};
    EXPECT_TRUE(parse(d).cfg.*member);
    args a{"prog", std::string("--rill:") + name + "=off"};
    EXPECT_FALSE(parse(a).cfg.*member);
    expect_usage_error(std::string("--rill:") + name + "=sometimes", name);
  }
}

TEST_F(Options, WriteAfterRead) {
  args d{"prog"};
  EXPECT_TRUE(parse(d).cfg.write_after_read);
  args a{"prog", "--rill:write-after-read=off"};
  EXPECT_FALSE(parse(a).cfg.write_after_read);
  expect_usage_error("--rill:write-after-read=maybe", "write-after-read");
}

TEST_F(Options, IoQueue) {
  args d{"prog"};
  const parsed_options defaults = parse(d);
  EXPECT_EQ(defaults.cfg.io_ordering, rill::io_order::elevator);
  EXPECT_EQ(defaults.cfg.io_depth, 0);
  EXPECT_EQ(defaults.cfg.io_direct_bytes, 0u);
  EXPECT_EQ(defaults.cfg.io_fuse_bytes, std::size_t{16} << 20);
  args a{"prog", "--rill:io-order=fifo", "--rill:io-depth=2", "--rill:io-direct=1MiB", "--rill:io-fuse=64K"};
  const parsed_options set = parse(a);
  EXPECT_EQ(set.cfg.io_ordering, rill::io_order::fifo);
  EXPECT_EQ(set.cfg.io_depth, 2);
  EXPECT_EQ(set.cfg.io_direct_bytes, std::size_t{1} << 20);
  EXPECT_EQ(set.cfg.io_fuse_bytes, std::size_t{64} << 10);
  args off{"prog", "--rill:io-direct=0", "--rill:io-fuse=0"};
  const parsed_options none = parse(off);
  EXPECT_EQ(none.cfg.io_direct_bytes, 0u);
  EXPECT_EQ(none.cfg.io_fuse_bytes, 0u);
  expect_usage_error("--rill:io-order=shortest-first", "io-order");
  expect_usage_error("--rill:io-depth=-1", "io-depth");
  expect_usage_error("--rill:io-direct=lots", "io-direct");
  expect_usage_error("--rill:io-fuse=2G", "io-fuse");
}

TEST_F(Options, Bind) {
  args d{"prog"};
  EXPECT_EQ(parse(d).cfg.bind, rill::bind_policy::none);
  args a{"prog", "--rill:bind=cores"};
  EXPECT_EQ(parse(a).cfg.bind, rill::bind_policy::cores);
  expect_usage_error("--rill:bind=sockets", "bind");
}

TEST_F(Options, Progress) {
  args d{"prog"};
  EXPECT_EQ(parse(d).cfg.progress, rill::progress_mode::worker);
  args a{"prog", "--rill:progress=thread"};
  const parsed_options t = parse(a);
  EXPECT_EQ(t.cfg.progress, rill::progress_mode::thread);
  EXPECT_EQ(rill::detail::threads_per_rank(t.cfg), t.cfg.workers + t.cfg.channels + t.cfg.io_threads + 1);
  expect_usage_error("--rill:progress=interrupt", "progress");
}

TEST_F(Options, MemoryKeep) {
  args d{"prog"};
  EXPECT_EQ(parse(d).cfg.memory_keep_bytes, std::size_t{1} << 30);
  args a{"prog", "--rill:memory-keep=256M"};
  EXPECT_EQ(parse(a).cfg.memory_keep_bytes, std::size_t{256} << 20);
  args off{"prog", "--rill:memory-keep=0"};
  EXPECT_EQ(parse(off).cfg.memory_keep_bytes, 0u);
  expect_usage_error("--rill:memory-keep=some", "memory-keep");
}

TEST_F(Options, GasTranslationCache) {
  args d{"prog"};
  EXPECT_EQ(parse(d).cfg.gas_cache, rill::gas_cache_policy::unbounded);
  args a{"prog", "--rill:gas-cache=lru", "--rill:gas-cache-entries=1024"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.gas_cache, rill::gas_cache_policy::lru);
  EXPECT_EQ(o.cfg.gas_cache_entries, 1024u);
  args b{"prog", "--rill:gas-cache=random"};
  EXPECT_EQ(parse(b).cfg.gas_cache, rill::gas_cache_policy::random);
  expect_usage_error("--rill:gas-cache=fifo", "gas-cache");
  expect_usage_error("--rill:gas-cache-entries=0", "gas-cache-entries");
}

TEST_F(Options, SegmentSizeAndSharing) {
  args d{"prog"};
  EXPECT_EQ(parse(d).cfg.segment_bytes, std::size_t{128} << 20);
  EXPECT_TRUE(parse(d).cfg.shared_segments);
  args a{"prog", "--rill:segment=1GiB", "--rill:shared-segments=off"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.segment_bytes, std::size_t{1} << 30);
  EXPECT_FALSE(o.cfg.shared_segments);
  expect_usage_error("--rill:segment=1KiB", "segment");
  expect_usage_error("--rill:shared-segments=maybe", "shared-segments");
}

// Safe by default in every build; the faster mode is an opt-in whose risk --rill:help states.
TEST_F(Options, TagChecks) {
  args d{"prog"};
  EXPECT_EQ(parse(d).cfg.tag_check, rill::tag_checks::every);
  const std::string help = options_help();
  const std::size_t line = help.find("--rill:tag-checks");
  EXPECT_NE(help.find("MAY WRITE INTO MEMORY ALLOCATED SINCE", line), std::string::npos) << help;
  args every{"prog", "--rill:tag-checks=every"};
  EXPECT_EQ(parse(every).cfg.tag_check, rill::tag_checks::every);
  args home{"prog", "--rill:tag-checks=home"};
  EXPECT_EQ(parse(home).cfg.tag_check, rill::tag_checks::home);
  expect_usage_error("--rill:tag-checks=sometimes", "tag-checks");
}

// Reporting errors nobody observed, and failing the run for them, is the default.
TEST_F(Options, UnobservedErrors) {
  args d{"prog"};
  EXPECT_EQ(parse(d).cfg.unobserved_errors, rill::unobserved_policy::fatal);
  args warn{"prog", "--rill:unobserved-errors=warn"};
  EXPECT_EQ(parse(warn).cfg.unobserved_errors, rill::unobserved_policy::warn);
  args ignore{"prog", "--rill:unobserved-errors=ignore"};
  EXPECT_EQ(parse(ignore).cfg.unobserved_errors, rill::unobserved_policy::ignore);
  expect_usage_error("--rill:unobserved-errors=maybe", "unobserved-errors");
}

TEST_F(Options, GlobalHeapIsHalfTheSegmentUnlessGivenAndLeavesRoomForTheOwnHeap) {
  args d{"prog", "--rill:segment=1GiB"};
  EXPECT_EQ(parse(d).cfg.global_heap_bytes, std::size_t{512} << 20);
  // Too small for halves: the own heap keeps 64 KiB after the segment's locks and tags.
  args small{"prog", "--rill:segment=128KiB"};
  const std::size_t global = parse(small).cfg.global_heap_bytes;
  EXPECT_LT(global, std::size_t{64} << 10);
  EXPECT_EQ(global % 4096, 0u);
  EXPECT_GE((std::size_t{128} << 10) - global - rill::detail::segment_layout::heap_start(std::size_t{128} << 10),
            std::size_t{64} << 10);
  args odd{"prog", "--rill:segment=1000000", "--rill:global-heap=500000"};  // whole pages
  parsed_options o = parse(odd);
  EXPECT_EQ(o.cfg.segment_bytes % 4096, 0u);
  EXPECT_GE(o.cfg.segment_bytes, 1000000u);
  EXPECT_EQ(o.cfg.global_heap_bytes, 500000u / 4096 * 4096);
  expect_usage_error("--rill:global-heap=128MiB", "global-heap");  // all of the default segment
  expect_usage_error("--rill:global-heap=lots", "global-heap");
}

TEST_F(Options, Trace) {
  args a{"prog", "--rill:trace=/tmp/run.json"};
  EXPECT_EQ(parse(a).cfg.trace, "/tmp/run.json");
  args b{"prog"};
  EXPECT_EQ(parse(b).cfg.trace, "");
  setenv("RILL_TRACE", "t.json", 1);
  args c{"prog"};
  EXPECT_EQ(parse(c).cfg.trace, "t.json");
  expect_usage_error("--rill:trace=", "trace");
  expect_usage_error("--rill:trace", "trace");
}

TEST_F(Options, Stats) {
  args a{"prog", "--rill:stats"};
  EXPECT_TRUE(parse(a).cfg.stats);
  args b{"prog", "--rill:stats=off"};
  EXPECT_FALSE(parse(b).cfg.stats);
  args c{"prog"};
  EXPECT_FALSE(parse(c).cfg.stats);
  setenv("RILL_STATS", "on", 1);
  args d{"prog"};
  EXPECT_TRUE(parse(d).cfg.stats);
  expect_usage_error("--rill:stats=yes", "stats");
}

TEST_F(Options, EventGraphAndHangReport) {
  args a{"prog", "--rill:event-graph=/tmp/run.dot", "--rill:hang-report-s=0.25"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.event_graph, "/tmp/run.dot");
  EXPECT_EQ(o.cfg.hang_report_s, 0.25);
  args b{"prog", "--rill:hang-report-s=0"};
  EXPECT_EQ(parse(b).cfg.hang_report_s, 0.0);
  args c{"prog", "--rill:hang-report-s=120"};
  EXPECT_EQ(parse(c).cfg.hang_report_s, 120.0);
  setenv("RILL_HANG_REPORT_S", "7.5", 1);
  setenv("RILL_EVENT_GRAPH", "g.dot", 1);
  args d{"prog"};
  parsed_options e = parse(d);
  EXPECT_EQ(e.cfg.hang_report_s, 7.5);
  EXPECT_EQ(e.cfg.event_graph, "g.dot");
  expect_usage_error("--rill:event-graph=", "event-graph");
  expect_usage_error("--rill:event-graph", "event-graph");
  expect_usage_error("--rill:hang-report-s=-1", "hang-report-s");
  expect_usage_error("--rill:hang-report-s=soon", "hang-report-s");
  expect_usage_error("--rill:hang-report-s=1s", "hang-report-s");
  expect_usage_error("--rill:hang-report-s=", "hang-report-s");
  expect_usage_error("--rill:hang-report-s=nan", "hang-report-s");
  expect_usage_error("--rill:hang-report-s=1e9", "hang-report-s");
}

TEST_F(Options, ZeroRanksOrWorkersThrow) {
  expect_usage_error("--rill:ranks=0", "ranks");
  expect_usage_error("--rill:workers=0", "workers");
}

TEST_F(Options, UnknownTransportThrows) {
  expect_usage_error("--rill:transport=tcp", "transport");
  expect_usage_error("--rill:transport=", "transport");
  expect_usage_error("--rill:transport=MPI", "transport");
}

TEST_F(Options, MissingValueThrows) {
  expect_usage_error("--rill:ranks", "ranks");
  expect_usage_error("--rill:stack", "stack");
  expect_usage_error("--rill:log", "log");
  expect_usage_error("--rill:transport", "transport");
}

TEST_F(Options, OutOfRangeSizesThrow) {
  expect_usage_error("--rill:stack=4K", "stack");
  expect_usage_error("--rill:stack=8191", "stack");
  expect_usage_error("--rill:stack=0", "stack");
  expect_usage_error("--rill:stack=2G", "stack");
  expect_usage_error("--rill:stack=99999999999999999G", "stack");
  expect_usage_error("--rill:agg-bytes=63", "agg-bytes");
  expect_usage_error("--rill:large-bytes=2G", "large-bytes");
  expect_usage_error("--rill:ranks=1025", "ranks");
  expect_usage_error("--rill:log=loud", "log");
}

TEST_F(Options, EnvironmentVariablesAreRead) {
  setenv("RILL_RANKS", "6", 1);
  setenv("RILL_WORKERS", "5", 1);
  setenv("RILL_TRANSPORT", "local", 1);
  setenv("RILL_STACK", "256K", 1);
  setenv("RILL_AGG_BYTES", "16K", 1);
  setenv("RILL_AGG_AGE_US", "42", 1);
  setenv("RILL_LARGE_BYTES", "2M", 1);
  setenv("RILL_QUEUE_BUFFERS", "9", 1);
  setenv("RILL_CHAOS", "99", 1);
  setenv("RILL_LOG", "info", 1);
  setenv("RILL_IDLE_POLL_US", "123", 1);
  args a{"prog", "arg"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.ranks, 6);
  EXPECT_EQ(o.cfg.workers, 5);
  EXPECT_TRUE(o.was_given("workers"));
  EXPECT_EQ(o.cfg.transport, rill::transport_kind::local);
  EXPECT_TRUE(o.was_given("transport"));
  EXPECT_EQ(o.cfg.stack_bytes, 256u * 1024);
  EXPECT_EQ(o.cfg.agg_bytes, 16u * 1024);
  EXPECT_EQ(o.cfg.agg_age_us, 42u);
  EXPECT_EQ(o.cfg.large_bytes, 2u << 20);
  EXPECT_EQ(o.cfg.queue_buffers, 9);
  EXPECT_EQ(o.cfg.chaos, 99u);
  EXPECT_EQ(o.cfg.log, "info");
  EXPECT_EQ(o.cfg.idle_poll_us, 123u);
  EXPECT_EQ(a.left(), (std::vector<std::string>{"prog", "arg"}));
}

TEST_F(Options, FlagsOverrideEnvironment) {
  setenv("RILL_RANKS", "6", 1);
  setenv("RILL_STACK", "256K", 1);
  setenv("RILL_LOG", "info", 1);
  args a{"prog", "--rill:ranks=2", "--rill:log=critical"};
  parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.ranks, 2);
  EXPECT_EQ(o.cfg.log, "critical");
  EXPECT_EQ(o.cfg.stack_bytes, 256u * 1024);  // not overridden
}

TEST_F(Options, BadEnvironmentErrorNamesTheOption) {
  // Variables are validated too; the error names the option.
  setenv("RILL_RANKS", "zero", 1);
  expect_usage_error("--rill:workers=1", "ranks");
}

TEST_F(Options, BadEnvironmentValuesThrow) {
  setenv("RILL_WORKERS", "0", 1);
  args a{"prog"};
  EXPECT_THROW(parse(a), usage_error);
  unsetenv("RILL_WORKERS");
  setenv("RILL_TRANSPORT", "tcp", 1);
  args b{"prog"};
  EXPECT_THROW(parse(b), usage_error);
}

// Each default is written once, in rill::config: --rill:help shows what config{} holds, layer by
// layer, and what it shows parses back to that default.
TEST_F(Options, HelpShowsTheDefaultsOfConfigByLayer) {
  const std::string help = options_help();
  std::size_t at = 0;
  for (const char* layer : {"transport:", "scheduler:", "messages:", "events:", "global:", "steal:", "runtime:"}) {
    const std::size_t found = help.find(std::string("\n") + layer + "\n", at);
    ASSERT_NE(found, std::string::npos) << layer << " missing or out of order in:\n" << help;
    at = found + 1;
  }
  auto shown = [&](const std::string& name) {
    const std::size_t line = help.find("--rill:" + name + " ");
    std::string rest = help.substr(line + 7 + name.size());
    rest.erase(0, rest.find_first_not_of(' '));
    return rest.substr(0, rest.find(' '));
  };
  EXPECT_EQ(shown("agg-bytes"), "4KiB");
  EXPECT_EQ(shown("segment"), "128MiB");
  EXPECT_EQ(shown("steal"), "random");
  EXPECT_EQ(shown("stats"), "off");
  std::vector<std::string> words{"prog"};
  for (const char* n : {"ranks", "stack", "agg-bytes", "agg-age-us", "large-bytes", "queue-buffers", "node-ring",
                        "chaos", "log", "idle-poll-us", "inline-queue", "hang-report-s", "steal", "steal-batch",
                        "segment", "shared-segments", "gas-cache", "gas-cache-entries", "stats"})
    words.push_back(std::string("--rill:") + n + "=" + shown(n));
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(words.size());
  const rill::config parsed = parse_options(argc, argv.data()).cfg;
  const rill::config d;
  EXPECT_EQ(parsed.ranks, d.ranks);
  EXPECT_EQ(parsed.stack_bytes, d.stack_bytes);
  EXPECT_EQ(parsed.agg_bytes, d.agg_bytes);
  EXPECT_EQ(parsed.agg_age_us, d.agg_age_us);
  EXPECT_EQ(parsed.large_bytes, d.large_bytes);
  EXPECT_EQ(parsed.queue_buffers, d.queue_buffers);
  EXPECT_EQ(parsed.node_ring_bytes, d.node_ring_bytes);
  EXPECT_EQ(parsed.chaos, d.chaos);
  EXPECT_EQ(parsed.log, d.log);
  EXPECT_EQ(parsed.idle_poll_us, d.idle_poll_us);
  EXPECT_EQ(parsed.inline_queue, d.inline_queue);
  EXPECT_EQ(parsed.hang_report_s, d.hang_report_s);
  EXPECT_EQ(parsed.steal, d.steal);
  EXPECT_EQ(parsed.steal_batch, d.steal_batch);
  EXPECT_EQ(parsed.segment_bytes, d.segment_bytes);
  EXPECT_EQ(parsed.shared_segments, d.shared_segments);
  EXPECT_EQ(parsed.gas_cache, d.gas_cache);
  EXPECT_EQ(parsed.gas_cache_entries, d.gas_cache_entries);
  EXPECT_EQ(parsed.stats, d.stats);
}

// Parsing `words` either rejects the value or records that `name` was given.
void expect_read(const char* name, std::initializer_list<std::string> words) {
  args a(words);
  try {
    EXPECT_TRUE(parse(a).was_given(name)) << name << " was not read from " << *(words.end() - 1);
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

// The list in rill/config_options.hpp is the one declaration: each entry is a flag, a variable and a
// line of --rill:help under its layer, and this test's own list of names matches it.
TEST_F(Options, EveryDeclaredOptionIsParsedAndListedUnderItsLayer) {
  const std::string help = options_help();
  std::vector<std::string> declared;
#define DECLARED(layer, name, member, type, default_value, kind, shown, agree, meaning)                  \
  {                                                                                                      \
    declared.push_back(name);                                                                            \
    const std::size_t heading = help.find("\n" #layer ":\n");                                            \
    const std::size_t line = help.find(std::string("--rill:") + name + " ");                             \
    EXPECT_NE(line, std::string::npos) << name;                                                          \
    EXPECT_LT(heading, line) << name << " listed before its layer " #layer;                              \
    const std::size_t next = help.find(":\n", heading + 2 + std::string_view(#layer).size());            \
    EXPECT_TRUE(next == std::string::npos || line < next) << name << " listed after the end of " #layer; \
    setenv(env_of(name).c_str(), "bogus-value", 1);                                                      \
    expect_read(name, {"prog"});                                                                         \
    unsetenv(env_of(name).c_str());                                                                      \
    expect_read(name, {"prog", std::string("--rill:") + name + "=bogus-value"});                         \
  }
  RILL_OPTIONS(DECLARED)
#undef DECLARED
  std::vector<std::string> tested(std::begin(all_names), std::end(all_names));
  std::sort(declared.begin(), declared.end());
  std::sort(tested.begin(), tested.end());
  EXPECT_EQ(declared, tested);
}

// A RILL_* variable that names no option is reported (a typo would otherwise be ignored silently);
// the variables of Rill's own scripts are not.
TEST_F(Options, UnknownVariablesAreWarnedAbout) {
  setenv("RILL_WORKER", "4", 1);
  setenv("RILL_BUILD_DIR", "build/release", 1);
  args a{"prog"};
  const parsed_options o = parse(a);
  unsetenv("RILL_WORKER");
  unsetenv("RILL_BUILD_DIR");
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_NE(o.warnings[0].find("RILL_WORKER is set but names no Rill option"), std::string::npos) << o.warnings[0];
  args b{"prog"};
  EXPECT_TRUE(parse(b).warnings.empty());
}

// The largest segment --rill:help states can be given with a suffix.
TEST_F(Options, TerabyteSizes) {
  args a{"prog", "--rill:segment=1T", "--rill:global-heap=512GiB"};
  const parsed_options o = parse(a);
  EXPECT_EQ(o.cfg.segment_bytes, std::size_t{1} << 40);
  EXPECT_EQ(o.cfg.global_heap_bytes, std::size_t{1} << 39);
  expect_usage_error("--rill:segment=2T", "segment");
}

// Exactly the options marked `same` are compared at start-up, each with the value in force.
TEST_F(Options, OptionsEveryRankMustShare) {
  args a{"prog", "--rill:segment=256MiB", "--rill:workers=3"};
  const std::string shared = rill::detail::options_every_rank_must_share(parse(a).cfg);
  EXPECT_NE(shared.find("--rill:segment=256MiB\n"), std::string::npos) << shared;
  EXPECT_NE(shared.find("--rill:node-ring=1MiB\n"), std::string::npos) << shared;
  EXPECT_NE(shared.find("--rill:tag-checks=every\n"), std::string::npos) << shared;
  EXPECT_EQ(shared.find("--rill:workers"), std::string::npos) << "workers may differ per rank: " << shared;
  EXPECT_EQ(shared.find("--rill:log"), std::string::npos) << shared;
}

TEST_F(Options, HelpVariableIsIgnored) {
  setenv("RILL_HELP", "1", 1);
  args a{"prog"};
  EXPECT_FALSE(parse(a).help);
}

TEST_F(Options, HelpListsEveryOption) {
  const std::string help = options_help();
  for (const char* n : all_names) {
    EXPECT_NE(help.find(std::string("--rill:") + n + " "), std::string::npos) << n << " missing from:\n" << help;
  }
  EXPECT_NE(help.find("--rill:help"), std::string::npos);
  EXPECT_NE(help.find("RILL_"), std::string::npos);
  // Every option in the table is one this test knows about (a new option needs a test).
  std::size_t count = 0;
  for (std::size_t at = help.find("--rill:"); at != std::string::npos; at = help.find("--rill:", at + 1)) ++count;
  // The first line mentions "--rill:NAME=VALUE" once; then one line per option, and help.
  EXPECT_EQ(count, 1 + std::size(all_names) + 1) << help;
}

}  // namespace
