// R4 — histogram reductions (Realm §8.3, Fig. 6a/6b). Run under `mpirun -np 1` or `-np 2`.
//
// Every rank runs T tasks (T = its workers); task t of rank r adds 1 to R buckets chosen by a hash
// of (r, t, i), into a histogram of B buckets of longs held in rank 0's registered memory.
//   dense:  B = 256 Ki, R = 4 Mi per task (quick: R = 1 Mi);  sparse: B = 4 Mi, R = 64 Ki per task.
// Ways measured (reductions per second over all ranks, from the start of the tasks to the last
// reduction's completion):
//   fold instance      each rank folds into a fold instance of its own (system memory, atomic
//                      folds, no lock), then reduce_into the histogram (rill/reduction.hpp)
//   list instance      each rank logs its reductions in a list instance (atomic length, no lock),
//                      then replay_into the histogram: only what was reduced moves
//   single reductions  each reduction one active message to rank 0, applied there (R / 16 each)
// Peers in the same processes: MPI_Accumulate(MPI_SUM) of one long per reduction into a window on
// rank 0 under MPI_Win_lock_all, flushed every 1024 (R / 16 each), and -- the machine's limit for
// one rank -- a plain loop adding into a private std::vector<long> over the same buckets
// (`plain loop`, rank 0, one thread, T x R reductions).
// Every way's histogram is checked: its buckets sum to the reductions made. Realm's reducetest
// did ~8 M reductions/s on this machine kind (shared/anchors.md), printed as `reference`.
// The five ways of the paper also include reductions under a reservation (single read/write and
// a localized instance): not measured here yet.
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
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

rill::instance fresh_histogram(rill::coord_t buckets) {
  auto [h, ready] = rill::instance::create(rill::memory::registered(0), rill::rect<1>{0, buckets - 1},
                                           rill::field_space{}.add(bucket_field, sizeof(long)));
  rill::fill(h, rill::field<long>{bucket_field}, 0L, ready).wait();
  return h;
}

// Reductions per second of the fold-instance way; `checked` gets whether the histogram adds up.
double rill_fold(const shape& s, int tasks, bool& checked) {
  const int n = rill::rank_n();
  const rill::instance hist = fresh_histogram(s.buckets);
  std::vector<rill::instance> parts;
  std::vector<rill::event> ready;
  for (int r = 0; r < n; ++r) {
    auto [p, e] =
        rill::create_fold_instance<add>(rill::memory::system(r), rill::rect<1>{0, s.buckets - 1}, bucket_field);
    parts.push_back(p);
    ready.push_back(e);
  }
  rill::merge(ready).wait();
  const auto t0 = bench::clock::now();
  std::vector<rill::event> done;
  for (int r = 0; r < n; ++r) {
    const rill::event folded = rill::proc(r).spawn(
        [](rill::instance p, int t_count, long per_task, rill::coord_t buckets) {
          rill::finish([&] {
            for (int t = 0; t < t_count; ++t)
              rill::async([=] {
                const rill::reducer<add, 1> fold(p, bucket_field);
                const int me = rill::rank_me();
                for (long i = 0; i < per_task; ++i) fold({bucket_of(me, t, i, buckets)}, 1);
              });
          });
        },
        parts[static_cast<std::size_t>(r)], tasks, s.per_task, s.buckets);
    done.push_back(
        rill::reduce_into<add>(parts[static_cast<std::size_t>(r)], bucket_field, hist, bucket_field, folded));
  }
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
  bench::mpi_peer::init(argc, argv);
  const int me = bench::mpi_peer::world_rank(), ranks = bench::mpi_peer::world_size();
  CLI::App app{"R4: histogram reductions, fold instances and single reductions against MPI_Accumulate"};
  app.allow_extras();
  int reps = 5;
  bool quick = false;
  app.add_option("--reps", reps, "repetitions");
  app.add_flag("--quick", quick, "smaller dense case, fewer repetitions");
  CLI11_PARSE(app, argc, argv);
  if (quick) reps = std::min(reps, 3);
  const std::vector<shape> shapes{{"dense", 256 * 1024, quick ? 1L << 20 : 4L << 20},
                                  {"sparse", 4 * 1024 * 1024, 64 * 1024}};

  struct series {
    std::vector<double> fold, list, single, mpi, plain;
    bool ok = true;
  };
  std::vector<series> out(shapes.size());
  int workers = 1;
  for (int rep = 0; rep < reps; ++rep) {
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      bool ok = true;
      const long few = std::max(1024L, shapes[k].per_task / 16);
      out[k].mpi.push_back(mpi_accumulate(shapes[k], workers, few, ok));
      out[k].ok = out[k].ok && ok;
      if (me == 0) out[k].plain.push_back(plain_loop(shapes[k], workers));
    }
    bench::mpi_peer::sleeping_barrier();
    std::vector<char*> args(argv, argv + argc + 1);
    int args_count = argc;
    rill::runtime rt(args_count, args.data());
    workers = rt.options().workers;
    rt.run([&] {
      for (std::size_t k = 0; k < shapes.size(); ++k) {
        bool ok = true;
        out[k].fold.push_back(rill_fold(shapes[k], workers, ok));
        out[k].ok = out[k].ok && ok;
        out[k].list.push_back(rill_list(shapes[k], workers, ok));
        out[k].ok = out[k].ok && ok;
        out[k].single.push_back(rill_single(shapes[k], workers, std::max(1024L, shapes[k].per_task / 16), ok));
        out[k].ok = out[k].ok && ok;
        bench::progress("R4 {} rep {}: fold {:.1f} M/s, list {:.1f} M/s, single {:.2f} M/s", shapes[k].name, rep,
                        out[k].fold.back() / 1e6, out[k].list.back() / 1e6, out[k].single.back() / 1e6);
      }
    });
    bench::mpi_peer::sleeping_barrier();
  }
  if (me == 0) {
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const nlohmann::json extra = {{"ranks", ranks},
                                    {"workers", workers},
                                    {"buckets", shapes[k].buckets},
                                    {"reductions_per_task", shapes[k].per_task},
                                    {"histogram_checked", out[k].ok},
                                    {"reference", "Realm reducetest here: ~8 M reductions/s (shared/anchors.md)"}};
      const std::string where = ", " + std::to_string(ranks) + " rank(s)";
      bench::result fold{"R4",        shapes[k].name + " fold instance" + where, "reduction rate", "reductions/s", true,
                         out[k].fold, "MPI_Accumulate, one per reduction",       out[k].mpi};
      fold.extra = extra;
      bench::emit(fold);
      bench::result list{"R4",        shapes[k].name + " list instance" + where, "reduction rate", "reductions/s", true,
                         out[k].list, "MPI_Accumulate, one per reduction",       out[k].mpi};
      list.extra = extra;
      bench::emit(list);
      bench::result single{
          "R4",          shapes[k].name + " single reductions" + where, "reduction rate", "reductions/s", true,
          out[k].single, "MPI_Accumulate, one per reduction",           out[k].mpi};
      single.extra = extra;
      bench::emit(single);
      if (ranks == 1) {
        bench::result limit{"R4",
                            shapes[k].name + " fold instance against a plain loop" + where,
                            "reduction rate",
                            "reductions/s",
                            true,
                            out[k].fold,
                            "plain loop into a std::vector, one thread",
                            out[k].plain};
        limit.extra = extra;
        bench::emit(limit);
      }
    }
  }
  MPI_Finalize();
  return 0;
}
