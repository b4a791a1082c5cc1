// R4 — histogram reductions (Realm §8.3, Fig. 6a/6b). Run under `mpirun -np 1` or `-np 2`.
//
// Every rank runs T tasks (T = its workers); task t of rank r adds 1 to R buckets chosen by a hash
// of (r, t, i), into a histogram of B buckets of longs held in rank 0's registered memory.
//   dense:  B = 256 Ki, R = 4 Mi per task (quick: R = 1 Mi);  sparse: B = 4 Mi, R = 64 Ki per task.
// Ways measured (reductions per second over all ranks, from the start of the tasks to the last
// reduction's completion):
//   fold instance      each rank folds into a fold instance of its own (system memory, atomic
//                      folds, no lock), then reduce_into the histogram (rill/reduction.hpp)
//   ... per task       each task folds into an instance of its own with plain adds (exclusive);
//                      a rank's instances are folded together (fold_into), then reduced as above:
//                      per-worker pieces against atomics, reported against the shared instance
//   list instance      each rank logs its reductions in a list instance (atomic length, no lock),
//                      then replay_into the histogram: only what was reduced moves
//   single reductions  each reduction one active message to rank 0, applied there (R / 16 each)
//   single read/write  each task acquires a reservation on the histogram, then reads and writes
//                      back one bucket per reduction (rget/rput: loads and stores where rank 0's
//                      segment is mapped, messages otherwise), then releases it (R / 16 each)
//   localized instance each task, deferred end to end: acquire the reservation, copy the
//                      histogram into an instance in its own system memory, reduce there with plain
//                      adds, copy it back, release -- serial across tasks and ranks
// Peers, in processes of their own at MPI_THREAD_SINGLE that take turns with Rill's repetition by
// repetition (peer_apart.hpp; bench/run R4 starts both): MPI_Accumulate(MPI_SUM) of one long per
// reduction into a window on rank 0 under MPI_Win_lock_all, flushed every 1024 (R / 16 each, T
// from --rill:workers), and -- the machine's limit for one rank -- a plain loop adding into a
// private std::vector<long> over the same buckets (`plain loop`, rank 0, one thread, T x R
// reductions).
// Every way's histogram is checked: its buckets sum to the reductions made. Realm's reducetest
// did ~8 M reductions/s on this machine kind (shared/anchors.md), printed as `reference`.
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"

namespace {

using add = rill::reduce::sum<long>;
constexpr rill::field_id bucket_field = 1;

struct shape {
  std::string name;
  rill::coord_t buckets;
  long per_task;
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
rill::coord_t bucket_of(int rank, int task, long i, rill::coord_t buckets) {
  return static_cast<rill::coord_t>(mix((static_cast<std::uint64_t>(rank) << 48) ^
                                        (static_cast<std::uint64_t>(task) << 40) ^ static_cast<std::uint64_t>(i)) %
                                    static_cast<std::uint64_t>(buckets));
}

long sum_of(rill::instance hist, rill::coord_t buckets) {
  return rill::rpc(
             0,
             [](rill::instance h, rill::coord_t n) {
               rill::accessor<long, 1> a(h, bucket_field);
               long s = 0;
               for (rill::coord_t b = 0; b < n; ++b) s += a[{b}];
               return s;
             },
             hist, buckets)
      .get();
}

// Sends the spawns just issued to other ranks now: this rank's worker is about to run its own
// long task, and buffered messages leave only at its next progress point (docs/scheduler.md).
void issued() { rill::am::flush(); }

rill::instance fresh_histogram(rill::coord_t buckets) {
  auto [h, ready] = rill::instance::create(rill::memory::registered(0), rill::rect<1>{0, buckets - 1},
                                           rill::field_space{}.add(bucket_field, sizeof(long)));
  rill::fill(h, rill::field<long>{bucket_field}, 0L, ready).wait();
  return h;
}

// Reductions per second of the fold-instance way; `checked` gets whether the histogram adds up.
// Shared: the tasks of a rank fold into one instance with atomic adds. Per task: each task folds
// into an instance of its own with plain adds (exclusive), and the rank's instances are folded
// into its first (fold_into) before that one is reduced into the histogram.
double rill_fold(const shape& s, int tasks, bool per_task_pieces, bool& checked) {
  const int n = rill::rank_n();
  const int pieces = per_task_pieces ? tasks : 1;
  const rill::instance hist = fresh_histogram(s.buckets);
  std::vector<rill::instance> parts;  // rank r's pieces at r * pieces ...
  std::vector<rill::event> ready;
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < pieces; ++k) {
      auto [p, e] =
          rill::create_fold_instance<add>(rill::memory::system(r), rill::rect<1>{0, s.buckets - 1}, bucket_field);
      parts.push_back(p);
      ready.push_back(e);
    }
  rill::merge(ready).wait();
  const auto t0 = bench::clock::now();
  std::vector<rill::event> done;
  for (int r = 0; r < n; ++r) {
    const auto first = parts.begin() + static_cast<std::ptrdiff_t>(r) * pieces;
    const std::vector<rill::instance> mine(first, first + pieces);
    const rill::event folded = rill::proc(r).spawn(
        [](std::vector<rill::instance> p, int t_count, long per_task, rill::coord_t buckets) {
          rill::finish([&] {
            for (int t = 0; t < t_count; ++t)
              rill::async([=] {
                const int me = rill::rank_me();
                if (p.size() == 1) {
                  const rill::reducer<add, 1> fold(p[0], bucket_field);
                  for (long i = 0; i < per_task; ++i) fold({bucket_of(me, t, i, buckets)}, 1);
                } else {
                  const rill::reducer<add, 1, true> fold(p[static_cast<std::size_t>(t)], bucket_field);
                  for (long i = 0; i < per_task; ++i) fold({bucket_of(me, t, i, buckets)}, 1);
                }
              });
          });
        },
        mine, tasks, s.per_task, s.buckets);
    std::vector<rill::event> gathered{folded};
    for (int k = 1; k < pieces; ++k)
      gathered.push_back(
          rill::fold_into<add>(mine[static_cast<std::size_t>(k)], bucket_field, mine[0], bucket_field, folded));
    done.push_back(rill::reduce_into<add>(mine[0], bucket_field, hist, bucket_field, rill::merge(gathered)));
  }
  issued();
  rill::merge(done).wait();
  const double rate = static_cast<double>(n) * tasks * static_cast<double>(s.per_task) / bench::seconds_since(t0);
  checked = sum_of(hist, s.buckets) == static_cast<long>(n) * tasks * s.per_task;
  for (rill::instance p : parts) p.destroy().wait();
  hist.destroy().wait();
  return rate;
}

// Reductions per second of the list-instance way.
double rill_list(const shape& s, int tasks, bool& checked) {
  const int n = rill::rank_n();
  const rill::instance hist = fresh_histogram(s.buckets);
  std::vector<rill::instance> logs;
  std::vector<rill::event> ready;
  const auto capacity = static_cast<std::size_t>(tasks) * static_cast<std::size_t>(s.per_task);
  for (int r = 0; r < n; ++r) {
    auto [l, e] = rill::create_list_instance<add, 1>(rill::memory::system(r), capacity, bucket_field);
    logs.push_back(l);
    ready.push_back(e);
  }
  rill::merge(ready).wait();
  const auto t0 = bench::clock::now();
  std::vector<rill::event> done;
  for (int r = 0; r < n; ++r) {
    const rill::instance log = logs[static_cast<std::size_t>(r)];
    const rill::event logged = rill::proc(r).spawn(
        [](rill::instance l, int t_count, long per_task, rill::coord_t buckets) {
          rill::finish([&] {
            for (int t = 0; t < t_count; ++t)
              rill::async([=] {
                const rill::list_reducer<add, 1> log_it(l, bucket_field);
                const int me = rill::rank_me();
                for (long i = 0; i < per_task; ++i) log_it({bucket_of(me, t, i, buckets)}, 1);
              });
          });
        },
        log, tasks, s.per_task, s.buckets);
    done.push_back(rill::replay_into<add, 1>(log, bucket_field, hist, bucket_field, logged));
  }
  issued();
  rill::merge(done).wait();
  const double rate = static_cast<double>(n) * tasks * static_cast<double>(s.per_task) / bench::seconds_since(t0);
  checked = sum_of(hist, s.buckets) == static_cast<long>(n) * tasks * s.per_task;
  for (rill::instance l : logs) l.destroy().wait();
  hist.destroy().wait();
  return rate;
}

rill::accessor<long, 1>* g_single = nullptr;  // rank 0's histogram, for the single-reduction handlers
rill::latch* g_applied = nullptr;             // on rank 0: counts the single reductions applied

double rill_single(const shape& s, int tasks, long per_task, bool& checked) {
  const int n = rill::rank_n();
  const rill::instance hist = fresh_histogram(s.buckets);
  rill::accessor<long, 1> acc(hist, bucket_field);
  rill::latch applied(static_cast<std::int64_t>(n) * tasks * per_task);
  g_single = &acc;
  g_applied = &applied;
  const auto t0 = bench::clock::now();
  for (int r = 0; r < n; ++r)
    rill::proc(r).spawn(
        [](int t_count, long count, rill::coord_t buckets) {
          rill::finish([&] {
            for (int t = 0; t < t_count; ++t)
              rill::async([=] {
                const int me = rill::rank_me();
                for (long i = 0; i < count; ++i)
                  rill::am::send(
                      0,
                      [](rill::coord_t b) {
                        add::apply<false>((*g_single)[{b}], 1L);
                        g_applied->count_down();
                      },
                      bucket_of(me, t, i, buckets));
                rill::am::flush();
              });
          });
        },
        tasks, per_task, s.buckets);
  applied.wait();
  const double rate = static_cast<double>(n) * tasks * static_cast<double>(per_task) / bench::seconds_since(t0);
  checked = sum_of(hist, s.buckets) == static_cast<long>(n) * tasks * per_task;
  g_single = nullptr;
  g_applied = nullptr;
  hist.destroy().wait();
  return rate;
}

// The histogram's first bucket as a global pointer: rank 0's registered memory is in its segment.
rill::global_ptr<long> histogram_base(rill::instance hist) {
  return rill::rpc(
             0,
             [](rill::instance h) { return rill::global_ptr<long>(0, &rill::accessor<long, 1>(h, bucket_field)[{0}]); },
             hist)
      .get();
}

// Reductions per second of the single read/write way: a read and a write of one bucket per
// reduction, under a reservation each task holds for all of its reductions.
double rill_read_write(const shape& s, int tasks, long per_task, bool& checked) {
  const int n = rill::rank_n();
  const rill::instance hist = fresh_histogram(s.buckets);
  const rill::global_ptr<long> base = histogram_base(hist);
  const rill::reservation lock = rill::reservation::create();
  const auto t0 = bench::clock::now();
  std::vector<rill::event> done;
  for (int r = 0; r < n; ++r)
    done.push_back(rill::proc(r).spawn(
        [](rill::reservation res, rill::global_ptr<long> h, int t_count, long count, rill::coord_t buckets) {
          rill::finish([&] {
            for (int t = 0; t < t_count; ++t)
              rill::async([=] {
                res.acquire().wait();
                const int me = rill::rank_me();
                for (long i = 0; i < count; ++i) {
                  const rill::global_ptr<long> b = h + bucket_of(me, t, i, buckets);
                  rill::rput(rill::rget(b).get() + 1, b).wait();
                }
                res.release();
              });
          });
        },
        lock, base, tasks, per_task, s.buckets));
  issued();
  rill::merge(done).wait();
  const double rate = static_cast<double>(n) * tasks * static_cast<double>(per_task) / bench::seconds_since(t0);
  checked = sum_of(hist, s.buckets) == static_cast<long>(n) * tasks * per_task;
  lock.destroy();
  hist.destroy().wait();
  return rate;
}

// Reductions per second of the localized-instance way: each task's chain of acquire, copy in,
// reductions, copy out and release is issued at once, as events.
double rill_localized(const shape& s, int tasks, bool& checked) {
  const int n = rill::rank_n();
  const rill::instance hist = fresh_histogram(s.buckets);
  const rill::reservation lock = rill::reservation::create();
  const auto t0 = bench::clock::now();
  std::vector<rill::event> done;
  for (int r = 0; r < n; ++r)
    done.push_back(rill::proc(r).spawn(
        [](rill::reservation res, rill::instance h, int t_count, long per_task, rill::coord_t buckets) {
          const int me = rill::rank_me();
          std::vector<rill::event> chains;
          for (int t = 0; t < t_count; ++t) {
            const rill::event granted = res.acquire();
            auto [local, ready] = rill::instance::create(rill::memory::system(me), rill::rect<1>{0, buckets - 1},
                                                         rill::field_space{}.add(bucket_field, sizeof(long)));
            const rill::event in = rill::copy(h, local, {bucket_field}, rill::merge(granted, ready));
            const rill::event reduced = rill::proc::here().spawn(
                rill::after(in),
                [](rill::instance l, int task, long count, rill::coord_t b_count) {
                  const rill::accessor<long, 1> a(l, bucket_field);
                  const int rank = rill::rank_me();
                  for (long i = 0; i < count; ++i) ++a[{bucket_of(rank, task, i, b_count)}];
                },
                local, t, per_task, buckets);
            const rill::event out = rill::copy(local, h, {bucket_field}, reduced);
            res.release(out);
            chains.push_back(local.destroy(out));
          }
          rill::merge(chains).wait();
        },
        lock, hist, tasks, s.per_task, s.buckets));
  issued();
  rill::merge(done).wait();
  const double rate = static_cast<double>(n) * tasks * static_cast<double>(s.per_task) / bench::seconds_since(t0);
  checked = sum_of(hist, s.buckets) == static_cast<long>(n) * tasks * s.per_task;
  lock.destroy();
  hist.destroy().wait();
  return rate;
}

double mpi_accumulate(const shape& s, int tasks, long per_task, bool& checked) {
  const int me = bench::mpi_peer::world_rank(), n = bench::mpi_peer::world_size();
  long* base = nullptr;
  MPI_Win win;
  const MPI_Aint bytes = me == 0 ? static_cast<MPI_Aint>(s.buckets) * static_cast<MPI_Aint>(sizeof(long)) : 0;
  MPI_Win_allocate(bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  if (me == 0) std::fill(base, base + s.buckets, 0L);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = bench::clock::now();
  MPI_Win_lock_all(0, win);
  const long one = 1;
  for (int t = 0; t < tasks; ++t)
    for (long i = 0; i < per_task; ++i) {
      MPI_Accumulate(&one, 1, MPI_LONG, 0, static_cast<MPI_Aint>(bucket_of(me, t, i, s.buckets)), 1, MPI_LONG, MPI_SUM,
                     win);
      if (i % 1024 == 1023) MPI_Win_flush(0, win);
    }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  const double rate = static_cast<double>(n) * tasks * static_cast<double>(per_task) / bench::seconds_since(t0);
  long total = 0;
  if (me == 0)
    for (rill::coord_t b = 0; b < s.buckets; ++b) total += base[b];
  checked = me != 0 || total == static_cast<long>(n) * tasks * per_task;
  MPI_Win_free(&win);
  return rate;
}

double plain_loop(const shape& s, int tasks) {
  std::vector<long> hist(static_cast<std::size_t>(s.buckets), 0);
  const auto t0 = bench::clock::now();
  for (int t = 0; t < tasks; ++t)
    for (long i = 0; i < s.per_task; ++i) ++hist[static_cast<std::size_t>(bucket_of(0, t, i, s.buckets))];
  const double rate = static_cast<double>(tasks) * static_cast<double>(s.per_task) / bench::seconds_since(t0);
  bench::keep(hist[0]);
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  bench::peer_apart::init_mpi(argc, argv);
  const int me = bench::mpi_peer::world_rank(), ranks = bench::mpi_peer::world_size();
  CLI::App app{"R4: histogram reductions five ways against MPI_Accumulate"};
  app.allow_extras();
  int reps = 5;
  bool quick = false;
  app.add_option("--reps", reps, "repetitions");
  app.add_flag("--quick", quick, "smaller dense case, fewer repetitions");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files, true);
  CLI11_PARSE(app, argc, argv);
  if (quick) reps = std::min(reps, 3);
  const std::vector<shape> shapes{{"dense", 256 * 1024, quick ? 1L << 20 : 4L << 20},
                                  {"sparse", 4 * 1024 * 1024, 64 * 1024}};

  struct series {
    std::vector<double> fold, fold_per_task, list, single, read_write, localized, mpi, plain;
    bool ok = true;
  };
  std::vector<series> out(shapes.size());
  int workers = bench::peer_apart::rill_workers(argc, argv, 1);  // the peer's tasks per rank
  int rill_ranks = 1;
  bool local = false;
  const auto peer_repetition = [&](int) {
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      bool ok = true;
      const long few = std::max(1024L, shapes[k].per_task / 16);
      out[k].mpi.push_back(mpi_accumulate(shapes[k], workers, few, ok));
      out[k].ok = out[k].ok && ok;
      if (me == 0) out[k].plain.push_back(plain_loop(shapes[k], workers));
    }
  };
  const auto rill_repetition = [&](int rep) {
    std::vector<char*> args(argv, argv + argc + 1);
    int args_count = argc;
    rill::runtime rt(args_count, args.data());
    workers = rt.options().workers;
    rill_ranks = rt.ranks();
    local = rt.options().transport == rill::transport_kind::local;
    rt.run([&] {
      for (std::size_t k = 0; k < shapes.size(); ++k) {
        bool ok = true;
        out[k].fold.push_back(rill_fold(shapes[k], workers, false, ok));
        out[k].ok = out[k].ok && ok;
        out[k].fold_per_task.push_back(rill_fold(shapes[k], workers, true, ok));
        out[k].ok = out[k].ok && ok;
        out[k].list.push_back(rill_list(shapes[k], workers, ok));
        out[k].ok = out[k].ok && ok;
        const long few = std::max(1024L, shapes[k].per_task / 16);
        out[k].single.push_back(rill_single(shapes[k], workers, few, ok));
        out[k].ok = out[k].ok && ok;
        out[k].read_write.push_back(rill_read_write(shapes[k], workers, few, ok));
        out[k].ok = out[k].ok && ok;
        out[k].localized.push_back(rill_localized(shapes[k], workers, ok));
        out[k].ok = out[k].ok && ok;
        bench::progress(
            "R4 {} rep {}: fold {:.1f} M/s, per task {:.1f} M/s, list {:.1f} M/s, single {:.2f} M/s, read/write "
            "{:.2f} M/s, localized {:.1f} M/s",
            shapes[k].name, rep, out[k].fold.back() / 1e6, out[k].fold_per_task.back() / 1e6, out[k].list.back() / 1e6,
            out[k].single.back() / 1e6, out[k].read_write.back() / 1e6, out[k].localized.back() / 1e6);
      }
    });
  };
  const bench::peer_apart::turns turns(peer_files.turns, "rill_bench_r4", reps);
  using side = bench::peer_apart::turns::side;
  const char* const program = "rill_bench_r4";
  const auto peer_config = [&] {
    return nlohmann::json{{"ranks", ranks}, {"tasks", workers}, {"reps", reps}, {"quick", quick}};
  };
  if (!peer_files.only.empty()) {
    turns.take(side::peer, peer_config(), peer_repetition);
    nlohmann::json results = nlohmann::json::array();
    for (const series& o : out) results.push_back({{"mpi", o.mpi}, {"plain", o.plain}, {"checked", o.ok}});
    turns.hand_over(peer_files.only, program, peer_config(), results);
    MPI_Finalize();
    return std::all_of(out.begin(), out.end(), [](const series& o) { return o.ok; }) ? 0 : 1;
  }
  if (peer_files.results.empty()) bench::peer_apart::note_no_peer("R4");
  turns.take(side::rill, peer_config(), rill_repetition);
  if (!peer_files.results.empty()) {
    turns.collect(peer_files.results, program, peer_config(), [&](const nlohmann::json& in) {
      if (!in.is_array() || in.size() != out.size()) throw std::runtime_error("not one result per shape");
      for (std::size_t k = 0; k < out.size(); ++k) {
        out[k].mpi = in[k].at("mpi").get<std::vector<double>>();
        out[k].plain = in[k].at("plain").get<std::vector<double>>();
        out[k].ok = out[k].ok && in[k].at("checked").get<bool>();
      }
      return 0;
    });
  }
  if (me == 0) {
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const series& o = out[k];
      const nlohmann::json extra = {{"ranks", rill_ranks},
                                    {"transport", local ? "local" : "mpi"},
                                    {"mpi_ranks", ranks},
                                    {"workers", workers},
                                    {"buckets", shapes[k].buckets},
                                    {"reductions_per_task", shapes[k].per_task},
                                    {"histogram_checked", o.ok},
                                    {"reference", "Realm reducetest here: ~8 M reductions/s (shared/anchors.md)"}};
      const std::string where = ", " + std::to_string(rill_ranks) + " rank(s)" +
                                (local && rill_ranks > 1 ? " local" : "") +
                                (workers > 1 ? " x " + std::to_string(workers) + " workers" : "");
      const auto report = [&](const std::string& way, const std::vector<double>& values, const std::string& peer,
                              const std::vector<double>& peer_values) {
        bench::result r{
            "R4",       shapes[k].name + " " + way + where, "reduction rate", "reductions/s", true, values, peer,
            peer_values};
        r.extra = extra;
        bench::emit(r);
      };
      const std::string accumulate = "MPI_Accumulate, one per reduction";
      report("fold instance", o.fold, accumulate, o.mpi);
      report("fold instance per task", o.fold_per_task, "one fold instance per rank, atomic folds", o.fold);
      report("list instance", o.list, accumulate, o.mpi);
      report("single reductions", o.single, accumulate, o.mpi);
      report("single read/write under a reservation", o.read_write, accumulate, o.mpi);
      report("localized instance under a reservation", o.localized, accumulate, o.mpi);
      if (rill_ranks == 1 && workers == 1)
        report("fold instance against a plain loop", o.fold, "plain loop into a std::vector, one thread", o.plain);
    }
  }
  MPI_Finalize();
  return 0;
}
