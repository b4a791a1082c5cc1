// H1 — SampleSort of 64-bit keys, weak scaling (HabaneroUPC++ §5, Fig. 11a/12a): N keys per rank.
//
// Each rank: sort its keys locally (Rill: the paper's parallel quicksort, the two sides of each
// partition as rill::async tasks under rill::finish; threshold 2^14 keys), take 64 evenly spaced
// samples, allgather them, pick rank_n - 1 splitters, cut the sorted keys at the splitters,
// exchange the pieces (Rill: alltoall of counts and of where each piece goes, then one rput per
// piece into the receiver's segment; MPI: alltoallv), merge the received sorted runs. The
// received keys must fit in a rank's segment (--rill:segment, 128 MiB by default: about 2^22
// keys per rank). Then the result is verified: every
// rank's keys sorted, each rank's last key <= the next rank's first, and the count and the sum
// of all keys preserved (`errors` counts the failed checks, 0 when all hold).
//
// Under mpirun -np 2: the MPI peer in processes of its own at MPI_THREAD_SINGLE (std::sort,
// MPI_Allgather of samples, MPI_Alltoall of counts, MPI_Alltoallv, std::inplace_merge;
// peer_apart.hpp), then Rill on the mpi transport with the workers given (--rill:workers). On one rank (no mpirun):
// Rill with the workers given, and TBB's parallel_sort of the same keys as the peer.
#include <tbb/global_control.h>
#include <tbb/parallel_sort.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"

namespace {

using key = std::uint64_t;
constexpr int samples_per_rank = 64;
constexpr std::size_t sort_threshold = 1 << 14;

std::vector<key> make_keys(int rank, std::size_t n) {
  std::vector<key> v(n);
  std::uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(rank + 1);
  for (auto& k : v) {  // splitmix64
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    k = z ^ (z >> 31);
  }
  return v;
}

// Rill's local sort, the paper's parallel quicksort: partition around the median of three keys,
// then sort the two sides as tasks; std::sort below the threshold, or when the pivot is the
// smallest key and splits nothing off.
void parallel_sort(key* first, key* last) {
  const std::size_t n = static_cast<std::size_t>(last - first);
  if (n <= sort_threshold) {
    std::sort(first, last);
    return;
  }
  const key a = first[0], b = first[n / 2], c = last[-1];
  const key pivot = std::max(std::min(a, b), std::min(std::max(a, b), c));
  key* mid = std::partition(first, last, [pivot](key k) { return k < pivot; });
  if (mid == first) {
    std::sort(first, last);
    return;
  }
  rill::finish([&] {
    rill::async([=] { parallel_sort(first, mid); });
    parallel_sort(mid, last);
  });
}

std::vector<key> pick_samples(const std::vector<key>& sorted) {
  std::vector<key> s;
  if (sorted.empty()) return s;
  for (int i = 0; i < samples_per_rank; ++i)
    s.push_back(sorted[sorted.size() * static_cast<std::size_t>(i) / samples_per_rank]);
  return s;
}

std::vector<key> pick_splitters(std::vector<key> all, int ranks) {
  std::sort(all.begin(), all.end());
  std::vector<key> sp;
  for (int r = 1; r < ranks; ++r) sp.push_back(all[all.size() * static_cast<std::size_t>(r) / ranks]);
  return sp;
}

// Where each destination's piece of the sorted keys starts (ranks + 1 offsets).
std::vector<std::size_t> cut(const std::vector<key>& sorted, const std::vector<key>& splitters) {
  std::vector<std::size_t> at{0};
  for (key s : splitters)
    at.push_back(static_cast<std::size_t>(std::upper_bound(sorted.begin(), sorted.end(), s) - sorted.begin()));
  at.push_back(sorted.size());
  return at;
}

// Merges consecutive sorted runs [at[i], at[i+1]) of v in place, pairwise.
void merge_runs(key* v, std::vector<std::size_t> at) {
  while (at.size() > 2) {
    std::vector<std::size_t> next{0};
    for (std::size_t i = 0; i + 2 < at.size(); i += 2) {
      std::inplace_merge(v + at[i], v + at[i + 1], v + at[i + 2]);
      next.push_back(at[i + 2]);
    }
    if (at.size() % 2 == 0) next.push_back(at.back());
    at = std::move(next);
  }
}

struct local_check {
  std::uint64_t count = 0, sum = 0, first = 0, last = 0;
  int unsorted = 0;
};

local_check check_of(std::span<const key> v) {
  local_check c;
  c.count = v.size();
  for (key k : v) c.sum += k;
  c.unsorted = std::is_sorted(v.begin(), v.end()) ? 0 : 1;
  if (!v.empty()) {
    c.first = v.front();
    c.last = v.back();
  }
  return c;
}

// Errors from every rank's check (in rank order) against the expected count and sum.
int errors_of(const std::vector<local_check>& all, std::uint64_t count, std::uint64_t sum) {
  int errors = 0;
  std::uint64_t c = 0, s = 0;
  for (std::size_t r = 0; r < all.size(); ++r) {
    errors += all[r].unsorted;
    c += all[r].count;
    s += all[r].sum;
    if (r > 0 && all[r].count && all[r - 1].count && all[r - 1].last > all[r].first) ++errors;
  }
  return errors + (c != count) + (s != sum);
}

// Where one sort's time went on rank 0, in seconds from the start: the local sort ended, the
// exchange (samples, splitters, the pieces, every received piece in one vector) ended, and the
// merge and the closing barrier ended (the total).
struct phases {
  double sort = 0, exchange = 0, total = 0;
};

// The medians of each phase's share over repetitions, as JSON.
nlohmann::json phase_medians(const std::vector<phases>& ps) {
  std::vector<double> sort, exchange, merge;
  for (const phases& p : ps) {
    sort.push_back(p.sort);
    exchange.push_back(p.exchange - p.sort);
    merge.push_back(p.total - p.exchange);
  }
  return {{"sort_s", bench::summarize(sort).median},
          {"exchange_s", bench::summarize(exchange).median},
          {"merge_s", bench::summarize(merge).median}};
}

// One Rill sort on every rank (rank 0's times); errors of the result.
phases rill_sort(std::vector<key> keys, int& errors, std::uint64_t count, std::uint64_t sum) {
  const rill::team w = rill::team::world();
  w.barrier().wait();
  const auto t0 = bench::clock::now();
  parallel_sort(keys.data(), keys.data() + keys.size());
  phases p;
  p.sort = bench::seconds_since(t0);
  auto all_samples = w.allgather(pick_samples(keys)).get();
  std::vector<key> flat;
  for (auto& s : all_samples) flat.insert(flat.end(), s.begin(), s.end());
  const auto at = cut(keys, pick_splitters(std::move(flat), w.rank_n()));
  // The pieces travel one-sided, as a PGAS program would send them: every rank allocates what it
  // will receive in its segment and tells each source where its piece goes; each source puts its
  // piece there straight from its sorted keys (a plain copy into a node neighbour's segment, which
  // the mpi transport maps into this process; one RMA message per piece otherwise).
  const auto n = static_cast<std::size_t>(w.rank_n());
  std::vector<std::uint64_t> send_counts(n);
  for (std::size_t r = 0; r < n; ++r) send_counts[r] = at[r + 1] - at[r];
  const std::vector<std::uint64_t> recv_counts = w.alltoall(send_counts).get();
  std::vector<std::size_t> runs{0};
  for (std::uint64_t c : recv_counts) runs.push_back(runs.back() + c);
  const rill::global_ptr<key> mine = rill::new_array<key>(runs.back());
  std::vector<rill::global_ptr<key>> where(n);
  for (std::size_t r = 0; r < n; ++r) where[r] = mine + static_cast<std::ptrdiff_t>(runs[r]);
  const std::vector<rill::global_ptr<key>> targets = w.alltoall(where).get();
  std::vector<rill::future<void>> puts;
  for (std::size_t r = 0; r < n; ++r)
    if (send_counts[r]) puts.push_back(rill::rput(keys.data() + at[r], targets[r], send_counts[r]));
  for (auto& f : puts) f.wait();
  w.barrier().wait();  // every piece this rank receives has landed
  p.exchange = bench::seconds_since(t0);
  const std::span<key> sorted(mine.local(), runs.back());
  merge_runs(sorted.data(), runs);
  w.barrier().wait();
  p.total = bench::seconds_since(t0);
  errors = errors_of(w.allgather(check_of(sorted)).get(), count, sum);
  w.barrier().wait();  // nobody checks this rank's keys any more
  rill::delete_array(mine);
  return p;
}

// `received` is the peer's receive buffer, kept from one repetition to the next as Rill's global heap
// keeps its memory: a fresh 32 MiB vector costs a page fault per 4 KiB and a zero fill inside the
// exchange.
phases mpi_sort(std::vector<key> keys, std::vector<key>& received, int& errors, std::uint64_t count,
                std::uint64_t sum) {
  const int n = bench::mpi_peer::world_size();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = bench::clock::now();
  std::sort(keys.begin(), keys.end());
  phases p;
  p.sort = bench::seconds_since(t0);
  std::vector<key> samples = pick_samples(keys), all(static_cast<std::size_t>(samples_per_rank * n));
  MPI_Allgather(samples.data(), samples_per_rank, MPI_UINT64_T, all.data(), samples_per_rank, MPI_UINT64_T,
                MPI_COMM_WORLD);
  const auto at = cut(keys, pick_splitters(std::move(all), n));
  std::vector<int> send_counts(static_cast<std::size_t>(n)), send_displs(static_cast<std::size_t>(n)),
      recv_counts(static_cast<std::size_t>(n)), recv_displs(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    send_counts[static_cast<std::size_t>(r)] =
        static_cast<int>(at[static_cast<std::size_t>(r) + 1] - at[static_cast<std::size_t>(r)]);
    send_displs[static_cast<std::size_t>(r)] = static_cast<int>(at[static_cast<std::size_t>(r)]);
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<std::size_t> runs{0};
  for (int r = 0; r < n; ++r) {
    recv_displs[static_cast<std::size_t>(r)] = static_cast<int>(runs.back());
    runs.push_back(runs.back() + static_cast<std::size_t>(recv_counts[static_cast<std::size_t>(r)]));
  }
  if (received.size() < runs.back()) received.resize(runs.back());
  const std::span<key> mine(received.data(), runs.back());
  MPI_Alltoallv(keys.data(), send_counts.data(), send_displs.data(), MPI_UINT64_T, mine.data(), recv_counts.data(),
                recv_displs.data(), MPI_UINT64_T, MPI_COMM_WORLD);
  p.exchange = bench::seconds_since(t0);
  merge_runs(mine.data(), runs);
  MPI_Barrier(MPI_COMM_WORLD);
  p.total = bench::seconds_since(t0);
  const local_check c = check_of(mine);
  std::vector<local_check> all_checks(static_cast<std::size_t>(n));
  MPI_Allgather(&c, sizeof c, MPI_BYTE, all_checks.data(), sizeof c, MPI_BYTE, MPI_COMM_WORLD);
  errors = errors_of(all_checks, count, sum);
  return p;
}

std::string pow2(std::size_t n) {
  int p = 0;
  while ((std::size_t{1} << p) < n) ++p;
  return (std::size_t{1} << p) == n ? "2^" + std::to_string(p) : std::to_string(n);
}

}  // namespace

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  if (mpi) bench::peer_apart::init_mpi(argc, argv);
  CLI::App app{"H1: SampleSort of 64-bit keys, Rill vs MPI alltoallv + std::sort and TBB parallel_sort"};
  app.allow_extras();  // --rill:* flags are for the runtime
  int reps = 5;
  std::size_t per_rank = std::size_t{1} << 22;
  bool quick = false;
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--keys", per_rank, "keys per rank");
  app.add_flag("--quick", quick, "2^20 keys per rank, 3 repetitions");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files);
  CLI11_PARSE(app, argc, argv);
  bench::peer_apart::require_mpirun(peer_files, mpi, "rill_bench_h1");
  if (quick) {
    per_rank = std::min(per_rank, std::size_t{1} << 20);
    reps = std::min(reps, 3);
  }
  const int me = mpi ? bench::mpi_peer::world_rank() : 0;
  const int ranks = mpi ? bench::mpi_peer::world_size() : 1;
  const std::vector<key> keys = make_keys(me, per_rank);
  // Everyone's keys are known: the expected count and sum of the whole sort.
  std::uint64_t sum = 0;
  for (int r = 0; r < ranks; ++r)
    for (key k : make_keys(r, per_rank)) sum += k;
  const std::uint64_t count = per_rank * static_cast<std::uint64_t>(ranks);
  const double total = static_cast<double>(count);

  std::vector<double> peer;
  std::vector<phases> peer_phases, rill_phases;
  nlohmann::json peer_phase_medians;
  int peer_errors = 0;
  std::string peer_name;
  const char* const program = "rill_bench_h1";
  const nlohmann::json peer_config = {{"ranks", ranks}, {"keys_per_rank", per_rank}, {"reps", reps}};
  if (!peer_files.only.empty()) {
    std::vector<key> received;
    for (int r = 0; r < reps; ++r) {
      int e = 0;
      peer_phases.push_back(mpi_sort(keys, received, e, count, sum));
      peer.push_back(total / peer_phases.back().total);
      peer_errors += e;
      if (me == 0) bench::progress("H1 mpi rep {}: {:.3g} keys/s", r, peer.back());
    }
    bench::peer_apart::write(
        peer_files.only, program, peer_config,
        {{"keys_per_second", peer}, {"phases", phase_medians(peer_phases)}, {"errors", peer_errors}});
    if (peer_errors != 0) std::fprintf(stderr, "H1: the MPI peer's sort was wrong %d times\n", peer_errors);
    MPI_Finalize();
    return peer_errors == 0 ? 0 : 1;
  }
  if (!peer_files.results.empty()) {
    peer_name = "MPI alltoallv + std::sort, processes of its own at MPI_THREAD_SINGLE";
    peer = bench::peer_apart::read_or_exit(peer_files.results, program, peer_config, [&](const nlohmann::json& in) {
      peer_phase_medians = in.at("phases");
      peer_errors = in.at("errors").get<int>();  // failed checks of the peer's sorts
      return bench::peer_apart::series(in, "keys_per_second");
    });
  } else if (mpi) {
    bench::peer_apart::note_no_peer("H1");
  }

  std::vector<double> rill_rates;
  int errors = 0, workers = 0;
  {
    rill::runtime rt(argc, argv);
    workers = rt.options().workers;
    rt.run_spmd([&] {
      for (int r = 0; r < reps; ++r) {
        int e = 0;
        const phases p = rill_sort(keys, e, count, sum);
        if (rill::rank_me() == 0) {
          rill_phases.push_back(p);
          rill_rates.push_back(total / p.total);
          errors += e;
          bench::progress("H1 rill rep {}: {:.3g} keys/s ({} errors)", r, rill_rates.back(), e);
        }
      }
    });
  }

  if (!mpi) {
    peer_name = "TBB parallel_sort";
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(workers));
    for (int r = 0; r < reps; ++r) {
      std::vector<key> v = keys;
      const auto t0 = bench::clock::now();
      tbb::parallel_sort(v.begin(), v.end());
      peer.push_back(total / bench::seconds_since(t0));
      peer_errors += errors_of({check_of(v)}, count, sum);
      bench::progress("H1 tbb rep {}: {:.3g} keys/s", r, peer.back());
    }
  }

  if (me == 0) {
    bench::result r;
    r.id = "H1";
    r.case_name = fmt::format("{} keys per rank, {} {} {}, {} worker{}", pow2(per_rank), ranks,
                              ranks == 1 ? "rank" : "ranks", mpi ? "mpi" : "local", workers, workers == 1 ? "" : "s");
    r.metric = "sort rate";
    r.unit = "keys/s";
    r.higher_is_better = true;
    r.rill = rill_rates;
    r.peer = peer_name + (mpi ? "" : fmt::format(", {} thread{}", workers, workers == 1 ? "" : "s"));
    r.peer_values = peer;
    r.extra = {{"ranks", ranks},
               {"workers", workers},
               {"transport", mpi ? "mpi" : "local"},
               {"keys_per_rank", per_rank},
               {"errors", errors},
               {"peer_errors", peer_errors},
               {"phases", phase_medians(rill_phases)}};
    if (!peer_phase_medians.is_null()) r.extra["peer_phases"] = peer_phase_medians;
    bench::emit(r);
  }
  if (mpi) MPI_Finalize();
  return errors == 0 && peer_errors == 0 ? 0 : 1;
}
