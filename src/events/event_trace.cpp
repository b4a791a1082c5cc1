// The event graph (DOT) and the hang report. See event_trace.hpp and docs/debugging.md.
#include "events/event_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <tuple>

#include "common/clock.hpp"
#include "common/log.hpp"
#include "events/event_table.hpp"
#include "events/events_module.hpp"
#include "rill/debug.hpp"
#include "rill/error.hpp"

namespace rill::detail {

const char* op_name(op_kind k) {
  switch (k) {
    case op_kind::user_event: return "user_event";
    case op_kind::merge: return "merge";
    case op_kind::spawn: return "task";
    case op_kind::promise: return "promise";
    case op_kind::event: break;
  }
  return "event";
}

std::string describe_op(op_kind k, int arg, int me) {
  switch (k) {
    case op_kind::spawn: return fmt::format("completion of a task spawned from rank {} to rank {}", me, arg);
    case op_kind::promise:
      return fmt::format(
          "future's value, whose promise was created on rank {} (the promise's holder puts it: for rpc and "
          "async_future, the task that computes it)",
          me);
    default: return fmt::format("{} created on rank {}", op_name(k), me);
  }
}

std::string event_name(event e) {
  return fmt::format("(rank {}, slot {}, gen {})", e.owner(), e.slot(), e.generation());
}

namespace {

// Cycles of the graph `blocks` (e -> the events that cannot trigger before e), each as the events
// along it, found by an iterative depth-first search (hang graphs can be deep: no recursion on a
// fiber's stack); at most `most` of them.
std::vector<std::vector<event>> find_cycles(const std::map<event, std::vector<event>>& blocks, std::size_t most) {
  enum class mark : std::uint8_t { unseen, on_path, done };
  std::map<event, mark> marks;
  std::vector<std::vector<event>> cycles;
  struct frame {
    event e;
    std::size_t next = 0;  // the next edge of e to follow
  };
  for (const auto& [root, edges] : blocks) {
    if (marks[root] != mark::unseen) continue;
    std::vector<frame> path{{root}};
    marks[root] = mark::on_path;
    while (!path.empty() && cycles.size() < most) {
      frame& top = path.back();
      const auto it = blocks.find(top.e);
      if (it == blocks.end() || top.next == it->second.size()) {
        marks[top.e] = mark::done;
        path.pop_back();
        continue;
      }
      const event to = it->second[top.next++];
      mark& m = marks[to];
      if (m == mark::on_path) {  // back to an event on the path: the path from it is a cycle
        std::vector<event> cycle;
        auto from = std::find_if(path.begin(), path.end(), [&](const frame& f) { return f.e == to; });
        for (; from != path.end(); ++from) cycle.push_back(from->e);
        cycles.push_back(std::move(cycle));
      } else if (m == mark::unseen) {
        m = mark::on_path;
        path.push_back({to});
      }
    }
  }
  return cycles;
}

std::string describe_waiter(const event_waiter& w) {
  switch (waiter_kind_of(w)) {
    case waiter_kind::fiber:
      if (waiter_runs_inline(w))
        return "a task suspended in event::wait() while it runs inline (rill::may_inline) above its spawner: if "
               "this event needs the spawner to go on, the task broke may_inline's promise and this is a deadlock";
      return "a task suspended in event::wait()";
    case waiter_kind::task:
      return "a task spawned to this rank, waiting for its precondition; it completes " + event_name(waiter_target(w));
    case waiter_kind::deferred_trigger: return "user_event::trigger(after) of " + event_name(waiter_target(w));
    case waiter_kind::merge: return "a merge whose result is " + event_name(waiter_target(w));
    case waiter_kind::other: break;
  }
  if (waiter_target(w).is_none()) return "a runtime operation";
  return "a runtime operation leading to " + event_name(waiter_target(w));
}

// ---- DOT --------------------------------------------------------------------------------------

// ColorBrewer Set3: pale fills that keep black labels readable.
constexpr const char* palette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69",
                                   "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f", "#fb8072"};

const char* rank_colour(int rank) {
  return palette[static_cast<std::size_t>(rank) % (sizeof(palette) / sizeof(palette[0]))];
}

std::string node_id(event e) { return fmt::format("e{}_{}_{}", e.owner(), e.slot(), e.generation()); }

std::string short_name(event e) { return fmt::format("({},{},{})", e.owner(), e.slot(), e.generation()); }

// A DOT string's contents: quotes and backslashes escaped, line breaks as \n.
std::string dot_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  return out;
}

}  // namespace

// ---- event_trace --------------------------------------------------------------------------------

void event_trace::configure(const rill::config& cfg) {
  graph_ = !cfg.event_graph.empty();
  hang_ns_ = static_cast<std::uint64_t>(cfg.hang_report_s * 1e9);
}

void event_trace::record_create(event e, op_kind op, int arg) {
  std::lock_guard g(m_);
  nodes_.push_back({e, op, arg});
}

void event_trace::record_wait(event e, const event_waiter& w) {
  if (e.is_none()) return;
  std::lock_guard g(m_);
  const waiter_kind kind = waiter_kind_of(w);
  edges_.push_back({e, waiter_target(w), kind, kind == waiter_kind::fiber ? ++waits_ : 0});
}

void event_trace::record_merge(std::span<const event> inputs, event result) {
  std::lock_guard g(m_);
  for (const event& e : inputs)
    if (!e.is_none()) edges_.push_back({e, result, waiter_kind::merge, 0});
}

void event_trace::record_trigger(event e, int by, const poison_ptr& cause) {
  std::lock_guard g(m_);
  triggers_.push_back({e, by, cause});
}

bool event_trace::hang_due(const std::array<std::uint64_t, 3>& sig, std::uint64_t now_ns) {
  if (quiet_since_ns_ == 0 || sig != last_sig_) {
    last_sig_ = sig;
    quiet_since_ns_ = now_ns;
    reported_ = false;
    return false;
  }
  return !reported_ && now_ns - quiet_since_ns_ >= hang_ns_;
}

void event_trace::write_dot(std::ostream& out, std::span<const event_trace* const> ranks) {
  struct node_info {
    bool declared = false;
    op_kind op = op_kind::event;
    int arg = -1;
    bool triggered = false;
    int by = -1;
    poison_ptr cause;
  };
  std::map<event, node_info> nodes;
  std::set<std::tuple<event, event, waiter_kind>> edges;
  std::vector<std::tuple<event, int, std::uint64_t>> waits;  // event, rank, number
  std::set<int> seen_ranks;
  for (const event_trace* t : ranks) {
    std::lock_guard g(t->m_);
    seen_ranks.insert(t->me_);
    for (const auto& n : t->nodes_) {
      node_info& i = nodes[n.e];
      i.declared = true;
      i.op = n.op;
      i.arg = n.arg;
    }
    for (const auto& tr : t->triggers_) {
      node_info& i = nodes[tr.e];
      i.triggered = true;
      i.by = tr.by;
      i.cause = tr.cause;
    }
    for (const auto& e : t->edges_) {
      nodes[e.from];
      if (e.kind == waiter_kind::fiber) {
        waits.emplace_back(e.from, t->me_, e.wait);
      } else if (!e.to.is_none()) {
        nodes[e.to];
        edges.emplace(e.from, e.to, e.kind);
      }
    }
  }
  out << "digraph rill_events {\n"
         "  // Rill event graph (docs/debugging.md): one node per operation, named by the event it completes\n"
         "  // (owner, slot, generation); an edge per dependence, from a precondition to what waits for it.\n"
         "  // Fill: the rank the operation runs on. Red: poisoned. Dashed outline: untriggered at the end.\n"
         "  graph [fontname=\"Helvetica\"];\n"
         "  node [fontname=\"Helvetica\", style=filled, fillcolor=white];\n"
         "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  for (const auto& [e, i] : nodes) {
    if (!i.declared) {
      // Another rank's event: its owner's part declares it (so that parts concatenate into one
      // graph). One of ours: created by the runtime itself (a reservation, a barrier).
      if (!seen_ranks.count(e.owner())) continue;
      out << fmt::format("  {} [label=\"event\\n{}\", shape=ellipse, style=\"dashed\", fillcolor=white];\n", node_id(e),
                         short_name(e));
      continue;
    }
    const int runs_on = i.op == op_kind::spawn && i.arg >= 0 ? i.arg : e.owner();
    std::string label = i.op == op_kind::spawn ? fmt::format("task on rank {}", runs_on) : op_name(i.op);
    label += "\\n" + short_name(e);
    const char* shape = i.op == op_kind::spawn ? "box" : i.op == op_kind::merge ? "diamond" : "ellipse";
    std::string attrs;
    if (i.cause) {
      label += "\\nPOISONED: " +
               dot_escape(fmt::format("{} (rank {}, {})", i.cause->reason, i.cause->rank, i.cause->operation));
      attrs = ", color=red, penwidth=3, fontcolor=red3";
    } else if (!i.triggered) {
      label += "\\nuntriggered";
      attrs = ", style=\"filled,dashed\"";
    } else if (i.by >= 0 && i.by != e.owner()) {
      label += fmt::format("\\ntriggered by rank {}", i.by);
    }
    out << fmt::format("  {} [label=\"{}\", shape={}, fillcolor=\"{}\"{}];\n", node_id(e), label, shape,
                       rank_colour(runs_on), attrs);
  }
  for (const auto& [e, rank, n] : waits) {
    out << fmt::format("  w{}_{} [label=\"wait\\nrank {}\", shape=octagon, fillcolor=\"{}\"];\n", rank, n, rank,
                       rank_colour(rank));
  }
  for (const auto& [from, to, kind] : edges) {
    std::string attrs;
    if (kind == waiter_kind::deferred_trigger) attrs = "label=\"trigger\"";
    if (kind == waiter_kind::other) attrs = "style=dashed";
    if (nodes[from].cause) attrs += std::string(attrs.empty() ? "" : ", ") + "color=red";
    out << "  " << node_id(from) << " -> " << node_id(to);
    if (!attrs.empty()) out << " [" << attrs << "]";
    out << ";\n";
  }
  for (const auto& [e, rank, n] : waits) out << fmt::format("  {} -> w{}_{} [style=dotted];\n", node_id(e), rank, n);
  out << "  subgraph cluster_ranks {\n    label=\"ranks\";\n";
  for (int r : seen_ranks)
    out << fmt::format("    rank{} [label=\"rank {}\", shape=box, fillcolor=\"{}\"];\n", r, r, rank_colour(r));
  out << "  }\n}\n";
}

std::string event_graph_rank_path(const std::string& path, int rank) {
  std::string base = path;
  if (base.size() > 4 && base.ends_with(".dot")) base.resize(base.size() - 4);
  return fmt::format("{}.rank{}.dot", base, rank);
}

void write_event_graph_files(const std::string& path, std::span<const event_trace* const> local, int ranks) {
  auto write = [](const std::string& file, std::span<const event_trace* const> traces) {
    std::ofstream out(file);
    if (out) event_trace::write_dot(out, traces);
    if (!out) log().warn("rill: could not write the event graph to {}", file);
  };
  for (const event_trace* t : local) write(event_graph_rank_path(path, t->rank()), std::span(&t, 1));
  if (static_cast<int>(local.size()) == ranks) write(path, local);
}

// ---- the table's side: operations per slot, the hang report --------------------------------------

void event_table::set_op(event e, op_kind op, int arg) {
  owned_slot& s = slot_at(e.slot());
  s.op.store(op, std::memory_order_relaxed);
  s.op_arg.store(arg, std::memory_order_relaxed);
  s.op_gen.store(e.generation(), std::memory_order_release);
  if (trace_.graph_on()) trace_.record_create(e, op, arg);
}

std::string event_table::pending_report() {
  // Per waited event: what it is, and who waits.
  std::map<event, std::pair<std::string, std::vector<std::string>>> waited;
  // e -> the events whose operations wait for it here (a task's completion, a merge's result, a
  // deferred trigger's target): the wait-for graph, in which a hang's cycle shows.
  std::map<event, std::vector<event>> blocks;
  auto add_waiter = [&](event e, const event_waiter& w) {
    waited[e].second.push_back(describe_waiter(w));
    if (const event target = waiter_target(w); !target.is_none()) blocks[e].push_back(target);
  };
  std::vector<event> untriggered_user_events;  // waited for: only a trigger by the program ends these
  const std::uint32_t n = slot_count_.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < n; ++i) {
    owned_slot& s = slot_at(i);
    std::lock_guard g(s.m);
    if (!s.waiters && !s.has_subscribers() && !s.has_pinned_subscribers()) continue;
    std::string what = "event";
    if (s.pinned) {
      what = fmt::format("barrier phase (rank {}'s barrier in slot {}: it triggers when its arrivals are in)", me_, i);
    } else if (s.op_gen.load(std::memory_order_acquire) == s.gen) {
      const op_kind op = s.op.load(std::memory_order_relaxed);
      if (op == op_kind::user_event && !s.triggered)
        untriggered_user_events.push_back(event::from_parts(static_cast<std::uint32_t>(me_), i, s.gen));
      const int arg = s.op_arg.load(std::memory_order_relaxed);
      what = describe_op(op, arg, me_);
    }
    for (event_waiter* w = s.waiters; w; w = w->next) {
      const event e = event::from_parts(static_cast<std::uint32_t>(me_), i, w->gen);
      auto& entry = waited[e];
      if (entry.first.empty()) entry.first = w->gen == s.gen || s.pinned ? what : "event";
      add_waiter(e, *w);
    }
    if (!s.triggered && s.has_subscribers()) {
      const event e = event::from_parts(static_cast<std::uint32_t>(me_), i, s.gen);
      auto& entry = waited[e];
      if (entry.first.empty()) entry.first = what;
      std::string ranks = std::to_string(s.subscriber);
      if (s.extra)
        for (int r : s.extra->subscribers) ranks += ", " + std::to_string(r);
      entry.second.push_back("waiters on rank(s) " + ranks + " (subscribed)");
    }
    if (s.has_pinned_subscribers()) {
      for (const auto& [rank, upto] : s.extra->pinned_subscribers) {
        // A rank waits for phases up to `upto`: the current one is what it waits on now.
        const event e = event::from_parts(static_cast<std::uint32_t>(me_), i, s.gen);
        auto& entry = waited[e];
        if (entry.first.empty()) entry.first = what;
        entry.second.push_back(fmt::format("waiters on rank {} (subscribed to phases up to gen {})", rank, upto));
      }
    }
  }
  remote_.for_each([&](int owner, std::uint32_t slot, const remote_slot& rec) {
    std::lock_guard g(shard_of(remote_key(owner, slot)).m);
    for (event_waiter* w = rec.waiters; w; w = w->next) {
      const event e = event::from_parts(static_cast<std::uint32_t>(owner), slot, w->gen);
      auto& entry = waited[e];
      if (entry.first.empty())
        entry.first = fmt::format("owned by rank {} (that rank's report names its operation)", e.owner());
      add_waiter(e, *w);
    }
  });
  std::string out;
  constexpr std::size_t most_cycles = 10;
  for (const std::vector<event>& cycle : find_cycles(blocks, most_cycles)) {
    out += "  a cycle: nothing in it can trigger first:";
    for (event e : cycle) out += " " + event_name(e) + " ->";
    out += " " + event_name(cycle.front()) + " (each waits for the one before it)\n";
  }
  for (const auto& [e, entry] : waited) {
    out += fmt::format("  {} {}, untriggered; waited on by:\n", event_name(e), entry.first);
    for (const auto& who : entry.second) out += "      " + who + "\n";
  }
  if (!untriggered_user_events.empty()) {
    out += "  user events of this rank that are waited for and that only the program can trigger:";
    for (event e : untriggered_user_events) out += " " + event_name(e);
    out += "\n";
  }
  return out;
}

bool event_table::check_hang() {
  if (!every_nth_idle_round<32, event_trace>()) return false;
  std::unique_lock l(trace_.hang_mutex(), std::try_to_lock);
  if (!l.owns_lock()) return false;
  const std::array<std::uint64_t, 3> sig{created_.load(std::memory_order_relaxed),
                                         untriggered_.load(std::memory_order_relaxed), trace_.progress()};
  const std::uint64_t now = steady_now_ns();
  if (!trace_.hang_due(sig, now)) return false;
  const std::string body = pending_report() + trace_.hang_notes();
  if (body.empty()) return false;  // quiet, but nothing waits: not a hang
  trace_.hang_reported();
  const std::string text = fmt::format(
      "rill: hang report: rank {} has seen no event trigger for {:.1f} s while these events have waiters\n"
      "rill: (the run goes on, and message delivery is audited; --rill:hang-report-s sets the quiet time, 0 turns the "
      "report off)\n"
      "{}rill: end of rank {}'s hang report\n",
      me_, static_cast<double>(trace_.quiet_ns(now)) / 1e9, body, me_);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  return true;
}

}  // namespace rill::detail

namespace rill::debug {

void write_event_graph(const std::string& path) {
  detail::event_trace& t = detail::events_here("rill::debug::write_event_graph").trace();
  if (!t.graph_on()) {
    throw misuse_error(
        "rill::debug::write_event_graph: event graph recording is off; run with --rill:event-graph=PATH");
  }
  std::ofstream out(path);
  const detail::event_trace* one = &t;
  if (out) detail::event_trace::write_dot(out, std::span(&one, 1));
  if (!out) throw std::runtime_error("rill::debug::write_event_graph: cannot write " + path);
}

std::string pending_events() { return detail::events_here("rill::debug::pending_events").pending_report(); }

}  // namespace rill::debug
