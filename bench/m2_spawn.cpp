// M2 — task spawn+run cost on one rank (HabaneroUPC++ §5).
//
//   empty: the top-level task spawns T empty tasks (each counts down one rill::latch) and waits on
//          the latch; ns/task = time / T.
//   fib:   fib(30) with a spawn per call: fib(n) spawns fib(n-1) into a child latch, computes
//          fib(n-2) inline, waits; ns per spawned task = time / (spawns = fib(31) - 1).
//   fib with finish: the same with Habanero's constructs: fib(n) is finish { async(fib(n-1));
//          fib(n-2) }, a finish scope per call; the end of finish runs the queued child itself.
//
// The worker count comes from --rill:workers (bench/run runs 1 and 2). Peers in the same process,
// after the Rill phase, with the same thread count: TBB tbb::task_group (tbb::global_control
// max_allowed_parallelism = workers) and, when built with OpenMP, OpenMP tasks.
#include <tbb/global_control.h>
#include <tbb/task_group.h>
#include <CLI/CLI.hpp>

#if RILL_BENCH_OPENMP
#include <omp.h>
#endif

#include <atomic>
#include <cstdint>

#include "common.hpp"
#include "rill/rill.hpp"

namespace {

// ---- Rill ----------------------------------------------------------------------------------

double rill_empty(long tasks) {
  const auto t0 = bench::clock::now();
  rill::latch done(tasks);
  for (long i = 0; i < tasks; ++i) rill::spawn([&done] { done.count_down(); });
  done.wait();
  return bench::seconds_since(t0);
}

long rill_fib(int n) {
  if (n < 2) return n;
  long a = 0;
  rill::latch child(1);
  rill::spawn([&a, &child, n] {
    a = rill_fib(n - 1);
    child.count_down();
  });
  const long b = rill_fib(n - 2);
  child.wait();
  return a + b;
}

long rill_fib_finish(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  rill::finish([&] {
    rill::async([&a, n] { a = rill_fib_finish(n - 1); });
    b = rill_fib_finish(n - 2);
  });
  return a + b;
}

// ---- TBB -----------------------------------------------------------------------------------

double tbb_empty(long tasks) {
  const auto t0 = bench::clock::now();
  tbb::task_group g;
  for (long i = 0; i < tasks; ++i) g.run([] {});
  g.wait();
  return bench::seconds_since(t0);
}

long tbb_fib(int n) {
  if (n < 2) return n;
  long a = 0;
  tbb::task_group g;
  g.run([&a, n] { a = tbb_fib(n - 1); });
  const long b = tbb_fib(n - 2);
  g.wait();
  return a + b;
}

// ---- OpenMP --------------------------------------------------------------------------------

#if RILL_BENCH_OPENMP
double omp_empty(long tasks, int threads) {
  double t = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
  {
    const auto t0 = bench::clock::now();
    for (long i = 0; i < tasks; ++i) {
      // An empty body lets gcc drop the task altogether; this one only keeps it.
#pragma omp task firstprivate(i)
      bench::keep(i);
    }
#pragma omp taskwait
    t = bench::seconds_since(t0);
  }
  return t;
}

long omp_fib(int n) {
  if (n < 2) return n;
  long a = 0;
#pragma omp task shared(a) firstprivate(n)
  a = omp_fib(n - 1);
  const long b = omp_fib(n - 2);
#pragma omp taskwait
  return a + b;
}

double omp_fib_timed(int n, int threads, long& value) {
  double t = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
  {
    const auto t0 = bench::clock::now();
    value = omp_fib(n);
    t = bench::seconds_since(t0);
  }
  return t;
}
#endif

long fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

// Calls of fib(n) with n >= 2, one spawn each: fib(n+1) - 1.
long fib_spawns(int n) { return fib_serial(n + 1) - 1; }

template <class F>
std::vector<double> repeat(int reps, const char* what, F&& once) {
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    v.push_back(once());
    bench::progress("M2 {} rep {}: {:.1f} ns", what, r, v.back());
  }
  return v;
}

nlohmann::json other_peer(const char* name, const std::vector<double>& values, double rill_median) {
  const bench::summary s = bench::summarize(values);
  return {{"peer", name}, {"value", s.median}, {"min", s.min},
          {"max", s.max}, {"runs", s.runs},    {"ratio", bench::oriented_ratio(rill_median, s.median, false)}};
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);

  CLI::App app{"M2: spawn+run of empty tasks and fib(30), Rill vs TBB (and OpenMP)"};
  long tasks = 1'000'000;
  int fib_n = 30;
  int reps = 7;
  bool quick = false;
  bool openmp = true;
  app.add_option("--tasks", tasks, "empty tasks per repetition");
  app.add_option("--fib", fib_n, "n of fib(n)");
  app.add_option("--reps", reps, "repetitions");
  app.add_flag("--quick", quick, "fewer repetitions");
  app.add_flag("!--no-openmp", openmp, "skip the OpenMP peer");
  CLI11_PARSE(app, argc, argv);
  if (quick) reps = std::min(reps, 5);

  const int workers = rt.options().workers;
  const std::string wtext = fmt::format("{} worker{}", workers, workers == 1 ? "" : "s");
  const long spawns = fib_spawns(fib_n);
  const long expected = fib_serial(fib_n);

  bench::result empty;
  empty.id = "M2";
  empty.case_name = fmt::format("empty tasks, {}, 1 rank local", wtext);
  empty.metric = "spawn+run";
  empty.unit = "ns/task";
  empty.peer = "TBB task_group";
  empty.extra = {{"ranks", 1}, {"workers", workers}, {"transport", "local"}, {"tasks", tasks}};

  bench::result fib = empty;
  fib.case_name = fmt::format("fib({}), {}, 1 rank local", fib_n, wtext);
  fib.metric = "spawn+run, fine-grained";
  fib.unit = "ns/spawned task";
  fib.extra = {{"ranks", 1}, {"workers", workers}, {"transport", "local"}, {"fib_n", fib_n}, {"spawns", spawns}};

  bench::result fib_finish = fib;
  fib_finish.case_name = fmt::format("fib({}) with a finish per call, {}, 1 rank local", fib_n, wtext);

  long errors = 0;
  // One repetition of a fib version: ns per spawned task, the result checked.
  auto fib_run = [&](long (*version)(int)) {
    return [&, version] {
      const auto t0 = bench::clock::now();
      const long v = version(fib_n);
      const double t = bench::seconds_since(t0);
      if (v != expected) ++errors;
      return t * 1e9 / static_cast<double>(spawns);
    };
  };
  rt.run([&] {
    rill_empty(tasks / 10);  // warm-up: task records, deque capacity
    empty.rill = repeat(reps, "rill empty", [&] { return rill_empty(tasks) * 1e9 / static_cast<double>(tasks); });
    fib.rill = repeat(reps, "rill fib", fib_run(rill_fib));
    fib_finish.rill = repeat(reps, "rill fib, finish", fib_run(rill_fib_finish));
  });

  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(workers));
    tbb_empty(tasks / 10);
    empty.peer_values = repeat(reps, "tbb empty", [&] { return tbb_empty(tasks) * 1e9 / static_cast<double>(tasks); });
    fib.peer_values = repeat(reps, "tbb fib", fib_run(tbb_fib));
  }

  const double rill_empty_median = bench::summarize(empty.rill).median;
  const double rill_fib_median = bench::summarize(fib.rill).median;
  const double rill_fib_finish_median = bench::summarize(fib_finish.rill).median;
  empty.extra["other_peers"] = nlohmann::json::array();
  fib.extra["other_peers"] = nlohmann::json::array();
  fib_finish.extra["other_peers"] = nlohmann::json::array();
#if RILL_BENCH_OPENMP
  if (openmp) {
    omp_empty(tasks / 10, workers);
    auto e = repeat(reps, "omp empty", [&] { return omp_empty(tasks, workers) * 1e9 / static_cast<double>(tasks); });
    auto f = repeat(reps, "omp fib", [&] {
      long v = 0;
      const double t = omp_fib_timed(fib_n, workers, v);
      if (v != expected) ++errors;
      return t * 1e9 / static_cast<double>(spawns);
    });
    empty.extra["other_peers"].push_back(other_peer("OpenMP tasks (libgomp)", e, rill_empty_median));
    fib.extra["other_peers"].push_back(other_peer("OpenMP tasks (libgomp)", f, rill_fib_median));
    fib_finish.extra["other_peers"].push_back(other_peer("OpenMP tasks (libgomp)", f, rill_fib_finish_median));
  }
#endif
  fib.extra["errors"] = errors;
  fib_finish.peer_values = fib.peer_values;
  fib_finish.extra["errors"] = errors;
  bench::emit(empty);
  bench::emit(fib);
  bench::emit(fib_finish);
  return errors == 0 ? 0 : 1;
}
