// SCALE — what the protocols cost as ranks grow, counted rather than timed (issue 23): messages per
// barrier, per event trigger waited on by every other rank, per finish over one task on every
// other rank, per allreduce and per broadcast; then, after every rank has written to every other
// rank, aggregation queues and buffer bytes per rank (with --rill:ranks-per-node, per rank of the
// node and per other node); and after each rank's AGAS block has moved and every rank has read
// four blocks, directory and translation-cache entries per rank.
//
//   rill_bench_scale --rill:ranks=256 --rill:workers=1 --rill:ranks-per-node=8 [--check]
//
// Ranks are threads of one process (the local transport), which is how 256 ranks fit on one
// machine; the counts do not depend on it. There is no peer: each count is printed beside the
// bound its protocol promises (docs/scale.md), as R6 prints slots beside the peak of events.
#include <CLI/CLI.hpp>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "rill/rill.hpp"

namespace {

// The protocol steps measured. Each is run between two barriers and its messages counted on every
// rank from before the first barrier to after the second, so that no rank's messages for a step
// can fall outside its own count (a rank starts a step only once every rank has counted up to it);
// a third barrier, uncounted, keeps the next step's messages out of it.
enum step : int { barriers, event_trigger, finish, allreduce, broadcast, steps };

std::vector<std::array<std::uint64_t, steps>> g_sent;  // per rank, per step: messages sent in it
struct memory_counts {
  std::uint64_t queues = 0, buffer_bytes = 0, blocks_held = 0, cache_entries = 0;
};
std::vector<memory_counts> g_memory;  // per rank
rill::user_event g_event;
std::vector<rill::gaddr> g_blocks;  // each rank's AGAS block

std::uint64_t counter(const std::vector<rill::counter>& all, const std::string& layer, const std::string& name) {
  for (const rill::counter& c : all)
    if (c.layer == layer && c.name == name) return c.value;
  throw std::runtime_error("no counter " + layer + "." + name);
}

std::uint64_t messages_sent() { return counter(rill::counters(), "messages", "messages_sent"); }

void protocol_steps() {
  const rill::team world = rill::team::world();
  const int me = rill::rank_me(), n = rill::rank_n();
  auto measure = [&](step s, auto&& run) {
    const std::uint64_t before = messages_sent();
    world.barrier().wait();
    run();
    world.barrier().wait();
    g_sent[static_cast<std::size_t>(me)][s] = messages_sent() - before;
    // No rank goes on before every rank has counted: a message of the next step would make this
    // rank send a reply that it counted here.
    world.barrier().wait();
  };
  measure(barriers, [] {});
  if (me == 0) g_event = rill::user_event::create();
  world.barrier().wait();
  measure(event_trigger, [&] {
    if (me == 0)
      g_event.trigger();
    else
      g_event.wait();
  });
  measure(finish, [&] {
    if (me == 0)
      rill::finish([&] {
        for (int r = 1; r < n; ++r) rill::async_at(r, [] {});
      });
  });
  measure(allreduce, [&] {
    if (world.allreduce(long{1}, rill::reduce::sum<long>{}).get() != n) throw std::runtime_error("allreduce is wrong");
  });
  measure(broadcast, [&] {
    if (world.broadcast(long{me == 0 ? 42 : 0}, 0).get() != 42) throw std::runtime_error("broadcast is wrong");
  });

  // Every rank writes to every other: the most aggregation queues a rank can need.
  for (int k = 1; k < n; ++k) rill::am::send((me + k) % n, [] {});
  rill::am::flush();

  // Each rank's block moves to the next rank, and every rank reads four blocks (through the home's
  // directory the first time, its translation cache after).
  const rill::gaddr mine = rill::gas::alloc(64);
  g_blocks[static_cast<std::size_t>(me)] = mine;
  rill::gas::put(mine, std::uint64_t(me)).wait();
  rill::gas::migrate(mine, (me + 1) % n).wait();
  world.barrier().wait();
  std::mt19937 pick(static_cast<unsigned>(me) * 7919u + 1);
  for (int i = 0; i < 4; ++i) {
    const int owner = static_cast<int>(pick() % static_cast<unsigned>(n));
    if (rill::gas::get<std::uint64_t>(g_blocks[static_cast<std::size_t>(owner)]).get() !=
        static_cast<std::uint64_t>(owner))
      throw std::runtime_error("an AGAS block read back wrong");
  }
  world.barrier().wait();
  const auto all = rill::counters();
  g_memory[static_cast<std::size_t>(me)] =
      memory_counts{counter(all, "messages", "agg_queues_used"), counter(all, "messages", "agg_buffer_bytes"),
                    counter(all, "global", "gas_blocks_held"), counter(all, "global", "gas_cache_entries")};
  world.barrier().wait();
}

std::uint64_t total(step s) {
  std::uint64_t sum = 0;
  for (const auto& per_step : g_sent) sum += per_step[s];
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  CLI::App app{"SCALE: protocol message counts and memory per rank as ranks grow"};
  bool check = false;
  app.add_flag("--check", check, "exit 1 if a count is above its protocol's bound (a test of the protocols)");
  CLI11_PARSE(app, argc, argv);
  const int n = rt.ranks();
  g_sent.assign(static_cast<std::size_t>(n), {});
  g_memory.assign(static_cast<std::size_t>(n), {});
  g_blocks.assign(static_cast<std::size_t>(n), rill::gaddr{});
  if (rt.local_ranks() != n) {
    bench::progress("rill_bench_scale: counts are gathered from every rank of one process: use the local transport");
    return 2;
  }
  if (const int rc = rt.run_spmd(protocol_steps); rc != 0) return rc;

  int log2n = 0;
  while ((1 << log2n) < n) ++log2n;
  const auto per_node = rt.options().ranks_per_node;
  const int k = std::min(per_node, n), nodes = (n + k - 1) / k;
  const nlohmann::json extra{{"ranks", n}, {"ranks_per_node", per_node}, {"nodes", nodes}};
  int above = 0;
  auto emit = [&](const std::string& name, const std::string& unit, double value, double bound) {
    nlohmann::json e = extra;
    e["bound"] = bound;
    bench::emit(bench::result{"SCALE", name, name, unit, false, {value}, "", {}, e});
    if (value > bound) {
      bench::progress("rill_bench_scale: {} is {} at {} ranks, above its bound {}", name, value, n, bound);
      ++above;
    }
  };
  // The first step is two barriers alone; every other step's own messages are what it adds to them.
  const std::uint64_t two_barriers = total(barriers);
  emit("messages per barrier", "messages", static_cast<double>(two_barriers) / 2, static_cast<double>(n) * log2n);
  auto own = [&](step s) { return static_cast<double>(total(s) - two_barriers); };
  emit("messages per event trigger", "messages", own(event_trigger), 2.0 * n - 2);
  emit("messages per finish", "messages", own(finish), 2.0 * (n - 1));
  emit("messages per allreduce", "messages", own(allreduce), 2.0 * (n - 1));
  emit("messages per broadcast", "messages", own(broadcast), n - 1.0);
  memory_counts most;
  for (const memory_counts& m : g_memory) {
    most.queues = std::max(most.queues, m.queues);
    most.buffer_bytes = std::max(most.buffer_bytes, m.buffer_bytes);
    most.blocks_held = std::max(most.blocks_held, m.blocks_held);
    most.cache_entries = std::max(most.cache_entries, m.cache_entries);
  }
  emit("aggregation queues per rank (most)", "queues", static_cast<double>(most.queues), k + nodes - 1);
  emit("aggregation buffer bytes per rank (most)", "bytes", static_cast<double>(most.buffer_bytes),
       static_cast<double>(k + nodes - 1) * static_cast<double>(rt.options().agg_bytes + 64));
  // A rank holds the one block that moved to it, and caches where the four it read and its own live.
  emit("AGAS blocks held per rank (most)", "blocks", static_cast<double>(most.blocks_held), 1);
  emit("AGAS translation cache entries per rank (most)", "entries", static_cast<double>(most.cache_entries), 5);
  return check && above > 0 ? 1 : 0;
}
