// G3: GUPS (HPCC RandomAccess) through Rill's global memory: every rank owns 2^k words of a table
// (word i of the whole table starts as i), and each rank XORs 4 x (its share) pseudo-random values
// into the words their low bits name, wherever those live. The table is a rill::global_array;
// Rill updates it with remote atomics (rill::atomics::bit_xor, feed-forward with a
// completion_counter) and with delegates (rill::delegate::call_ff with a plain XOR), and, to show
// the cost of resolving an index, with atomics on per-rank global pointers. Verification, HPCC style: the same updates
// again must bring every word back to its start; `errors` counts the words that did not (HPCC allows 1%).
//
// Peers: under mpirun, MPI RMA in processes of its own at MPI_THREAD_SINGLE, seconds before Rill
// (peer_apart.hpp; bench/run G3 runs both): a window from MPI_Win_allocate, MPI_Accumulate with MPI_BXOR under
// MPI_Win_lock_all, flushed every 1024 updates); on the local transport, plain threads with std::atomic_ref XOR on one
// table, one per Rill rank, taking turns with Rill's repetitions: the machine's random-update limit, which Rill's
// ranks-as-threads can approach.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "gups_stream.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"

namespace {

struct shape {
  int log_per_rank;  // words per rank = 2^log_per_rank
  int ranks;
  std::uint64_t updates;  // per rank
  std::uint64_t per_rank() const { return std::uint64_t{1} << log_per_rank; }
  std::uint64_t words() const { return per_rank() * static_cast<std::uint64_t>(ranks); }
};

// Runs fn(word, value) for each of rank r's updates (word: the index in the whole table).
template <class F>
void for_each_update(const shape& s, int r, F&& fn) {
  std::uint64_t state = bench::gups_start(r);
  bench::gups_updates(state, s.updates, s.words(), fn);
}

// ---- Rill -----------------------------------------------------------------------------------

// The forms: atomics and delegates on a global array (rill::dist::blocked, so rank r holds words
// r * 2^k ... (r + 1) * 2^k - 1, as in the peers), and atomics through per-rank global pointers
// (rank, offset: no index to resolve), which shows what resolving an index costs.
enum class form { atomic, delegate, atomic_pointers };
constexpr form forms[] = {form::atomic, form::delegate, form::atomic_pointers};
const char* name_of(form f) {
  return f == form::atomic ? "atomic xor" : f == form::delegate ? "delegate xor" : "atomic xor, per-rank pointers";
}

struct tables {
  rill::global_array<std::uint64_t> array;
  std::vector<rill::global_ptr<std::uint64_t>> by_rank;
};

// Word i of both tables back at i: the calling rank's words that are not.
std::uint64_t misplaced_here(const shape& s, const tables& t) {
  const int me = rill::rank_me();
  std::atomic<std::uint64_t> bad{0};
  t.array.for_each_here([&](std::uint64_t i, const std::uint64_t& w) {
    if (w != i) bad.fetch_add(1, std::memory_order_relaxed);
  });
  const std::uint64_t* mine = t.by_rank[static_cast<std::size_t>(me)].local(s.per_rank());
  for (std::uint64_t i = 0; i < s.per_rank(); ++i) bad += mine[i] != static_cast<std::uint64_t>(me) * s.per_rank() + i;
  return bad.load();
}

// One timed pass (seconds on rank 0) and, after it, the same updates again (untimed) so the table
// is back at its start; returns the words that are not.
double rill_pass(const shape& s, form f, const tables& t, std::uint64_t& errors) {
  const auto world = rill::team::world();
  const int me = rill::rank_me();
  const std::uint64_t low = s.per_rank() - 1;
  const auto run = [&] {
    rill::completion_counter done;
    if (f == form::atomic)
      for_each_update(s, me,
                      [&](std::uint64_t idx, std::uint64_t v) { rill::atomics::bit_xor(t.array[idx], v, done); });
    else if (f == form::delegate)
      for_each_update(s, me, [&](std::uint64_t idx, std::uint64_t v) {
        rill::delegate::call_ff(
            done, t.array[idx], [](std::uint64_t& w, std::uint64_t x) { w ^= x; }, v);
      });
    else
      for_each_update(s, me, [&](std::uint64_t idx, std::uint64_t v) {
        rill::atomics::bit_xor(t.by_rank[idx >> s.log_per_rank] + static_cast<std::ptrdiff_t>(idx & low), v, done);
      });
    done.wait();
  };
  world.barrier().wait();
  const auto t0 = bench::clock::now();
  run();
  world.barrier().wait();
  const double seconds = bench::seconds_since(t0);
  run();
  world.barrier().wait();
  errors = world.allreduce(misplaced_here(s, t), rill::reduce::sum<std::uint64_t>{}).get();
  return seconds;
}

// Rill's repetitions, each form in turn within one, in one runtime; rank 0 keeps the rates.
struct rill_runs {
  std::vector<double> rates[std::size(forms)];
  std::uint64_t errors[std::size(forms)] = {};
  int workers = 0;
  int ranks = 0;
  bool rank0 = false;
};

// `args`: the command line, which each runtime consumes its --rill:* flags from.
void run_rill(std::vector<std::string> args, int log_words, int reps, rill_runs& out) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  rill::runtime rt(argc, argv.data());
  out.workers = rt.options().workers;
  rt.run_spmd([&] {
    const int n = rill::rank_n();
    const shape s{log_words, n, std::uint64_t{4} << log_words};
    tables t;
    if (rill::rank_me() == 0) t.array = rill::global_alloc<std::uint64_t>(s.words(), rill::dist::blocked);
    t.array = rill::team::world().broadcast(t.array, 0).get();
    t.array.for_each_here([](std::uint64_t i, std::uint64_t& w) { w = i; });
    rill::global_ptr<std::uint64_t> mine = rill::new_array<std::uint64_t>(s.per_rank());
    std::uint64_t* w = mine.local(s.per_rank());
    for (std::uint64_t i = 0; i < s.per_rank(); ++i)
      w[i] = static_cast<std::uint64_t>(rill::rank_me()) * s.per_rank() + i;
    t.by_rank = rill::team::world().allgather(mine).get();
    // Forms take turns within each repetition, so a noisy spell of the machine hits them alike.
    for (int r = 0; r < reps; ++r)
      for (form f : forms) {
        std::uint64_t e = 0;
        const double seconds = rill_pass(s, f, t, e);
        if (rill::rank_me() == 0) {
          const auto i = static_cast<std::size_t>(f);
          out.rates[i].push_back(static_cast<double>(s.updates) * n / seconds);
          out.errors[i] += e;
          bench::progress("G3 rill {} rep {}: {:.3g} updates/s ({} errors)", name_of(f), out.rates[i].size() - 1,
                          out.rates[i].back(), e);
        }
      }
    rill::team::world().barrier().wait();
    rill::delete_array(mine);
    if (rill::rank_me() == 0) {
      rill::global_free(t.array);
      out.rank0 = true;
      out.ranks = n;
    }
  });
}

// ---- MPI RMA peer ---------------------------------------------------------------------------

double mpi_pass(const shape& s, std::uint64_t& errors) {
  const int me = bench::mpi_peer::world_rank();
  std::uint64_t* table = nullptr;
  MPI_Win win;
  MPI_Win_allocate(static_cast<MPI_Aint>(s.per_rank() * sizeof(std::uint64_t)), sizeof(std::uint64_t), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &table, &win);
  for (std::uint64_t i = 0; i < s.per_rank(); ++i) table[i] = static_cast<std::uint64_t>(me) * s.per_rank() + i;
  MPI_Win_lock_all(0, win);
  constexpr std::size_t batch = 1024;  // origin values stay untouched until the flush completes them
  std::vector<std::uint64_t> values(batch);
  const auto run = [&] {
    std::size_t n = 0;
    const std::uint64_t low = s.per_rank() - 1;
    for_each_update(s, me, [&](std::uint64_t idx, std::uint64_t v) {
      values[n] = v;
      MPI_Accumulate(&values[n], 1, MPI_UINT64_T, static_cast<int>(idx >> s.log_per_rank),
                     static_cast<MPI_Aint>(idx & low), 1, MPI_UINT64_T, MPI_BXOR, win);
      if (++n == batch) {
        MPI_Win_flush_all(win);
        n = 0;
      }
    });
    MPI_Win_flush_all(win);
  };
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = bench::clock::now();
  run();
  MPI_Barrier(MPI_COMM_WORLD);
  const double t = bench::seconds_since(t0);
  run();
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_sync(win);
  std::uint64_t bad = 0;
  for (std::uint64_t i = 0; i < s.per_rank(); ++i) bad += table[i] != static_cast<std::uint64_t>(me) * s.per_rank() + i;
  MPI_Win_unlock_all(win);
  MPI_Allreduce(&bad, &errors, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Win_free(&win);
  return t;
}

// ---- threads peer (local transport) ----------------------------------------------------------

double threads_pass(const shape& s, std::uint64_t& errors) {
  std::vector<std::uint64_t> table(s.words());
  for (std::uint64_t i = 0; i < s.words(); ++i) table[i] = i;
  const auto run = [&] {
    std::vector<std::thread> threads;
    for (int r = 0; r < s.ranks; ++r)
      threads.emplace_back([&, r] {
        for_each_update(s, r, [&](std::uint64_t idx, std::uint64_t v) {
          std::atomic_ref<std::uint64_t>(table[idx]).fetch_xor(v, std::memory_order_relaxed);
        });
      });
    for (auto& t : threads) t.join();
  };
  const auto t0 = bench::clock::now();
  run();
  const double t = bench::seconds_since(t0);
  run();
  errors = 0;
  for (std::uint64_t i = 0; i < s.words(); ++i) errors += table[i] != i;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  if (mpi) bench::peer_apart::init_mpi(argc, argv);
  CLI::App app{"G3: GUPS with remote atomics and delegates, against MPI RMA (mpirun) or plain threads (local)"};
  app.allow_extras();  // --rill:* flags are for the runtime
  int reps = 5;
  int log_words = 20;
  bool quick = false;
  app.add_option("--reps", reps, "repetitions")->check(CLI::Range(1, 100));
  app.add_option("--log-words", log_words, "log2 of the table words per rank")->check(CLI::Range(10, 26));
  app.add_flag("--quick", quick, "2^18 words per rank, 3 repetitions");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files);
  CLI11_PARSE(app, argc, argv);
  bench::peer_apart::require_mpirun(peer_files, mpi, "rill_bench_g3");
  if (quick) {
    log_words = std::min(log_words, 18);
    reps = std::min(reps, 3);
  }

  std::vector<double> peer;
  std::uint64_t peer_errors = 0;
  int ranks = mpi ? bench::mpi_peer::world_size() : 0;
  const char* const program = "rill_bench_g3";
  const nlohmann::json peer_config = {{"ranks", ranks}, {"log_words", log_words}, {"reps", reps}};
  if (!peer_files.only.empty()) {
    const shape s{log_words, ranks, std::uint64_t{4} << log_words};
    for (int r = 0; r < reps; ++r) {
      std::uint64_t e = 0;
      peer.push_back(static_cast<double>(s.updates) * ranks / mpi_pass(s, e));
      peer_errors += e;
      if (bench::mpi_peer::world_rank() == 0) bench::progress("G3 mpi rma rep {}: {:.3g} updates/s", r, peer.back());
    }
    bench::peer_apart::write(peer_files.only, program, peer_config,
                             {{"updates_per_second", peer}, {"errors", peer_errors}});
    if (peer_errors != 0) std::fprintf(stderr, "G3: the MPI peer lost %llu updates\n", (unsigned long long)peer_errors);
    MPI_Finalize();
    return peer_errors == 0 ? 0 : 1;
  }
  if (!peer_files.results.empty())
    peer = bench::peer_apart::read_or_exit(peer_files.results, program, peer_config, [&](const nlohmann::json& in) {
      peer_errors = in.at("errors").get<std::uint64_t>();  // words the peer's updates left wrong
      return bench::peer_apart::series(in, "updates_per_second");
    });
  else if (mpi)
    bench::peer_apart::note_no_peer("G3");

  const std::vector<std::string> args(argv, argv + argc);
  rill_runs runs;
  std::string peer_name = "MPI RMA (MPI_Accumulate BXOR, flush per 1024), processes of its own at MPI_THREAD_SINGLE";
  if (mpi) {
    run_rill(args, log_words, reps, runs);
  } else {
    // The peer and Rill take turns, a runtime per repetition, so that a noisy spell of this shared
    // machine hits both; the runtime is gone while the peer's threads run.
    for (int r = 0; r < reps; ++r) {
      run_rill(args, log_words, 1, runs);
      const shape s{log_words, runs.ranks, std::uint64_t{4} << log_words};
      std::uint64_t e = 0;
      peer.push_back(static_cast<double>(s.updates) * runs.ranks / threads_pass(s, e));
      peer_errors += e;
      bench::progress("G3 threads rep {}: {:.3g} updates/s", r, peer.back());
    }
    peer_name = fmt::format("{} threads, std::atomic_ref XOR on one table", runs.ranks);
  }
  const int workers = runs.workers;
  ranks = runs.ranks;
  auto& rates = runs.rates;
  auto& errors = runs.errors;

  if (runs.rank0) {
    for (form f : forms) {
      const auto i = static_cast<std::size_t>(f);
      bench::result r;
      r.id = "G3";
      r.case_name =
          fmt::format("2^{} words per rank, {} {} {}, {} worker{}, {}", log_words, ranks, ranks == 1 ? "rank" : "ranks",
                      mpi ? "mpi" : "local", workers, workers == 1 ? "" : "s", name_of(f));
      r.metric = "random updates";
      r.unit = "updates/s";
      r.higher_is_better = true;
      r.rill = rates[i];
      r.peer = peer_name;
      r.peer_values = peer;
      r.extra = {{"ranks", ranks},
                 {"workers", workers},
                 {"transport", mpi ? "mpi" : "local"},
                 {"log_words_per_rank", log_words},
                 {"updates_per_rank", std::uint64_t{4} << log_words},
                 {"errors", errors[i]},
                 {"peer_errors", peer_errors}};
      bench::emit(r);
    }
  }
  if (mpi) MPI_Finalize();
  return std::all_of(std::begin(errors), std::end(errors), [](std::uint64_t e) { return e == 0; }) && peer_errors == 0
             ? 0
             : 1;
}
