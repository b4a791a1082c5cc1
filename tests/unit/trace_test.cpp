// The trace layer (src/trace/): recording from several threads of several fake ranks, part files,
// their merge into one Chrome JSON document, whose structure is checked after parsing it back.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "trace/hooks.hpp"
#include "trace/recorder.hpp"
#include "trace/trace_file.hpp"

namespace {

namespace fs = std::filesystem;
namespace trace = rill::detail::trace;
using trace::kind;
using trace::rank_trace;
using json = nlohmann::json;

// A fresh directory per test, removed at its end.
class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("rill_trace_test_{}_{}", test->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path path() const { return dir_ / "run.json"; }

  fs::path dir_;
};

json read_json(const fs::path& file) {
  std::ifstream in(file);
  return json::parse(in);  // throws on invalid JSON
}

std::int64_t ns_of(const json& microseconds) { return std::llround(microseconds.get<double>() * 1000.0); }

// Runs body(rank, worker) on a thread per worker of every rank, each attached to its worker's lane.
void run_workers(std::vector<std::unique_ptr<rank_trace>>& ranks, int workers,
                 const std::function<void(int, int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < static_cast<int>(ranks.size()); ++rank)
    for (int worker = 0; worker < workers; ++worker)
      threads.emplace_back([&, rank, worker] {
        ranks[static_cast<std::size_t>(rank)]->attach_thread(worker);
        body(rank, worker);
        rank_trace::detach_thread();
      });
  for (auto& t : threads) t.join();
}

TEST_F(TraceTest, TracingOffRecordsNothing) {
  rank_trace rank(0, 1);
  ASSERT_EQ(trace::tls_recorder, nullptr);
  EXPECT_FALSE(trace::enabled());
  trace::instant<kind::message_send>(trace::message_flow(0, 1), 1, 8);
  {
    trace::scope<kind::task> task;
    trace::span_end<kind::copy>(trace::span_begin(), 0, 64, 1);
  }

  // A span begun before the thread attached records nothing either.
  const std::uint64_t before_attach = trace::span_begin();
  EXPECT_EQ(before_attach, 0u);
  rank.attach_thread(0);
  EXPECT_TRUE(trace::enabled());
  trace::span_end<kind::io>(before_attach, 0, 1, 2);
  rank_trace::detach_thread();
  trace::instant<kind::steal>(0, 1, 1);

  for (const auto* lane : rank.lanes()) EXPECT_EQ(lane->records.size(), 0u);
  EXPECT_THROW(rank.attach_thread(1), std::out_of_range);
}

TEST_F(TraceTest, ChunksNeverMoveRecordedData) {
  trace::recorder recorder;
  recorder.append(kind::steal, 1, 0, 0, 11, 12);
  const trace::record* first = recorder.chunks().front().data();
  const std::size_t total = trace::recorder::chunk_records * 2 + 5;
  for (std::size_t i = 1; i < total; ++i) recorder.append(kind::task, i + 1, i + 2, 0, i, 0);

  const auto chunks = recorder.chunks();
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].data(), first);
  EXPECT_EQ(chunks[0].size(), trace::recorder::chunk_records);
  EXPECT_EQ(chunks[2].size(), 5u);
  EXPECT_EQ(recorder.size(), total);
  EXPECT_EQ(first->what, kind::steal);
  EXPECT_EQ(first->arg0, 11u);
  EXPECT_EQ(first->arg1, 12u);
  std::size_t i = 0;
  for (auto chunk : chunks)
    for (const trace::record& r : chunk) EXPECT_EQ(r.start_ns, ++i);
}

// Three ranks of two workers: tasks send messages to the next rank (arrows to their handlers), each
// handler triggers an event that releases a task on each worker of its rank (two arrows per trigger).
TEST_F(TraceTest, MergedTraceIsWellFormed) {
  constexpr int nranks = 3;
  constexpr int workers = 2;
  constexpr int messages = 5;
  const auto sequence = [](int worker, int i) { return static_cast<std::uint64_t>(worker * 1000 + i); };
  const auto event_id = [](int rank, int worker, int i) {
    return static_cast<std::uint64_t>((rank * 100 + worker) * 100 + i);
  };

  std::vector<std::unique_ptr<rank_trace>> ranks;
  for (int r = 0; r < nranks; ++r) {
    ranks.push_back(std::make_unique<rank_trace>(r, workers));
    ranks.back()->set_clock_offset(r * 1000);
  }

  run_workers(ranks, workers, [&](int rank, int worker) {
    trace::scope<kind::task> task;
    {
      trace::scope<kind::copy> copy(0, 64, 1);
      trace::scope<kind::io> io(0, 64, 0);
    }
    const int destination = (rank + 1) % nranks;
    for (int i = 0; i < messages; ++i)
      trace::instant<kind::message_send>(trace::message_flow(rank, sequence(worker, i)), destination, 100);
    // Never handled (still in flight at the end): no arrow.
    trace::instant<kind::message_send>(trace::message_flow(rank, 999'999), destination, 1);
  });
  run_workers(ranks, workers, [&](int rank, int worker) {
    const int source = (rank + nranks - 1) % nranks;
    for (int i = 0; i < messages; ++i) {
      trace::scope<kind::handler> handler(trace::message_flow(source, sequence(worker, i)), 7, source);
      trace::instant<kind::event_trigger>(trace::event_flow(event_id(rank, worker, i)), rank, i);
    }
  });
  run_workers(ranks, workers, [&](int rank, int) {
    for (int triggering_worker = 0; triggering_worker < workers; ++triggering_worker)
      for (int i = 0; i < messages; ++i) {
        trace::scope<kind::task> task(trace::event_flow(event_id(rank, triggering_worker, i)));
        trace::instant<kind::fiber_park>();
      }
    // Released by a trigger that was not traced: no arrow.
    trace::scope<kind::task> orphan(trace::event_flow(999'999));
  });
  std::thread progress([&] {
    ranks[0]->attach_other_thread("progress \"0\"");
    trace::instant<kind::message_arrival>(0, 2, 4096);
    trace::instant<kind::buffer_flush>(0, 1, 4096);
    rank_trace::detach_thread();
  });
  progress.join();

  for (const auto& rank : ranks) trace::write_part(*rank, path());
  trace::merge_parts(path(), nranks);
  for (int r = 0; r < nranks; ++r) EXPECT_FALSE(fs::exists(trace::part_path(path(), r)));

  const json document = read_json(path());
  EXPECT_EQ(document.at("displayTimeUnit"), "ns");
  const json& events = document.at("traceEvents");

  using thread_key = std::pair<int, std::int64_t>;  // (pid, tid)
  std::map<int, std::string> process_names;
  std::map<thread_key, std::string> thread_names;
  std::map<thread_key, std::vector<std::pair<std::int64_t, std::int64_t>>> spans;  // start, end in file order
  std::map<std::uint64_t, std::vector<json>> flow_starts, flow_ends;
  for (const json& e : events) {
    const std::string phase = e.at("ph");
    const int pid = e.at("pid");
    if (phase == "M") {
      if (e.at("name") == "process_name") process_names[pid] = e.at("args").at("name");
      if (e.at("name") == "thread_name") thread_names[{pid, e.at("tid")}] = e.at("args").at("name");
      continue;
    }
    const thread_key thread{pid, e.at("tid")};
    ASSERT_TRUE(thread_names.count(thread)) << "a thread's name comes before its events: " << e;
    const std::int64_t ts = ns_of(e.at("ts"));
    EXPECT_GE(ts, 0);
    if (phase == "X") spans[thread].emplace_back(ts, ts + ns_of(e.at("dur")));
    if (phase == "s") flow_starts[e.at("id")].push_back(e);
    if (phase == "f") flow_ends[e.at("id")].push_back(e);
    if (phase == "i" && e.at("name") == "message send") {
      EXPECT_EQ(e.at("cat"), "message");
      EXPECT_EQ(e.at("s"), "t");
      EXPECT_TRUE(e.at("args").contains("destination") && e.at("args").contains("bytes"));
    }
  }

  // Names: a process per rank, a thread per worker, the other thread's name escaped intact.
  ASSERT_EQ(process_names.size(), static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(process_names[r + 1], fmt::format("rank {}", r));
  std::map<int, std::multiset<std::string>> names_per_process;
  std::set<std::int64_t> tids;
  for (const auto& [thread, name] : thread_names) {
    names_per_process[thread.first].insert(name);
    EXPECT_TRUE(tids.insert(thread.second).second) << "tids are unique across ranks";
  }
  EXPECT_EQ(names_per_process[1], (std::multiset<std::string>{"worker 0", "worker 1", "progress \"0\""}));
  EXPECT_EQ(names_per_process[2], (std::multiset<std::string>{"worker 0", "worker 1"}));
  EXPECT_EQ(names_per_process[3], (std::multiset<std::string>{"worker 0", "worker 1"}));

  // Spans: per thread in start order, and each one either inside the previous open one or after it.
  std::size_t span_count = 0;
  for (const auto& [thread, list] : spans) {
    std::vector<std::pair<std::int64_t, std::int64_t>> open;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto [start, end] = list[i];
      if (i > 0) {
        EXPECT_LE(list[i - 1].first, start);
      }
      while (!open.empty() && open.back().second <= start) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(end, open.back().second) << "span crosses its parent's end";
      }
      open.emplace_back(start, end);
    }
    span_count += list.size();
  }
  // Per worker: phase 1 a task, a copy, an io; phase 2 the handlers; phase 3 two tasks per message
  // and the orphan.
  EXPECT_EQ(span_count, static_cast<std::size_t>(nranks * workers * (3 + messages + workers * messages + 1)));

  // Arrows: each start has exactly one end, with the same category and name, bound to a span; 30
  // message arrows (the unhandled sends and the orphan tasks have none) and 2 per trigger.
  const auto inside_a_span = [&](const json& e, bool at_its_start) {
    const auto& list = spans[{e.at("pid"), e.at("tid")}];
    const std::int64_t ts = ns_of(e.at("ts"));
    return std::any_of(list.begin(), list.end(), [&](const auto& span) {
      return at_its_start ? span.first == ts : span.first <= ts && ts <= span.second;
    });
  };
  std::map<std::string, int> arrows_per_category;
  for (const auto& [id, starts] : flow_starts) {
    ASSERT_EQ(starts.size(), 1u) << "arrow " << id;
    ASSERT_EQ(flow_ends[id].size(), 1u) << "arrow " << id;
    const json& start = starts.front();
    const json& end = flow_ends[id].front();
    EXPECT_EQ(start.at("cat"), end.at("cat"));
    EXPECT_EQ(start.at("name"), end.at("name"));
    EXPECT_EQ(end.at("bp"), "e");
    EXPECT_TRUE(inside_a_span(start, false)) << start;
    EXPECT_TRUE(inside_a_span(end, true)) << end;
    const bool same_rank = start.at("pid") == end.at("pid");
    EXPECT_EQ(same_rank, start.at("cat") == "event") << "messages cross ranks, event arrows stay on theirs";
    ++arrows_per_category[start.at("cat")];
  }
  for (const auto& [id, ends] : flow_ends) EXPECT_EQ(flow_starts[id].size(), 1u) << "arrow " << id;
  EXPECT_EQ(arrows_per_category["message"], nranks * workers * messages);
  EXPECT_EQ(arrows_per_category["event"], nranks * workers * messages * workers);
}

TEST_F(TraceTest, ClockOffsetsAlignRanks) {
  rank_trace first(0, 1);
  rank_trace second(1, 1);
  second.set_clock_offset(-500'000);
  first.attach_thread(0);
  trace::tls_recorder->append(kind::task, 1'000'000, 1'002'500, 0, 0, 0);
  second.attach_thread(0);
  trace::tls_recorder->append(kind::task, 1'700'123, 1'800'000, 0, 0, 0);
  rank_trace::detach_thread();
  trace::write_part(first, path());
  trace::write_part(second, path());
  trace::merge_parts(path(), 2);

  using ts_dur = std::pair<std::int64_t, std::int64_t>;  // in ns
  std::map<int, ts_dur> task_of_rank;                    // by pid
  const json document = read_json(path());
  for (const json& e : document.at("traceEvents"))
    if (e.at("ph") == "X") task_of_rank[e.at("pid")] = {ns_of(e.at("ts")), ns_of(e.at("dur"))};
  EXPECT_EQ(task_of_rank[1], ts_dur(0, 2'500));
  EXPECT_EQ(task_of_rank[2], ts_dur(200'123, 99'877));
}

TEST_F(TraceTest, MissingPartIsNamed) {
  for (int r : {0, 2}) {
    rank_trace rank(r, 1);
    trace::write_part(rank, path());
  }
  try {
    trace::merge_parts(path(), 3);
    FAIL() << "merged without rank 1's part";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(trace::part_path(path(), 1).string()), std::string::npos) << message;
    EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
  }
  EXPECT_FALSE(fs::exists(path()));
  EXPECT_TRUE(fs::exists(trace::part_path(path(), 0)));
  EXPECT_TRUE(fs::exists(trace::part_path(path(), 2)));
}

TEST_F(TraceTest, CorruptPartIsNamed) {
  rank_trace rank(0, 2);
  rank.attach_thread(1);
  for (int i = 0; i < 100; ++i) trace::instant<kind::steal>(0, 1, 1);
  rank_trace::detach_thread();
  trace::write_part(rank, path());
  const fs::path part = trace::part_path(path(), 0);

  const auto expect_corrupt = [&](const std::string& why) {
    try {
      trace::merge_parts(path(), 1);
      FAIL() << "merged a part that is " << why;
    } catch (const std::runtime_error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(part.string()), std::string::npos) << message;
      EXPECT_NE(message.find("corrupt"), std::string::npos) << message;
    }
    EXPECT_FALSE(fs::exists(path()));
  };
  fs::resize_file(part, fs::file_size(part) - 1);
  expect_corrupt("truncated");
  std::ofstream(part, std::ios::binary) << "{\"traceEvents\":[]}";
  expect_corrupt("not a part");
}

}  // namespace
