// The Rill version of a Task Bench graph, SPMD: every rank owns a block of points and starts its
// own tasks; nothing is launched centrally. A task's output goes to each dependent: into the
// dependent's input slot directly when the dependent's point is on the same rank, as one active
// message (rill::am::send) to the owner otherwise. The tasks without inputs start as one parallel
// loop (rill::forasync). Each (step, point) has an arrival counter; the
// arrival that completes it spawns the task (rill::spawn) — except that a task whose own output
// completes a dependent on its rank runs that dependent itself next instead of spawning it (the
// first such dependent; TBB calls this scheduler bypass; it yields every yield_every steps so the
// rank keeps serving messages), unless run_next is off. Every task checks that it got exactly
// the (step, point) tags it expects, and after the run every counter must equal its task's input
// count: the errors reported are the sum of both checks over all ranks.
//
// run_graph() is collective: every rank calls it with the same arguments, in the same order, from
// the top-level task of rill::runtime::run_spmd(), and gets the same result (wall time as rank 0
// measured it between two phase barriers, errors summed over ranks).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "rill/rill.hpp"
#include "task_bench/graph.hpp"
#include "task_bench/kernel.hpp"

namespace task_bench::rill_version {

inline constexpr int max_ranks = 256;
// A chain of dependents run one after the other (run_next) yields its worker every this many steps.
inline constexpr long yield_every = 8;
// A tile of the sources' loop yields every this many sources (tasks of trivial are short).
inline constexpr long yield_every_sources = 64;

struct input_slot {
  std::atomic<int> arrived{0};
  std::array<tag, max_edges> in{};
};

struct run_state {
  const edge_table* table = nullptr;
  long iterations = 0;
  std::uint64_t epoch = 0;
  int ranks = 1;
  long first = 0;  // owned points: [first, last)
  long last = 0;
  bool flush = true;
  bool run_next = true;
  std::unique_ptr<input_slot[]> slots;  // steps x (last - first)
  std::atomic<long> errors{0};
  std::atomic<long> stray{0};  // messages that found no run or another run
  double sink = 0;
  rill::latch done;

  explicit run_state(long local_sinks) : done(local_sinks) {}
  input_slot& at(long t, long p) { return slots[static_cast<std::size_t>(t * (last - first) + (p - first))]; }
};

// The run each rank of this process takes part in (indexed by rank: on the local transport all
// ranks share the process).
inline std::array<std::atomic<run_state*>, max_ranks> current_run{};
inline std::array<std::atomic<long>, max_ranks> stray_messages{};

inline void execute(run_state* s, long t, long p);

// Writes input k of (t, p); true when it was the last input missing (the caller runs the task).
// The release/acquire on the counter orders every input write before the task reads them.
inline bool deposit(run_state* s, long t, long p, int k, tag v) {
  input_slot& slot = s->at(t, p);
  const int expected = s->table->at(t, p).n_in;
  slot.in[static_cast<std::size_t>(k)] = v;
  return slot.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == expected;
}

inline void remote_deposit(std::uint64_t epoch, std::int32_t t, std::int32_t p, std::int32_t k, tag v) {
  const int me = rill::rank_me();
  run_state* s = current_run[static_cast<std::size_t>(me)].load(std::memory_order_acquire);
  if (s == nullptr || s->epoch != epoch) {
    stray_messages[static_cast<std::size_t>(me)].fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (deposit(s, t, p, k, v)) rill::spawn([s, t, p] { execute(s, t, p); });
}

// Runs task (t, p): checks its inputs, runs the kernel, sends its output to its dependents. When
// its output completes the inputs of dependents on this rank, it runs the first of them itself
// next (when s->run_next; the others are spawned), and so on down the chain.
//
// Only tasks without dependents (sinks) count down s->done: every other task reaches a sink
// through its dependents, and a dependent runs only after this task's output reached it. So
// after a task's last deposit the run may end at any moment: the task reads nothing of *s after
// it (what it needs is copied first).
inline void execute(run_state* s, long t, long p) {
  const edge_table& table = *s->table;  // outlives every run
  const long steps = table.g().steps;
  const long width = table.g().width;
  const long first = s->first;
  const long last = s->last;
  const int ranks = s->ranks;
  const std::uint64_t epoch = s->epoch;
  const bool flush = s->flush;
  const bool run_next = s->run_next;
  const long iterations = s->iterations;
  for (;;) {
    const task_edges& e = table.at(t, p);
    const input_slot& slot = s->at(t, p);
    long bad = 0;
    for (int k = 0; k < e.n_in; ++k) {
      const tag& got = slot.in[static_cast<std::size_t>(k)];
      if (got.step != t - 1 || got.point != e.in[static_cast<std::size_t>(k)]) ++bad;
    }
    if (bad) s->errors.fetch_add(bad, std::memory_order_relaxed);
    const double r = compute_bound(iterations);
    if (r == 12345.678) s->sink = r;  // never true; keeps the result alive
    if (e.n_out == 0 || t + 1 >= steps) {
      s->done.count_down();
      return;
    }
    const tag out{t, p};
    bool sent = false;
    long next = -1;
    for (int k = 0; k < e.n_out; ++k) {
      const long c = e.out[static_cast<std::size_t>(k)];
      const int slot_index = e.out_slot[static_cast<std::size_t>(k)];
      if (c >= first && c < last) {
        if (deposit(s, t + 1, c, slot_index, out)) {
          if (run_next && next < 0) {
            next = c;
          } else {
            const long tn = t + 1;
            rill::spawn([s, tn, c] { execute(s, tn, c); });
          }
        }
      } else {
        rill::am::send(owner_of(c, width, ranks), remote_deposit, epoch, static_cast<std::int32_t>(t + 1),
                       static_cast<std::int32_t>(c), static_cast<std::int32_t>(slot_index), out);
        sent = true;
      }
    }
    // A dependent on another rank should not wait for this rank to run out of work before its
    // input leaves (the aggregation buffer otherwise leaves when the worker goes idle).
    if (sent && flush) rill::am::flush();
    if (next < 0) return;
    t = t + 1;
    p = next;
    // A chain of dependents run here never returns to the scheduling loop, which is where the
    // network is polled: without a yield now and then, a rank whose only worker runs a long chain
    // would not answer the other ranks (a barrier's result request, say) until the chain ends.
    // One rank alone has nobody to answer, and there a yield would hurt: the task becomes a fiber
    // tied to its worker, so the other workers could no longer take its chain over.
    if (ranks > 1 && t % yield_every == 0) rill::yield();
  }
}

// What the ranks agree on at a phase barrier: the largest time contributed, the sum of errors.
struct agreed {
  double seconds = 0;
  long errors = 0;
};

// A phase barrier of all ranks, created by rank 0 and handed to the others, used as a sequence of
// collective steps.
class collective {
 public:
  collective() {
    const int me = rill::rank_me();
    const int n = rill::rank_n();
    if (n > max_ranks) throw std::invalid_argument("task_bench: too many ranks");
    if (me == 0) {
      b_ = rill::barrier::create(
          static_cast<std::uint32_t>(n),
          [](agreed& acc, const agreed& v) {
            if (v.seconds > acc.seconds) acc.seconds = v.seconds;
            acc.errors += v.errors;
          },
          agreed{});
      for (int r = 1; r < n; ++r)
        rill::am::send(
            r,
            [](rill::barrier b) {
              const auto i = static_cast<std::size_t>(rill::rank_me());
              mailbox()[i] = b;
              ready()[i].store(true, std::memory_order_release);
            },
            b_);
    } else {
      const auto i = static_cast<std::size_t>(me);
      while (!ready()[i].load(std::memory_order_acquire)) rill::yield();
      ready()[i].store(false, std::memory_order_relaxed);
      b_ = mailbox()[i];
    }
  }

  // Every rank contributes `v`; returns the combination once all have.
  agreed step(agreed v) {
    b_.arrive(1, rill::event::none(), v);
    const agreed r = b_.result<agreed>();
    b_ = b_.advance();
    return r;
  }

 private:
  static std::array<rill::barrier, max_ranks>& mailbox() {
    static std::array<rill::barrier, max_ranks> m{};
    return m;
  }
  static std::array<std::atomic<bool>, max_ranks>& ready() {
    static std::array<std::atomic<bool>, max_ranks> r{};
    return r;
  }
  rill::barrier b_;
};

struct result {
  double seconds = 0;
  long errors = 0;
};

// Runs the graph once with `iterations` per task. Collective (see the header comment).
inline result run_graph(const edge_table& table, long iterations, collective& sync, std::uint64_t epoch,
                        bool flush = true, bool run_next = true) {
  const int me = rill::rank_me();
  const int n = rill::rank_n();
  const graph& g = table.g();
  const long first = first_point(g.width, me, n);
  const long last = first_point(g.width, me + 1, n);
  long local_sinks = 0;
  for (long t = 0; t < g.steps; ++t)
    for (long p = first; p < std::min(last, g.width_at(t)); ++p)
      if (table.at(t, p).n_out == 0 || t + 1 == g.steps) ++local_sinks;

  auto s = std::make_unique<run_state>(local_sinks);
  s->table = &table;
  s->iterations = iterations;
  s->epoch = epoch;
  s->ranks = n;
  s->first = first;
  s->last = last;
  s->flush = flush;
  s->run_next = run_next;
  s->slots = std::make_unique<input_slot[]>(static_cast<std::size_t>(g.steps * std::max(1L, last - first)));
  current_run[static_cast<std::size_t>(me)].store(s.get(), std::memory_order_release);

  std::vector<std::pair<long, long>> sources;  // (step, point) of the tasks without inputs
  for (long t = 0; t < g.steps; ++t)
    for (long p = first; p < std::min(last, g.width_at(t)); ++p)
      if (table.at(t, p).n_in == 0) sources.emplace_back(t, p);

  sync.step({});  // every rank has its run state: messages of this run find it
  // The step's last notifications leave now, not when this worker next runs out of work.
  rill::am::flush();
  const auto t0 = std::chrono::steady_clock::now();
  // The sources are a parallel loop (one tile per worker), not a spawn each: in a graph of
  // independent tasks (trivial) a task then costs a loop iteration, as it does in the MPI version.
  // A tile yields now and then, as a chain does: the other ranks' messages (the next phase's
  // subscription, say) wait for this rank's worker.
  run_state* sp = s.get();
  rill::forasync(0, static_cast<std::int64_t>(sources.size()), [sp, &sources, n](std::int64_t i) {
    const auto [t, p] = sources[static_cast<std::size_t>(i)];
    execute(sp, t, p);
    if (n > 1 && i % yield_every_sources == yield_every_sources - 1) rill::yield();
  });
  s->done.wait();
  sync.step({});  // every rank has run all its tasks (the MPI version's closing barrier)
  const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long errors = s->errors.load();
  for (long t = 0; t < g.steps; ++t)
    for (long p = first; p < std::min(last, g.width_at(t)); ++p)
      if (s->at(t, p).arrived.load(std::memory_order_relaxed) != table.at(t, p).n_in) ++errors;
  errors += stray_messages[static_cast<std::size_t>(me)].exchange(0);
  const agreed end = sync.step({me == 0 ? mine : 0.0, errors});
  if (me == 0 && std::getenv("M3DBG")) { static auto T0 = std::chrono::steady_clock::now(); std::fprintf(stderr, "DBG t=%.3f it=%ld run=%.3f ms\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - T0).count(), iterations, end.seconds * 1e3); }
  current_run[static_cast<std::size_t>(me)].store(nullptr, std::memory_order_release);
  return {end.seconds, end.errors};
}

}  // namespace task_bench::rill_version
