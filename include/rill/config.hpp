// Runtime configuration: the values behind every --rill:* flag and RILL_* variable, as
// rill/config_options.hpp declares them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "rill/config_options.hpp"

namespace rill {

enum class transport_kind { local, mpi };
// Distributed work stealing of rill::async_any tasks (rill/async_any.hpp).
enum class steal_policy { off, random, hierarchical };
// What a rank's translation cache of relocated AGAS blocks forgets first when full (rill/gas.hpp).
enum class gas_cache_policy { unbounded, lru, random };
// Where the generation tags of global memory are checked (rill/global_ptr.hpp): on every access,
// or (an opt-in for speed) on all but single-element operations through a mapped segment, which
// then check bounds only and may write into memory allocated since.
enum class tag_checks { every, home };
// What the end of a run does about errors nobody observed: poisoned events that no one waited on,
// queried or passed on (rill/event.hpp, docs/debugging.md).
enum class unobserved_policy { fatal, warn, ignore };
// The order in which a rank's I/O threads take external I/O that is ready, per device: elevator
// (by file, then offset, in one sweep) or fifo (as it became ready).
enum class io_order { elevator, fifo };
// Whether a rank's workers are bound to cores (--rill:bind): none (the kernel places them) or
// cores (one core each, taken in turn, so that workers share a core only when there are more
// workers than cores).
enum class bind_policy { none, cores };
// Who polls a rank's network (--rill:progress): its workers, at scheduling points, or besides, while
// every worker is busy, a progress thread of its own, which runs the runtime's protocol handlers
// and rill::am::send_inline's at once and queues the other messages for the workers
// (docs/scheduler.md#the-progress-thread---rillprogress).
enum class progress_mode { worker, thread };
// Faults the local transport injects on purpose (--rill:faults; docs/debugging.md#fault-injection),
// so that tests see what the runtime detects when a network misbehaves. Seeded by --rill:chaos.
struct fault_plan {
  std::uint64_t drop_one_in = 0;  // a buffer of application messages is lost with probability 1/N (0: never)
  int stall_rank = -1;            // after its first stall_after buffers this rank neither receives nor
  std::uint64_t stall_after = 0;  //   sends anything more: to the others it stopped answering
  int slow_rank = -1;             // buffers to this rank arrive slow_ms late
  std::uint64_t slow_ms = 0;
  bool any() const { return drop_one_in != 0 || stall_rank >= 0 || slow_rank >= 0; }
  bool operator==(const fault_plan&) const = default;
};

// One field per option of rill/config_options.hpp, with its default there.
struct config {
#define RILL_CONFIG_MEMBER(layer, name, member, type, default_value, kind, shown, agree, meaning) \
  type member = default_value;
  RILL_OPTIONS(RILL_CONFIG_MEMBER)
#undef RILL_CONFIG_MEMBER
};

}  // namespace rill
