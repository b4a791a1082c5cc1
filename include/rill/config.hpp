// Runtime configuration: the values behind every --rill:* flag and RILL_* variable.
// The table that parses them, with defaults and help texts, lives in src/common/options.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rill {

enum class transport_kind { local, mpi };
// Distributed work stealing of rill::async_any tasks (rill/async_any.hpp).
enum class steal_policy { off, random, hierarchical };
// What a rank's translation cache of relocated AGAS blocks forgets first when full (rill/gas.hpp).
enum class gas_cache_policy { unbounded, lru, random };
// Where the generation tags of global memory are checked (rill/global_ptr.hpp): on every access,
// or on all but single-element operations through a mapped segment, which check bounds only.
enum class tag_checks { every, home };

struct config {
  int ranks = 1;    // ranks of the local transport (mpi: the communicator's size)
  int workers = 1;  // worker threads per rank
  transport_kind transport = transport_kind::local;
  std::size_t stack_bytes = 64 * 1024;                 // fiber stack size
  std::size_t agg_bytes = 4096;                        // aggregation buffer size threshold
  std::uint64_t agg_age_us = 200;                      // age threshold of the oldest buffered message
  std::size_t large_bytes = 16 * 1024;                 // payloads above this travel on their own
  int queue_buffers = 64;                              // in-flight buffers per destination before back-pressure
  std::size_t node_ring_bytes = std::size_t{1} << 20;  // mpi: shared-memory ring per other rank of the node, 0 = off
  std::uint64_t chaos = 0;                             // local transport: seed of delay/reorder, 0 = off
  std::string log = "warn";                            // spdlog level
  std::uint64_t idle_poll_us = 5000;                   // how long an idle worker keeps polling before it sleeps
  std::int64_t inline_queue = 16;                      // a rill::may_inline task runs at once when this many are queued
  std::string event_graph;                             // record the event graph, write it as DOT here ("" = off)
  std::string trace;                                   // record a timeline, write it as Chrome JSON here ("" = off)
  bool stats = false;                                  // print every layer's counters at the end of the run
  double hang_report_s = 30;                           // quiet seconds before a rank reports what it waits on (0 = off)
  steal_policy steal = steal_policy::random;           // how an idle rank picks a victim to steal async_any tasks from
  std::uint32_t steal_batch = 8;                       // the most tasks one steal takes
  std::size_t segment_bytes = std::size_t{128} << 20;  // each rank's segment for global memory
  std::size_t global_heap_bytes = std::size_t{64} << 20;  // its last part: the rank's part of the global heap
  bool shared_segments = true;                            // ranks of one process address each other's segments directly
  gas_cache_policy gas_cache = gas_cache_policy::unbounded;  // the AGAS translation cache's replacement policy
  std::size_t gas_cache_entries = 4096;                      // its bound (lru, random)
  tag_checks tag_check = tag_checks::home;  // release builds of Rill; debug builds: every (src/common/options.cpp)
};

}  // namespace rill
