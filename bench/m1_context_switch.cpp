// M1 — context switch between user-level threads on one worker (Grappa §2.1: 38 ns).
//
// Rill: the top-level task spawns N tasks; each counts down a latch `ready` and waits on a latch
// `gate`, which suspends it on a fiber of its own. Once all N are waiting the top-level task opens
// the gate, and every task then calls rill::yield() K times. Time from opening the gate to the last
// task done, divided by N*K, is the cost of one switch (the yields of a round robin over N fibers;
// waking the N fibers and ending them is included). The fibers made per round are reported
// (rill::stats), as a check that every task really waited on a fiber of its own.
//
// Peer in the same run: raw Boost.Context (boost::context::fiber), N fibers in the same round
// robin, each resuming the next directly K times (one jump per switch, no scheduler), on stacks
// like Rill's (mmap'd, guard page, reused across rounds).
#include <sys/mman.h>
#include <unistd.h>
#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <new>
#include <vector>

#include "common.hpp"
#include "rill/rill.hpp"

namespace ctx = boost::context;

namespace {

// ---- Rill ----------------------------------------------------------------------------------

// Returns seconds for n fibers x k yields; fibers_made gets the fibers created meanwhile.
double rill_round(long n, long k, std::uint64_t& fibers_made) {
  rill::latch ready(n), gate(1), done(n);
  const std::uint64_t fibers_before = rill::stats().fibers_created;
  for (long i = 0; i < n; ++i) {
    rill::spawn([&ready, &gate, &done, k] {
      ready.count_down();
      gate.wait();
      for (long y = 0; y < k; ++y) rill::yield();
      done.count_down();
    });
  }
  ready.wait();
  const auto t0 = bench::clock::now();
  gate.count_down();
  done.wait();
  const double t = bench::seconds_since(t0);
  fibers_made = rill::stats().fibers_created - fibers_before;
  return t;
}

// ---- raw Boost.Context -----------------------------------------------------------------------

struct ring {
  std::vector<ctx::fiber> slots;  // slots[i]: where to resume fiber i
  ctx::fiber main;
  long n = 0;
  long k = 0;
};
ring g_ring;

// Fiber i passes control to fiber i+1; whoever resumes fiber i next is fiber i-1 (or main, the
// first time fiber 0 runs), whose continuation comes back as resume()'s result.
ctx::fiber ring_body(long i, ctx::fiber&& from) {
  ring& r = g_ring;
  const long prev = (i + r.n - 1) % r.n;
  const long next = (i + 1) % r.n;
  (i == 0 ? r.main : r.slots[static_cast<std::size_t>(prev)]) = std::move(from);
  for (long y = 0; y < r.k; ++y) {
    ctx::fiber back = std::move(r.slots[static_cast<std::size_t>(next)]).resume();
    r.slots[static_cast<std::size_t>(prev)] = std::move(back);
  }
  // Fiber 0 ends first (its K-th yield came back last round); each ending hands on to the next,
  // and the last one returns to main.
  return i == r.n - 1 ? std::move(r.main) : std::move(r.slots[static_cast<std::size_t>(next)]);
}

// Stacks as Rill makes them (mmap, a guard page below each), kept for reuse across rounds as
// Rill's stack pool does, so that neither side pays page faults in the timed part.
class stack_cache {
 public:
  explicit stack_cache(std::size_t bytes) : bytes_(bytes) {}
  ~stack_cache() {
    for (auto& sc : all_) munmap(static_cast<char*>(sc.sp) - sc.size - page(), sc.size + page());
  }
  ctx::stack_context get() {
    if (!free_.empty()) {
      ctx::stack_context sc = free_.back();
      free_.pop_back();
      return sc;
    }
    void* base =
        mmap(nullptr, bytes_ + page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    mprotect(base, page(), PROT_NONE);
    ctx::stack_context sc;
    sc.size = bytes_;
    sc.sp = static_cast<char*>(base) + page() + bytes_;
    all_.push_back(sc);
    return sc;
  }
  void put(ctx::stack_context sc) { free_.push_back(sc); }

 private:
  static std::size_t page() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }
  std::size_t bytes_;
  std::vector<ctx::stack_context> free_, all_;
};

struct cached_allocator {
  stack_cache* cache;
  ctx::stack_context allocate() { return cache->get(); }
  void deallocate(ctx::stack_context& sc) noexcept { cache->put(sc); }
};

double raw_round(long n, long k, stack_cache& stacks) {
  ring& r = g_ring;
  r.n = n;
  r.k = k;
  r.slots.clear();
  r.slots.reserve(static_cast<std::size_t>(n));
  cached_allocator alloc{&stacks};
  for (long i = 0; i < n; ++i) {
    r.slots.emplace_back(std::allocator_arg, alloc, [i](ctx::fiber&& from) { return ring_body(i, std::move(from)); });
  }
  const auto t0 = bench::clock::now();
  ctx::fiber end = std::move(r.slots[0]).resume();
  const double t = bench::seconds_since(t0);
  r.slots.clear();
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);

  CLI::App app{"M1: fiber context switch, Rill vs raw Boost.Context"};
  std::vector<long> fibers{2, 1000, 10000};
  long switches = 20'000'000;
  int reps = 7;
  bool quick = false;
  app.add_option("--fibers", fibers, "fiber counts N");
  app.add_option("--switches", switches, "switches per repetition (N*K), K = switches/N");
  app.add_option("--reps", reps, "repetitions");
  app.add_flag("--quick", quick, "small sizes (a few seconds)");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    switches = std::min(switches, 4'000'000L);
    reps = std::min(reps, 5);
  }

  const int workers = rt.options().workers;
  if (workers != 1)
    bench::progress("M1: warning: {} workers (the experiment is defined for --rill:workers=1)", workers);

  std::vector<bench::result> results;
  for (long n : fibers) {
    bench::result r;
    r.id = "M1";
    r.case_name = fmt::format("{} fibers, {} worker{}", n, workers, workers == 1 ? "" : "s");
    r.metric = "context switch";
    r.unit = "ns/switch";
    r.higher_is_better = false;
    r.peer = "Boost.Context fiber round robin";
    const long k = std::max(1L, switches / n);
    r.extra = {{"ranks", 1}, {"workers", workers}, {"transport", "local"}, {"fibers", n}, {"yields_per_fiber", k}};
    results.push_back(r);
  }

  // Rill phase: one top-level task runs every repetition of every case.
  std::vector<std::uint64_t> fibers_made(results.size(), 0);
  rt.run([&] {
    for (std::size_t c = 0; c < results.size(); ++c) {
      const long n = fibers[c];
      const long k = results[c].extra["yields_per_fiber"].get<long>();
      std::uint64_t made = 0;
      rill_round(n, std::max(1L, k / 10), made);  // warm-up: creates the fibers and stacks
      for (int rep = 0; rep < reps; ++rep) {
        const double t = rill_round(n, k, made);
        fibers_made[c] = std::max(fibers_made[c], made);
        results[c].rill.push_back(t * 1e9 / static_cast<double>(n * k));
        bench::progress("M1 rill  N={:>6} rep {}: {:.2f} ns/switch", n, rep, results[c].rill.back());
      }
    }
  });

  // Peer phase, same process, after the runtime's workers stopped.
  stack_cache stacks(rt.options().stack_bytes);
  for (std::size_t c = 0; c < results.size(); ++c) {
    const long n = fibers[c];
    const long k = results[c].extra["yields_per_fiber"].get<long>();
    raw_round(n, std::max(1L, k / 10), stacks);
    for (int rep = 0; rep < reps; ++rep) {
      const double t = raw_round(n, k, stacks);
      results[c].peer_values.push_back(t * 1e9 / static_cast<double>(n * k));
      bench::progress("M1 boost N={:>6} rep {}: {:.2f} ns/switch", n, rep, results[c].peer_values.back());
    }
  }

  for (std::size_t c = 0; c < results.size(); ++c) {
    // Fibers the worker made in one round: about N less the (up to 64) parked fibers it reuses,
    // so every waiting task had a fiber of its own.
    results[c].extra["rill_fibers_made_per_round"] = fibers_made[c];
    bench::emit(results[c]);
  }
  return 0;
}
