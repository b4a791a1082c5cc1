// Every runtime option, declared once, layer by layer. rill::config (rill/config.hpp) is built from
// these lists, and so are the parser of --rill:NAME=VALUE flags and RILL_NAME variables and the
// table --rill:help prints (src/common/options.cpp).
//
// Each entry is X(layer, name, member, type, default, kind, shown, agree, meaning):
//   layer    the layer it tunes, as --rill:help groups them (src/README.md lists the layers)
//   name     the flag --rill:<name>; the variable is RILL_<NAME>, dashes as underscores
//   member   the field of rill::config, of this type, with this default
//   kind     how a value is read and shown: number(min, max), bytes(min, max) (K/M/G suffixes),
//            seconds(min, max), on_off, path, or one of a fixed list of words
//   shown    from_config (--rill:help shows the default above), or a text for a default the
//            runtime chooses at start-up
//   agree    same: every rank must be started with the same value (it sizes or routes what ranks
//            share; start-up compares them and stops every rank on a difference), or per_rank
#pragma once

// clang-format off
#define RILL_TRANSPORT_OPTIONS(X)                                                                                     \
  X(transport, "ranks", ranks, int, 1, number(1, 1024), from_config, per_rank,                                        \
    "ranks of the local transport (threads of this process)")                                                         \
  X(transport, "transport", transport, transport_kind, transport_kind::local, transport_names,                        \
    "mpi under mpirun/srun, else local", same, "local (ranks as threads) or mpi (ranks as processes)")                \
  X(transport, "queue-buffers", queue_buffers, int, 64, number(1, 1 << 20), from_config, per_rank,                    \
    "buffers in flight per destination before the sender feels back-pressure")                                        \
  X(transport, "node-ring", node_ring_bytes, std::size_t, std::size_t{1} << 20, ring_bytes, from_config, same,        \
    "mpi: bytes of the shared-memory ring a rank keeps for each other rank of its node, through which their buffers " \
    "(up to agg-bytes + large-bytes, and a quarter of the ring) travel instead of MPI (0 = off, else at least 4KiB)") \
  X(transport, "chaos", chaos, std::uint64_t, 0, number(0, ~std::uint64_t{0}), from_config, per_rank,                 \
    "local transport: seed for delayed, reordered, batched delivery (0 = off)")                                       \
  X(transport, "faults", faults, fault_plan, fault_plan{}, fault_spec, from_config, per_rank,                         \
    "local transport: faults to inject, comma-separated: drop=N (a buffer of application messages is lost with "      \
    "probability 1/N), stall=R@K (rank R stops receiving and sending after K buffers), slow=R:MS (buffers to rank R " \
    "arrive MS ms late); random choices follow the chaos seed")

#define RILL_SCHEDULER_OPTIONS(X)                                                                                     \
  X(scheduler, "workers", workers, int, 1, number(1, 1024), "cores / ranks on this node", per_rank,                   \
    "worker threads per rank")                                                                                        \
  X(scheduler, "channels", channels, int, 1, number(0, 64), "1 if a core is spare, else 0", per_rank,               \
    "data-movement channel threads per rank: they run copies, fills and reductions, so that data moves while every "  \
    "worker runs a task (0: the workers move it)")                                                                    \
  X(scheduler, "io-threads", io_threads, int, 1, number(1, 64), from_config, per_rank,                                \
    "I/O threads per rank: they read and write attached external resources (files, HDF5, SQLite), so that no "        \
    "worker or channel blocks on a disk")                                                                             \
  X(scheduler, "stack", stack_bytes, std::size_t, 64 * 1024, bytes(8192, std::size_t{1} << 30), from_config,          \
    per_rank,                                                                                                         \
    "stack a task can count on, in bytes (fiber stacks are twice this, with a guard page below; x4 under ASan, x2 "   \
    "under TSan)")                                                                                                    \
  X(scheduler, "idle-poll-us", idle_poll_us, std::uint64_t, 5000, number(0, 60'000'000), from_config, per_rank,       \
    "microseconds an idle worker keeps polling before it sleeps (ranks woken by arrivals: at most 50)")               \
  X(scheduler, "bind", bind, bind_policy, bind_policy::none, bind_names, from_config, per_rank,                       \
    "none (the kernel places the worker threads) or cores: each worker is bound to a core of those the process may "  \
    "run on, taken in turn by the process's ranks (under mpi, after the cores of the processes before it on the "     \
    "node, unless the launcher bound it), so that workers share a core only when there are more than cores")         \
  X(scheduler, "progress", progress, progress_mode, progress_mode::worker, progress_names, from_config, per_rank,     \
    "worker (the workers poll the network between tasks) or thread: besides, while every worker of a rank is busy, "  \
    "a thread of the rank polls it, runs the runtime's protocol handlers and rill::am::send_inline's at once and "    \
    "queues other messages for the workers, so that a rank answers while its workers run long tasks")                 \
  X(scheduler, "inline-queue", inline_queue, std::int64_t, 16, number(0, std::int64_t{1} << 40), from_config,         \
    per_rank,                                                                                                         \
    "tasks queued on a worker from which a task spawned with rill::may_inline runs at once on the spawner's stack "   \
    "instead of being queued (0 = always, when there is stack room)")

#define RILL_MESSAGES_OPTIONS(X)                                                                                      \
  X(messages, "agg-bytes", agg_bytes, std::size_t, 4096, bytes(64, std::size_t{16} << 20), from_config, same,         \
    "aggregation buffer size threshold: a destination's buffer leaves when it is this full")                          \
  X(messages, "agg-age-us", agg_age_us, std::uint64_t, 200, number(0, 10'000'000), from_config, per_rank,             \
    "age threshold: a buffer whose oldest message is this old (microseconds) leaves")                                 \
  X(messages, "agg-idle-flush", agg_idle_flush, bool, true, on_off, from_config, per_rank,                            \
    "flush on idle: what a rank buffered leaves as soon as a worker runs out of work (off: only full or aged "        \
    "buffers leave, and rill::am::flush; measured by G4)")                                                            \
  X(messages, "ranks-per-node", ranks_per_node, int, 0, number(0, 32767), from_config, same,                           \
    "hierarchical aggregation: ranks form nodes of this many consecutive ranks, and a rank keeps one aggregation "    \
    "buffer per other node, not per rank there, which a rank of that node splits (1 = one buffer per destination "   \
    "rank; 0 = the launcher's nodes under mpi where each holds consecutive ranks, else 1; on the local transport, "   \
    "nodes simulated in one process)")                                                                                \
  X(messages, "large-bytes", large_bytes, std::size_t, 16 * 1024, bytes(64, std::size_t{1} << 30), from_config, same, \
    "payloads above this size travel on their own, not copied into buffers")                                          \
  X(messages, "unresponsive-s", unresponsive_s, double, 0, seconds(0, 1e6), from_config, per_rank,                    \
    "a rank that has not answered a delivery audit (which a stuck rank starts, see hang-report-s) for this long "     \
    "stops the job with exit code 3 (0 = only report it: a rank whose workers all run long tasks answers late)")

#define RILL_EVENTS_OPTIONS(X)                                                                                        \
  X(events, "event-graph", event_graph, std::string, "", path, from_config, per_rank,                                 \
    "record the event graph; at the end each rank writes PATH.rankN.dot (and the whole graph to PATH when all ranks " \
    "share this process), see docs/debugging.md")                                                                     \
  X(events, "hang-report-s", hang_report_s, double, 30, seconds(0, 1e6), from_config, per_rank,                       \
    "seconds without any event triggering on a rank that has waiters before it prints what it waits on and audits "   \
    "message delivery, which reports lost messages and silent ranks (0 = never; fractions allowed)")                  \
  X(events, "unobserved-errors", unobserved_errors, unobserved_policy, unobserved_policy::fatal, unobserved_names,    \
    from_config, per_rank,                                                                                            \
    "a poisoned event nobody waited on, queried or passed on (a failed proc::spawn, a dropped rpc future) is "        \
    "reported when the run ends: fatal (the run exits 3), warn (it exits as it would have), ignore (no report)")

#define RILL_GLOBAL_OPTIONS(X)                                                                                        \
  X(global, "segment", segment_bytes, std::size_t, std::size_t{128} << 20, bytes(128 * 1024, std::size_t{1} << 40),   \
    from_config, same,                                                                                                \
    "each rank's registered segment for global memory (rill::new_array): reserved address space, committed as used")  \
  X(global, "global-heap", global_heap_bytes, std::size_t, std::size_t{64} << 20, bytes(0, std::size_t{1} << 40),     \
    "half the segment", same,                                                                                         \
    "the last part of each rank's segment that holds global arrays (rill::global_alloc); a multiple of 4 KiB")        \
  X(global, "shared-segments", shared_segments, bool, true, on_off, from_config, same,                                \
    "on: ranks in one process (local transport) or on one node (mpi, a shared-memory window) address each other's "   \
    "segments (and copies reach each other's instances there) directly; off: only their own")                         \
  X(global, "tag-checks", tag_check, tag_checks, tag_checks::every, tag_check_names, from_config, same,               \
    "where generation tags of global memory catch a stale or out-of-array pointer: every access (safe), or home: at " \
    "the home, in local() and in bulk transfers only -- about a tenth faster for single-element operations through a " \
    "mapped segment, which then check bounds only and MAY WRITE INTO MEMORY ALLOCATED SINCE")                         \
  X(global, "gas-cache", gas_cache, gas_cache_policy, gas_cache_policy::unbounded, gas_cache_names, from_config,      \
    per_rank,                                                                                                         \
    "the translation cache of relocated AGAS blocks (rill/gas.hpp): unbounded, lru or random (the last two forget "   \
    "blocks beyond gas-cache-entries)")                                                                               \
  X(global, "gas-cache-entries", gas_cache_entries, std::size_t, 4096, number(1, std::size_t{1} << 32), from_config,  \
    per_rank,                                                                                                         \
    "the most blocks a bounded translation cache (lru, random) remembers")

#define RILL_STEAL_OPTIONS(X)                                                                                         \
  X(steal, "steal", steal, steal_policy, steal_policy::random, steal_names, from_config, same,                        \
    "distributed work stealing of rill::async_any tasks by idle ranks: off, random (any rank) or hierarchical "       \
    "(ranks on the same node first)")                                                                                 \
  X(steal, "steal-batch", steal_batch, std::uint32_t, 8, number(1, 1 << 20), from_config, per_rank,                   \
    "the most async_any tasks one steal takes (at most half of the victim's queue)")

#define RILL_DATA_OPTIONS(X)                                                                                          \
  X(data, "io-order", io_ordering, io_order, io_order::elevator, io_order_names, from_config, per_rank,                  \
    "the order in which I/O threads take the reads and writes of attached resources that are ready, per device: "   \
    "elevator (by file, then offset, sweeping front to back) or fifo (as they became ready)")                        \
  X(data, "io-depth", io_depth, int, 0, number(0, 64), "every I/O thread", per_rank,                                  \
    "the most reads and writes of one device (a file system) that I/O threads run at once, so that a slow device "  \
    "does not hold every I/O thread while others wait (0: no limit but the I/O threads)")                            \
  X(data, "io-direct", io_direct_bytes, std::size_t, 0, bytes(0, std::size_t{1} << 40), "never", per_rank,            \
    "reads and writes of a raw file of at least this many bytes bypass the page cache (O_DIRECT), where the file "    \
    "system allows it and the bytes are aligned as it asks: the disk moves them straight to or from the instance, "   \
    "no core copies them, but without the cache's read-ahead and write-behind (0: never; see docs/external.md)")     \
  X(data, "io-fuse", io_fuse_bytes, std::size_t, std::size_t{16} << 20, bytes(0, std::size_t{1} << 30), from_config,  \
    per_rank,                                                                                                         \
    "under the elevator, reads (or writes) of adjacent ranges of one raw file that wait at once are fused into one "  \
    "system call of at most this many bytes (preadv/pwritev; 0: never)")                                             \
  X(data, "memory-keep", memory_keep_bytes, std::size_t, std::size_t{1} << 30, bytes(0, std::size_t{1} << 50),       \
    from_config, per_rank,                                                                                            \
    "bytes of system memory that destroyed instances of 64 KiB or more leave kept, pages resident, for the next "     \
    "instances of about their size, so that these do not fault in fresh pages (given back when the memory needs "     \
    "them for live instances; 0: none)")

#define RILL_REGIONS_OPTIONS(X)                                                                                       \
  X(regions, "instance-budget", instance_budget, std::size_t, 0, bytes(0, std::size_t{1} << 50), "no budget",         \
    per_rank,                                                                                                         \
    "the most bytes of instances the launches a rank issues keep on each rank; beyond it, making one destroys "       \
    "instances whose data is valid elsewhere too, least recently used first (0 = keep every instance)")          \
  X(regions, "launch-memo", launch_memo, bool, true, on_off, from_config, per_rank,                                  \
    "remember each launch's analysis and repeat it when the same launch finds its regions as it left them "          \
    "(off: analyse every launch, see docs/regions.md)")                                                              \
  X(regions, "write-after-read", write_after_read, bool, true, on_off, from_config, per_rank,                        \
    "a write does not wait for reads of other instances of its points, and moves to another instance when its "     \
    "own is being read (Iris's write-after-read; off: every write waits for the reads before it)")

#define RILL_RUNTIME_OPTIONS(X)                                                                                       \
  X(runtime, "log", log, std::string, "warn", log_levels, from_config, per_rank,                                      \
    "log level: trace, debug, info, warn, error, critical, off")                                                      \
  X(runtime, "trace", trace, std::string, "", path, from_config, same,                                                \
    "record a timeline of the run (tasks, handlers, messages, events, steals per worker) and write it as one "        \
    "Chrome/Perfetto JSON trace at PATH, see docs/tracing.md")                                                        \
  X(runtime, "stats", stats, bool, false, on_off, from_config, same,                                                  \
    "on (or the bare flag): at the end of the run, print every layer's counters per rank on stderr (rill::counters)") \
  X(runtime, "tree-fanout", tree_fanout, int, 16, number(2, 1024), from_config, same,                                 \
    "children per rank in the tree that termination detection's waves travel down and back up: a rank handles at "  \
    "most this many + 1 messages a wave, in log_fanout(ranks) hops each way")

// All of them, bottom layer first.
#define RILL_OPTIONS(X)                                                                                               \
  RILL_TRANSPORT_OPTIONS(X)                                                                                           \
  RILL_SCHEDULER_OPTIONS(X)                                                                                           \
  RILL_MESSAGES_OPTIONS(X)                                                                                            \
  RILL_EVENTS_OPTIONS(X)                                                                                              \
  RILL_GLOBAL_OPTIONS(X)                                                                                              \
  RILL_STEAL_OPTIONS(X)                                                                                               \
  RILL_DATA_OPTIONS(X)                                                                                                \
  RILL_REGIONS_OPTIONS(X)                                                                                             \
  RILL_RUNTIME_OPTIONS(X)
// clang-format on
