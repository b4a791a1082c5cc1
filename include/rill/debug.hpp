// Seeing what a run's events do (docs/debugging.md).
//
// --rill:event-graph=PATH records the event graph: every operation (user events, merges, spawned
// tasks, deferred triggers, waits), its preconditions and the rank it runs on; at the end of the
// run each rank writes its part as Graphviz DOT. --rill:hang-report-s=N (default 30, 0 = off)
// makes a rank on which no event has triggered for N seconds, while some event has waiters, print
// to stderr what it waits on. Both are per rank; neither stops the program.
#pragma once

#include <string>

namespace rill::debug {

// Writes what the calling rank has recorded so far as one DOT digraph. Call it from a task; throws
// rill::misuse_error unless the run records the graph (--rill:event-graph).
void write_event_graph(const std::string& path);

// What the calling rank waits on now, in the words of the hang report: one entry per untriggered
// event with waiters (its owner, slot, generation and operation) and who waits. "" when nothing
// waits.
std::string pending_events();

}  // namespace rill::debug
