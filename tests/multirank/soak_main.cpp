// The soak test: rounds of a mixed workload that touches every layer (tasks and events across
// ranks, finish, futures and rpc, reservations, global memory with atomics and delegates,
// collectives, and a failure that is observed), each round on a fresh 4-rank local runtime with
// its own chaos seed and worker count, until the time budget is spent. Every result is checked
// exactly; the seed of each round is printed first, so a failure can be replayed with --seed.
// The test command runs it under ASan+UBSan (scripts/test), where a race or a lifetime error in a
// protocol shows up as a report rather than a wrong number.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "rill/rill.hpp"
#include "test_argv.hpp"

namespace {

constexpr int ranks = 4;

std::atomic<std::uint64_t> visits{0};  // finish tree nodes visited, all ranks (one process)
std::atomic<std::uint64_t> hops{0};    // tasks of the event chain that ran

struct counter {
  std::uint64_t value;
};

// A failed check: names the part of the workload and the round's seed (main prints it).
void check(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("soak: ") + what + " on rank " + std::to_string(rill::rank_me()));
}

// A tree of async_at tasks under finish: every node sends `fan` children to other ranks.
void visit(int depth, int fan) {
  visits.fetch_add(1, std::memory_order_relaxed);
  if (depth == 0) return;
  for (int i = 0; i < fan; ++i)
    rill::async_at((rill::rank_me() + 1 + i) % rill::rank_n(), [depth, fan] { visit(depth - 1, fan); });
}

std::uint64_t tree_nodes(int depth, int fan) {
  std::uint64_t nodes = 1, level = 1;
  for (int d = 0; d < depth; ++d) nodes += (level *= static_cast<std::uint64_t>(fan));
  return nodes;
}

int workload(std::uint64_t seed) {
  const rill::team world = rill::team::world();
  const int me = world.rank_me(), n = world.rank_n();
  std::mt19937_64 rng(seed);  // the same draws on every rank: the shapes agree
  const int chain = 50 + static_cast<int>(rng() % 200);
  const int depth = 2 + static_cast<int>(rng() % 3), fan = 2 + static_cast<int>(rng() % 2);
  const int acquires = 20 + static_cast<int>(rng() % 50);
  const int updates = 100 + static_cast<int>(rng() % 400);

  // Collectives: a sum, and a broadcast of the objects rank 0 makes for everyone.
  check(world.allreduce(long{me + 1}, rill::reduce::sum<long>{}).get() == long{n} * (n + 1) / 2, "allreduce");
  rill::reservation res;
  rill::global_ptr<std::int64_t> cells;
  if (me == 0) {
    res = rill::reservation::create(sizeof(counter));
    res.acquire().wait();
    res.payload<counter>()->value = 0;
    res.release();
    cells = rill::new_array<std::int64_t>(static_cast<std::size_t>(2 * n));
    for (int i = 0; i < 2 * n; ++i) rill::rput(std::int64_t{0}, cells + i).wait();
  }
  res = world.broadcast(res, 0).get();
  cells = world.broadcast(cells, 0).get();

  // Events: a chain of tasks round the ranks, each after the previous one, released by a trigger.
  if (me == 0) {
    hops = 0;
    const rill::user_event start = rill::user_event::create();
    rill::event prev = start;
    for (int i = 0; i < chain; ++i)
      prev = rill::proc(i % n).spawn(rill::after(prev), [] { hops.fetch_add(1, std::memory_order_relaxed); });
    const rill::event all = rill::merge(prev, rill::proc((me + 1) % n).spawn([] {}));
    start.trigger();
    all.wait();
    check(hops.load() == static_cast<std::uint64_t>(chain), "event chain");
  }

  // Finish: a tree of tasks across the ranks from every rank at once.
  world.barrier().wait();
  if (me == 0) visits = 0;
  world.barrier().wait();
  rill::finish_spmd([&] { visit(depth, fan); });
  world.barrier().wait();
  if (me == 0) check(visits.load() == static_cast<std::uint64_t>(n) * tree_nodes(depth, fan), "finish tree");

  // Futures: an rpc to every rank.
  std::vector<rill::future<int>> answers;
  for (int r = 0; r < n; ++r)
    answers.push_back(rill::rpc(
        r, [](int x) { return x * 3 + rill::rank_me(); }, me));
  for (int r = 0; r < n; ++r) check(answers[static_cast<std::size_t>(r)].get() == me * 3 + r, "rpc");

  // Reservations: every rank increments the shared counter under the reservation.
  for (int i = 0; i < acquires; ++i) {
    res.acquire().wait();
    res.payload<counter>()->value += 1;
    res.release();
  }

  // Global memory: atomics on one cell per rank, delegates on another, feed-forward.
  rill::completion_counter done;
  for (int i = 0; i < updates; ++i) {
    rill::atomics::add(cells + me, std::int64_t{1}, done);
    rill::delegate::call_ff(
        done, cells + n + me, [](std::int64_t& v, std::int64_t by) { v += by; }, std::int64_t{2});
  }
  done.wait();

  // A failure, observed: the run must end with exit code 0 (an unobserved one would make it 3).
  const rill::event failed = rill::proc((me + 1) % n).spawn([] { throw std::runtime_error("soak: on purpose"); });
  bool caught = false;
  try {
    failed.wait();
  } catch (const rill::poisoned_error& e) {
    caught = e.reason().find("on purpose") != std::string::npos;
  }
  check(caught, "poisoned wait");

  world.barrier().wait();
  if (me == 0) {
    res.acquire().wait();
    check(res.payload<counter>()->value == static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(acquires),
          "reservation counter");
    res.release();
    for (int r = 0; r < n; ++r) {
      check(rill::rget(cells + r).get() == updates, "atomics");
      check(rill::rget(cells + n + r).get() == 2 * updates, "delegates");
    }
    rill::delete_array(cells);
  }
  world.barrier().wait();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Rill soak test: mixed workloads of every layer on 4 local ranks with chaos"};
  double seconds = 30;
  std::uint64_t seed = std::random_device{}();
  app.add_option("--seconds", seconds, "time budget (a round that has started finishes)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--seed", seed, "seed of the first round (printed); round k uses seed + k");
  app.allow_extras();
  app.footer("Options --rill:NAME=VALUE go to every round's runtime (--rill:faults=slow=1:5: a slow rank).");
  CLI11_PARSE(app, argc, argv);
  const std::vector<std::string> runtime_options = app.remaining();
  for (const std::string& o : runtime_options) {
    if (!o.starts_with("--rill:")) {
      std::fprintf(stderr, "rill_soak: unknown argument %s (--help lists them)\n", o.c_str());
      return 2;
    }
  }

  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int rounds = 0;
  do {
    const std::uint64_t s = seed + static_cast<std::uint64_t>(rounds);
    const std::uint64_t chaos = s / 2 % 97 + 1;
    const int workers = 1 + static_cast<int>(s % 2);
    std::printf("soak round %d: --seed %llu (chaos %llu, %d worker(s) per rank)\n", rounds,
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(chaos), workers);
    std::fflush(stdout);
    std::vector<std::string> words{"rill_soak", "--rill:transport=local", "--rill:ranks=" + std::to_string(ranks),
                                   "--rill:chaos=" + std::to_string(chaos),
                                   "--rill:workers=" + std::to_string(workers)};
    words.insert(words.end(), runtime_options.begin(), runtime_options.end());
    rill_test::test_argv a(words);
    rill::runtime rt(a.argc, a.argv());
    const int code = rt.run_spmd([s] { return workload(s); });
    if (code != 0) {
      std::fprintf(stderr, "soak: round %d (--seed %llu) ended with exit code %d\n", rounds,
                   static_cast<unsigned long long>(s), code);
      return 1;
    }
    ++rounds;
  } while (std::chrono::steady_clock::now() < until);
  std::printf("soak: %d rounds passed\n", rounds);
  return 0;
}
