// Seeing the event graph (src/events/event_trace.*, docs/debugging.md): the DOT file of a small
// known program on two local ranks, and the hang report of deliberate deadlocks on one and two
// ranks, read from the captured stderr while the program hangs, then resolved.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rill/rill.hpp"
#include "stderr_capture.hpp"
#include "test_argv.hpp"

namespace {

using namespace std::chrono_literals;

struct argv_holder : rill_test::test_argv {
  explicit argv_holder(std::initializer_list<std::string> flags)
      : test_argv(rill_test::command_line("event_trace_test", flags)) {}
};

std::string id(rill::event e) {
  return "e" + std::to_string(e.owner()) + "_" + std::to_string(e.slot()) + "_" + std::to_string(e.generation());
}

std::string name(rill::event e) {
  return "(rank " + std::to_string(e.owner()) + ", slot " + std::to_string(e.slot()) + ", gen " +
         std::to_string(e.generation()) + ")";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A DOT file as this test reads it: node statements with their attribute text, edge statements.
struct dot_graph {
  bool well_formed = false;  // "digraph NAME {" ... "}"
  std::map<std::string, std::string> nodes;
  std::map<std::pair<std::string, std::string>, std::string> edges;
};

bool is_word(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
}

// Reads "  a -> b [attrs];", "  a -> b;" or "  a [attrs];" into g; false when the line is none of
// these. (No std::regex: its recursive matcher overflows a 64 KiB fiber stack under ASan.)
bool read_statement(std::string line, dot_graph& g) {
  const std::size_t first = line.find_first_not_of(" \t");
  if (first == std::string::npos || !line.ends_with(";")) return false;
  line = line.substr(first, line.size() - first - 1);
  std::string attrs;
  bool has_attrs = false;
  if (const std::size_t open = line.find(" ["); open != std::string::npos) {
    if (!line.ends_with("]")) return false;
    attrs = line.substr(open + 2, line.size() - open - 3);
    line.resize(open);
    has_attrs = true;
  }
  if (const std::size_t arrow = line.find(" -> "); arrow != std::string::npos) {
    const std::string from = line.substr(0, arrow), to = line.substr(arrow + 4);
    if (!is_word(from) || !is_word(to)) return false;
    g.edges[{from, to}] = attrs;
    return true;
  }
  if (!has_attrs || !is_word(line)) return false;
  g.nodes[line] = attrs;
  return true;
}

dot_graph parse_dot(const std::string& text) {
  dot_graph g;
  std::istringstream in(text);
  std::string line;
  int depth = 0;
  bool opened = false;
  while (std::getline(in, line)) {
    if (line.rfind("digraph ", 0) == 0 && line.ends_with("{")) {
      opened = true;
      ++depth;
    } else if (line.find("subgraph") != std::string::npos && line.ends_with("{")) {
      ++depth;
    } else if (line == "}" || line == "  }") {
      --depth;
    } else {
      read_statement(line, g);
    }
  }
  g.well_formed = opened && depth == 0;
  return g;
}

// The value of `key` in an attribute list ("a=b, c=\"d e\""), quotes kept; "" when absent.
std::string attr(const std::string& attrs, const std::string& key) {
  const std::string k = key + "=";
  for (std::size_t at = attrs.find(k); at != std::string::npos; at = attrs.find(k, at + 1)) {
    if (at != 0 && attrs[at - 1] != ' ' && attrs[at - 1] != ',') continue;
    const std::size_t v = at + k.size();
    if (v < attrs.size() && attrs[v] == '"') {
      const std::size_t close = attrs.find('"', v + 1);
      return close == std::string::npos ? "" : attrs.substr(v, close - v + 1);
    }
    std::size_t end = v;
    while (end < attrs.size() && (std::isalnum(static_cast<unsigned char>(attrs[end])) != 0 || attrs[end] == '_'))
      ++end;
    if (end > v) return attrs.substr(v, end - v);
  }
  return "";
}

std::string temp_prefix() { return "/tmp/rill_graph_" + std::to_string(getpid()); }

// ---- the DOT graph ------------------------------------------------------------------------------

TEST(EventGraph, KnownProgramOnTwoRanks) {
  const std::string path = temp_prefix() + ".dot";
  struct ids {
    rill::event a, t1, t2, m, p, t3, d;
  } ev;
  {
    argv_holder args({"--rill:transport=local", "--rill:ranks=2", "--rill:workers=1", "--rill:event-graph=" + path});
    rill::runtime rt(args.argc, args.argv());
    ASSERT_EQ(rt.run([&] {
      rill::user_event a = rill::user_event::create();
      ev.a = a;
      ev.t1 = rill::proc(1).spawn(rill::after(a), [] {});  // a chain: a -> t1 (rank 1) -> t2 (rank 0)
      ev.t2 = rill::proc(0).spawn(rill::after(ev.t1), [] {});
      ev.m = rill::merge(ev.t1, ev.t2);
      rill::user_event d = rill::user_event::create();
      d.trigger(ev.m);  // deferred: once the merge has triggered
      ev.d = d;
      rill::user_event p = rill::user_event::create();
      ev.p = p;
      ev.t3 = rill::proc(1).spawn(rill::after(p), [] {});  // never runs: p is poisoned
      a.trigger();
      p.poison("broken on purpose");
      d.wait();
      EXPECT_THROW(ev.t3.wait(), rill::poisoned_error);
      return 0;
    }),
              0);
  }
  const std::string whole = read_file(path);
  const dot_graph g = parse_dot(whole);
  ASSERT_TRUE(g.well_formed) << whole;

  // One node per operation, named by the event it completes, with its kind and rank.
  for (rill::event e : {ev.a, ev.t1, ev.t2, ev.m, ev.p, ev.t3, ev.d})
    ASSERT_TRUE(g.nodes.count(id(e))) << id(e) << "\n" << whole;
  EXPECT_NE(g.nodes.at(id(ev.a)).find("user_event"), std::string::npos);
  EXPECT_NE(g.nodes.at(id(ev.t1)).find("task on rank 1"), std::string::npos);
  EXPECT_EQ(attr(g.nodes.at(id(ev.t1)), "shape"), "box");
  EXPECT_NE(g.nodes.at(id(ev.t2)).find("task on rank 0"), std::string::npos);
  EXPECT_NE(g.nodes.at(id(ev.m)).find("merge"), std::string::npos);
  EXPECT_EQ(attr(g.nodes.at(id(ev.m)), "shape"), "diamond");
  // Coloured by the rank the operation runs on.
  EXPECT_NE(attr(g.nodes.at(id(ev.t1)), "fillcolor"), attr(g.nodes.at(id(ev.t2)), "fillcolor"));
  EXPECT_EQ(attr(g.nodes.at(id(ev.t2)), "fillcolor"), attr(g.nodes.at(id(ev.a)), "fillcolor"));
  // Poisoned events are marked, with the cause; the others are not.
  for (rill::event e : {ev.p, ev.t3}) {
    EXPECT_NE(g.nodes.at(id(e)).find("POISONED: broken on purpose"), std::string::npos) << g.nodes.at(id(e));
    EXPECT_EQ(attr(g.nodes.at(id(e)), "color"), "red");
  }
  for (rill::event e : {ev.a, ev.t1, ev.t2, ev.m, ev.d}) {
    EXPECT_EQ(g.nodes.at(id(e)).find("POISONED"), std::string::npos) << g.nodes.at(id(e));
    EXPECT_EQ(g.nodes.at(id(e)).find("untriggered"), std::string::npos) << g.nodes.at(id(e));
  }
  // Edges: preconditions to what waits for them.
  const std::set<std::pair<std::string, std::string>> expected{{id(ev.a), id(ev.t1)}, {id(ev.t1), id(ev.t2)},
                                                               {id(ev.t1), id(ev.m)}, {id(ev.t2), id(ev.m)},
                                                               {id(ev.m), id(ev.d)},  {id(ev.p), id(ev.t3)}};
  for (const auto& e : expected) EXPECT_TRUE(g.edges.count(e)) << e.first << " -> " << e.second << "\n" << whole;
  EXPECT_EQ(g.edges.at({id(ev.m), id(ev.d)}), "label=\"trigger\"");
  EXPECT_EQ(attr(g.edges.at({id(ev.p), id(ev.t3)}), "color"), "red");
  // The waits of the top-level task: dotted edges to wait nodes of rank 0. d had not triggered
  // when it was waited on (its chain needs messages the task had not yet let go); t3 may have.
  std::size_t waits = 0, waits_on_d = 0;
  for (const auto& [edge, attrs] : g.edges)
    if (edge.second.rfind("w0_", 0) == 0) {
      EXPECT_EQ(attrs, "style=dotted");
      EXPECT_TRUE(edge.first == id(ev.d) || edge.first == id(ev.t3)) << edge.first;
      ++waits;
      if (edge.first == id(ev.d)) ++waits_on_d;
    }
  EXPECT_EQ(waits_on_d, 1u);
  // Nothing else: no edge names an event the program did not make.
  std::set<std::string> known;
  for (rill::event e : {ev.a, ev.t1, ev.t2, ev.m, ev.p, ev.t3, ev.d}) known.insert(id(e));
  for (const auto& [edge, attrs] : g.edges) {
    EXPECT_TRUE(known.count(edge.first)) << edge.first;
    EXPECT_TRUE(known.count(edge.second) || edge.second.rfind("w0_", 0) == 0) << edge.second;
  }
  EXPECT_EQ(g.edges.size(), expected.size() + waits);

  // Each rank's part: rank 1 registered the spawned tasks' preconditions, rank 0 owns every node.
  const dot_graph r0 = parse_dot(read_file(temp_prefix() + ".rank0.dot"));
  const dot_graph r1 = parse_dot(read_file(temp_prefix() + ".rank1.dot"));
  ASSERT_TRUE(r0.well_formed);
  ASSERT_TRUE(r1.well_formed);
  EXPECT_TRUE(r1.edges.count({id(ev.a), id(ev.t1)}));
  EXPECT_TRUE(r1.edges.count({id(ev.p), id(ev.t3)}));
  EXPECT_TRUE(r0.edges.count({id(ev.t1), id(ev.t2)}));
  EXPECT_NE(r0.nodes.at(id(ev.t1)).find("task on rank 1"), std::string::npos);
  EXPECT_FALSE(r1.nodes.count(id(ev.a)));  // rank 0's node: rank 0's part declares it
  // The parts concatenate into the whole graph (docs/debugging.md).
  std::string joined = "digraph rill_events {\n";
  for (int r : {1, 0}) {
    const std::string part = read_file(temp_prefix() + ".rank" + std::to_string(r) + ".dot");
    const auto body = part.find('\n') + 1;
    joined += part.substr(body, part.rfind("}\n") - body);
  }
  joined += "}\n";
  const dot_graph j = parse_dot(joined);
  EXPECT_TRUE(j.well_formed);
  EXPECT_EQ(j.nodes, g.nodes) << joined;
  // The same edges (red only where the part knew the source was poisoned: on its owner's side).
  std::set<std::pair<std::string, std::string>> je, ge;
  for (const auto& [edge, attrs] : j.edges) je.insert(edge);
  for (const auto& [edge, attrs] : g.edges) ge.insert(edge);
  EXPECT_EQ(je, ge);

  // Graphviz itself, where installed, reads every file.
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    for (const std::string& f : {path, temp_prefix() + ".rank0.dot", temp_prefix() + ".rank1.dot"})
      EXPECT_EQ(std::system(("dot -Tsvg -o /dev/null " + f).c_str()), 0) << f;
  }
  for (const std::string& f : {path, temp_prefix() + ".rank0.dot", temp_prefix() + ".rank1.dot"})
    std::remove(f.c_str());
}

TEST(EventGraph, WriteEventGraphFromATask) {
  const std::string path = temp_prefix() + "_api.dot";
  argv_holder args({"--rill:transport=local", "--rill:ranks=1", "--rill:workers=1", "--rill:event-graph=" + path});
  rill::runtime rt(args.argc, args.argv());
  rill::event u;
  ASSERT_EQ(rt.run([&] {
    rill::user_event e = rill::user_event::create();
    u = e;
    rill::debug::write_event_graph(path + ".now");
    const dot_graph g = parse_dot(read_file(path + ".now"));
    EXPECT_TRUE(g.well_formed);
    EXPECT_TRUE(g.nodes.count(id(e)) && g.nodes.at(id(e)).find("untriggered") != std::string::npos);  // so far
    e.trigger();
    return 0;
  }),
            0);
  const dot_graph g = parse_dot(read_file(path));
  EXPECT_EQ(g.nodes.at(id(u)).find("untriggered"), std::string::npos);
  for (const std::string& f : {path, path + ".now", temp_prefix() + "_api.rank0.dot"}) std::remove(f.c_str());
}

TEST(EventGraph, WriteEventGraphNeedsRecording) {
  argv_holder args({"--rill:transport=local", "--rill:ranks=1", "--rill:workers=1"});
  rill::runtime rt(args.argc, args.argv());
  ASSERT_EQ(rt.run([] {
    EXPECT_THROW(rill::debug::write_event_graph(temp_prefix() + "_off.dot"), rill::misuse_error);
    return 0;
  }),
            0);
  EXPECT_THROW(rill::debug::write_event_graph("x.dot"), rill::misuse_error);  // not in a task
}

// ---- the hang report ----------------------------------------------------------------------------

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HangReport, UserEventNobodyTriggersOnOneRank) {
  rill_test::stderr_capture err;
  argv_holder args({"--rill:transport=local", "--rill:ranks=1", "--rill:workers=2", "--rill:hang-report-s=0.2"});
  rill::runtime rt(args.argc, args.argv());
  std::string report, pending_before, pending_after;
  rill::event u_seen, v_seen, task_seen;
  const int rc = rt.run([&] {
    rill::user_event u = rill::user_event::create();  // nobody triggers it ... until the report is out
    rill::user_event v = rill::user_event::create();
    v.trigger(u);                                                    // a deferred trigger waits on u
    rill::event task = rill::proc::here().spawn([u] { u.wait(); });  // a task's fiber waits on u
    u_seen = u;
    v_seen = v;
    task_seen = task;
    if (!err.wait_for("end of rank 0's hang report")) return 1;
    pending_before = rill::debug::pending_events();
    std::this_thread::sleep_for(600ms);  // three more quiet periods: still one report
    report = err.text();
    u.trigger();  // resolve the hang
    task.wait();
    v.wait();
    pending_after = rill::debug::pending_events();
    return 0;
  });
  ASSERT_EQ(rc, 0) << "no hang report appeared:\n" << err.text();
  const std::string mine = rill_test::section(report, "rill: hang report: rank 0", "rill: end of rank 0's");
  ASSERT_FALSE(mine.empty()) << report;
  EXPECT_EQ(count(report, "rill: hang report: rank 0"), 1u) << report;
  EXPECT_NE(mine.find(name(u_seen) + " user_event created on rank 0, untriggered"), std::string::npos) << mine;
  EXPECT_NE(mine.find("a task suspended in event::wait()"), std::string::npos) << mine;
  EXPECT_NE(mine.find("user_event::trigger(after) of " + name(v_seen)), std::string::npos) << mine;
  // The spawned task ran at once (no precondition); the top-level task never waited on an event.
  EXPECT_EQ(mine.find(name(task_seen)), std::string::npos) << mine;
  EXPECT_NE(pending_before.find(name(u_seen)), std::string::npos) << pending_before;
  EXPECT_EQ(pending_after, "");
}

// A may_inline task that waits for what its spawner does after spawning it deadlocks: it runs on
// top of the spawner's frames, so the spawner cannot go on. The hang report says so (it used to
// show a plain waiting task). Another task, on the second worker, ends the hang once reported.
TEST(HangReport, AMayInlineTaskWaitingForItsSpawnerIsNamed) {
  rill_test::stderr_capture err;
  argv_holder args({"--rill:transport=local", "--rill:ranks=1", "--rill:workers=2", "--rill:hang-report-s=0.2",
                    "--rill:inline-queue=0"});
  rill::runtime rt(args.argc, args.argv());
  std::string report;
  bool reported = false;
  const int rc = rt.run([&] {
    const rill::user_event u = rill::user_event::create();
    rill::finish([&] {
      rill::async([&, u] {
        reported = err.wait_for("end of rank 0's hang report");
        report = err.text();
        u.trigger();
      });
      rill::async(rill::may_inline, [u] { u.wait(); });  // breaks the promise: u comes after
      if (!u.has_triggered()) u.trigger();
    });
    return 0;
  });
  ASSERT_EQ(rc, 0);
  ASSERT_TRUE(reported) << err.text();
  EXPECT_NE(report.find("while it runs inline (rill::may_inline) above its spawner"), std::string::npos) << report;
}

// a waits for b, b for a merge that waits for a: the report prints the cycle first, not only its
// edges one by one. Poisoning the merge's other input ends it.
TEST(HangReport, ACycleOfWaitsIsPrintedAsOne) {
  rill_test::stderr_capture err;
  argv_holder args({"--rill:transport=local", "--rill:ranks=1", "--rill:workers=2", "--rill:hang-report-s=0.2"});
  rill::runtime rt(args.argc, args.argv());
  std::string report;
  rill::event a_seen, b_seen, m_seen;
  const int rc = rt.run([&] {
    const rill::user_event a = rill::user_event::create();
    const rill::user_event b = rill::user_event::create();
    const rill::user_event x = rill::user_event::create();
    const rill::event m = rill::merge(a, x);
    a.trigger(b);
    b.trigger(m);
    a_seen = a;
    b_seen = b;
    m_seen = m;
    if (!err.wait_for("end of rank 0's hang report")) return 1;
    report = err.text();
    x.poison("breaking the cycle");
    EXPECT_THROW(rill::event(a).wait(), rill::poisoned_error);
    return 0;
  });
  ASSERT_EQ(rc, 0) << "no hang report appeared:\n" << err.text();
  const std::string cycle = "a cycle: nothing in it can trigger first: " + name(a_seen) + " -> " + name(m_seen) +
                            " -> " + name(b_seen) + " -> " + name(a_seen);
  EXPECT_NE(report.find(cycle), std::string::npos) << report;
  EXPECT_LT(report.find("a cycle"), report.find("untriggered; waited on by")) << report;
}

// A future waited on is named as one (an rpc's result is one), not as a user event that only the
// program can trigger, as the report used to say.
TEST(HangReport, AFutureWaitedOnIsNamedAsAFuture) {
  rill_test::stderr_capture err;
  argv_holder args({"--rill:transport=local", "--rill:ranks=1", "--rill:workers=2", "--rill:hang-report-s=0.2"});
  rill::runtime rt(args.argc, args.argv());
  std::string report;
  rill::event value;
  const int rc = rt.run([&] {
    rill::promise<int> p;
    const rill::future<int> f = p.get_future();
    value = f;
    const rill::event waiting = rill::proc::here().spawn([f] { (void)f.get(); });
    if (!err.wait_for("end of rank 0's hang report")) return 1;
    report = err.text();
    p.put(7);
    waiting.wait();
    return 0;
  });
  ASSERT_EQ(rc, 0) << "no hang report appeared:\n" << err.text();
  EXPECT_NE(report.find(name(value) + " future's value, whose promise was created on rank 0"), std::string::npos)
      << report;
  EXPECT_EQ(report.find("only the program can trigger"), std::string::npos) << report;
}

TEST(HangReport, BarrierMissingAnArrival) {
  rill_test::stderr_capture err;
  argv_holder args({"--rill:transport=local", "--rill:ranks=1", "--rill:workers=2", "--rill:hang-report-s=0.2"});
  rill::runtime rt(args.argc, args.argv());
  std::string report;
  rill::event phase;
  const int rc = rt.run([&] {
    rill::barrier b = rill::barrier::create(2);  // two arrivals expected, one comes
    phase = b;
    b.arrive(1);
    rill::event waiting = rill::proc::here().spawn([b] { b.wait(); });
    if (!err.wait_for("end of rank 0's hang report")) return 1;
    report = err.text();
    b.arrive(1);  // the missing arrival
    waiting.wait();
    return 0;
  });
  ASSERT_EQ(rc, 0) << "no hang report appeared:\n" << err.text();
  EXPECT_NE(report.find(name(phase) + " barrier phase"), std::string::npos) << report;
  EXPECT_NE(report.find("a task suspended in event::wait()"), std::string::npos) << report;
}

TEST(HangReport, OffWhenZero) {
  argv_holder args({"--rill:transport=local", "--rill:ranks=1", "--rill:workers=1", "--rill:hang-report-s=0"});
  rill::runtime rt(args.argc, args.argv());
  EXPECT_EQ(rt.options().hang_report_s, 0.0);
}

// Each of two ranks waits for an event that only the other triggers, after its own wait: a cycle.
// Both reports must name the two events, their owners, and who waits.
TEST(HangReport, CycleBetweenTwoRanks) {
  rill_test::stderr_capture err;
  argv_holder args({"--rill:transport=local", "--rill:ranks=2", "--rill:workers=2", "--rill:hang-report-s=0.2"});
  rill::runtime rt(args.argc, args.argv());
  static std::atomic<bool> resolved{false};
  resolved = false;
  static rill::event on_rank1;  // rank 1's event, published for rank 0 (one process)
  static std::atomic<bool> published{false};
  published = false;
  std::string report;
  rill::event e0, e1;
  const int rc = rt.run([&] {
    rill::user_event mine = rill::user_event::create();
    e0 = mine;
    rill::event other_task = rill::proc(1).spawn([mine] {
      rill::user_event theirs = rill::user_event::create();
      on_rank1 = theirs;
      published = true;
      mine.wait();  // rank 0's event: rank 0 triggers it after its own wait
      theirs.trigger();
    });
    rill::event watcher = rill::proc(0).spawn([&err, &report, mine] {
      if (!err.wait_for("end of rank 0's hang report") || !err.wait_for("end of rank 1's hang report"))
        throw std::runtime_error("no hang report");
      report = err.text();
      resolved = true;
      mine.trigger();  // break the cycle
    });
    // Blocks this worker's thread on purpose (not a fiber wait): the watcher, which blocks its own
    // thread, must run on the rank's other worker, or this fiber could not resume to subscribe.
    // The spawn for rank 1 must have left first: with both of this rank's threads blocked nobody
    // would flush it (the other worker flushes when it runs out of work, but it may steal the
    // watcher after a flush that came before the spawn was buffered: a hang under load in CI).
    rill::am::flush();
    while (!published) std::this_thread::sleep_for(1ms);
    e1 = on_rank1;
    rill::event(on_rank1).wait();  // rank 1's event: rank 1 triggers it after its own wait
    if (!resolved) mine.trigger();
    watcher.wait();
    other_task.wait();
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const std::string r0 = rill_test::section(report, "rill: hang report: rank 0", "rill: end of rank 0's");
  const std::string r1 = rill_test::section(report, "rill: hang report: rank 1", "rill: end of rank 1's");
  ASSERT_FALSE(r0.empty()) << report;
  ASSERT_FALSE(r1.empty()) << report;
  // Rank 0 waits on rank 1's event, and rank 1 waits (subscribed) on rank 0's.
  EXPECT_NE(r0.find(name(e1) + " owned by rank 1"), std::string::npos) << r0;
  EXPECT_NE(r0.find(name(e0) + " user_event created on rank 0, untriggered; waited on by:\n      waiters on rank(s) 1"),
            std::string::npos)
      << r0;
  EXPECT_NE(r0.find("a task suspended in event::wait()"), std::string::npos) << r0;
  // And the mirror image on rank 1.
  EXPECT_NE(r1.find(name(e0) + " owned by rank 0"), std::string::npos) << r1;
  EXPECT_NE(r1.find(name(e1) + " user_event created on rank 1, untriggered; waited on by:\n      waiters on rank(s) 0"),
            std::string::npos)
      << r1;
  EXPECT_NE(r1.find("a task suspended in event::wait()"), std::string::npos) << r1;
}

}  // namespace
