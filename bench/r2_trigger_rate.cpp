// R2 — event trigger rate (Realm Fig. 5a): L levels of W user events; each event of level k+1 is
// triggered once the merge of F events of level k has (fan-in F, and so fan-out F); events are
// spread round-robin over the ranks, and each is armed on its owner. Rank 0 triggers level 0 and
// waits for the last level; triggers/s = W * L / time (merges not counted, as in Realm's test).
//
//   rill_bench_r2 --rill:ranks=1              1 rank, local
//   mpirun -np 2 rill_bench_r2                2 ranks, mpi: F/2 of every event's inputs are remote
//
// No peer runs in the same process (Realm's figure on this machine kind, 14.6 M triggers/s for
// fan 16 on one rank, is printed as `reference`; Realm's event_throughput counts a trigger per
// event and dependent, i.e. our `dependencies_per_second`. Under mpirun, the MPI 8-byte message
// rate of the same run is printed as `mpi_message_rate`, the limit for remote dependencies).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "rill/rill.hpp"

namespace {

struct shape {
  std::size_t width;   // events per level
  std::size_t levels;  // levels
  std::size_t fan;     // inputs per event
};

// Each rank creates its own events (index % ranks == rank) and publishes them to rank 0.
void create_level_events(rill::user_event* grid, rill::latch* created, std::size_t count) {
  const auto me = static_cast<std::size_t>(rill::rank_me());
  const auto ranks = static_cast<std::size_t>(rill::rank_n());
  for (std::size_t i = me; i < count; i += ranks) {
    rill::am::send(
        rill::am::sender(),
        [](rill::user_event* out, rill::latch* done, std::size_t at, rill::user_event e) {
          out[at] = e;
          done->count_down();
        },
        grid, created, i, rill::user_event::create());
  }
}

// On the owner of event (level, j): trigger it once the merge of its inputs has.
void arm(rill::user_event self, std::vector<rill::event> inputs, rill::latch* armed) {
  self.trigger(rill::merge(inputs));
  rill::am::send(
      rill::am::sender(), [](rill::latch* d) { d->count_down(); }, armed);
}

double rill_triggers_per_second(const shape& s) {
  const std::size_t total = s.width * s.levels;
  std::vector<rill::user_event> grid(total);
  {
    rill::latch created(static_cast<std::ptrdiff_t>(total));
    for (int r = 0; r < rill::rank_n(); ++r) rill::am::send(r, create_level_events, grid.data(), &created, total);
    created.wait();
  }
  {
    rill::latch armed(static_cast<std::ptrdiff_t>(total - s.width));
    std::vector<rill::event> inputs(s.fan);
    for (std::size_t level = 1; level < s.levels; ++level) {
      for (std::size_t j = 0; j < s.width; ++j) {
        for (std::size_t f = 0; f < s.fan; ++f) inputs[f] = grid[(level - 1) * s.width + (j + f) % s.width];
        const rill::user_event self = grid[level * s.width + j];
        rill::am::send(self.owner(), arm, self, inputs, &armed);
      }
    }
    armed.wait();
  }
  std::vector<rill::event> last(grid.end() - static_cast<std::ptrdiff_t>(s.width), grid.end());
  const rill::event done = rill::merge(last);
  (void)done.has_triggered();  // subscribe now, not on the clock
  const auto settle = bench::clock::now();
  while (bench::seconds_since(settle) < 0.02) rill::yield();

  const auto t0 = bench::clock::now();
  for (std::size_t j = 0; j < s.width; ++j) {
    rill::am::send(
        grid[j].owner(), [](rill::user_event e) { e.trigger(); }, grid[j]);
  }
  done.wait();
  return static_cast<double>(total) / bench::seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  if (mpi) bench::mpi_peer::init(argc, argv);
  CLI::App app{"R2: event trigger rate with fan-in/out"};
  app.allow_extras();
  int reps = 7;
  std::size_t width = 32, levels = 2'000;
  std::vector<std::size_t> fans{1, 4, 16, 64};
  bool quick = false;
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--width", width, "events per level");
  app.add_option("--levels", levels, "levels");
  app.add_option("--fans", fans, "fan-in/out factors");
  app.add_flag("--quick", quick, "small sizes");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    reps = std::min(reps, 3);
    levels = std::min<std::size_t>(levels, 300);
  }

  double mpi_rate = 0;
  if (mpi) mpi_rate = bench::mpi_peer::message_rate(8, 200'000, 64);

  std::vector<std::vector<double>> values(fans.size());
  int ranks = 0, workers = 0;
  {
    rill::runtime rt(argc, argv);
    ranks = rt.ranks();
    workers = rt.options().workers;
    rt.run([&] {
      for (std::size_t k = 0; k < fans.size(); ++k) {
        const shape s{std::max(width, fans[k]), levels, fans[k]};
        rill_triggers_per_second({s.width, levels / 10 + 2, s.fan});  // warm-up
        for (int r = 0; r < reps; ++r) {
          values[k].push_back(rill_triggers_per_second(s));
          bench::progress("R2 fan {} rep {}: {:.3g} triggers/s", fans[k], r, values[k].back());
        }
      }
    });
  }

  if (!mpi || bench::mpi_peer::world_rank() == 0) {
    for (std::size_t k = 0; k < fans.size(); ++k) {
      bench::result res;
      res.id = "R2";
      res.case_name = fmt::format("fan {}, {} {}, {} {}, {}", fans[k], ranks, ranks == 1 ? "rank" : "ranks", workers,
                                  workers == 1 ? "worker" : "workers", mpi ? "mpi" : "local");
      res.metric = "event trigger rate";
      res.unit = "triggers/s";
      res.higher_is_better = true;
      res.rill = values[k];
      // Each triggered event also satisfies `fan` dependencies: report that rate too, since a
      // count of "triggers" may mean either.
      res.extra = {{"ranks", ranks},
                   {"workers", workers},
                   {"transport", mpi ? "mpi" : "local"},
                   {"fan", fans[k]},
                   {"width", std::max(width, fans[k])},
                   {"levels", levels},
                   {"dependencies_per_second", bench::summarize(values[k]).median * static_cast<double>(fans[k])},
                   {"reference", "Realm: 14.6 M triggers/s (= events x fan-out), fan 16, 1 rank (shared/anchors.md)"}};
      if (mpi) res.extra["mpi_message_rate"] = mpi_rate;
      bench::emit(res);
    }
  }
  if (mpi) MPI_Finalize();
  return 0;
}
