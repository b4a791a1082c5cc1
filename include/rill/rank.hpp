// Questions about the calling rank, answered by its rank core: which rank it is, how many there
// are, how many workers it has, and its counters. Valid inside tasks and message handlers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rill {

// The calling task's rank and the number of ranks (valid inside tasks and handlers).
int rank_me();
int rank_n();
// The number of worker threads of the calling rank, which run its tasks (--rill:workers).
int workers_here();

// Counters of the calling rank, for summaries and benchmarks.
struct rank_stats {
  std::uint64_t messages_sent = 0;     // active messages (not buffers) sent
  std::uint64_t messages_handled = 0;  // active messages whose handler has run here
  std::uint64_t buffers_sent = 0;      // transport sends (aggregated buffers or large payloads)
  std::uint64_t bytes_sent = 0;
  std::uint64_t tasks_run = 0;
  std::uint64_t steals = 0;
  std::uint64_t fibers_created = 0;
};
rank_stats stats();

// One counter of the calling rank (the layer it belongs to, its name, its value).
struct counter {
  std::string layer;
  std::string name;
  std::uint64_t value = 0;
};
// Every counter of every layer of the calling rank, bottom up: what rank_stats, event_stats,
// reservation_stats, steal_stats and gas::stats report, and what --rill:stats prints.
std::vector<counter> counters();

}  // namespace rill
