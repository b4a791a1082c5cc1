// R6 — event storage (Realm Fig. 6c): a long run creates many events but keeps only a bounded
// number untriggered at once; generational slots must follow the peak of untriggered events, not
// the count created. The workload: `live` chains of deferred user events advance in lockstep, each
// step either adds to every chain a new event that triggers after the chain's newest one, or (at
// random, always at `depth`) triggers the chain's oldest event, which releases the whole chain; so
// the number of untriggered events wanders between 0 and live * depth.
//
//   rill_bench_r6 --rill:ranks=1
//
// Printed per run: events created, peak untriggered, slots; the metric is slots / peak untriggered
// (target ≤ 1.2). There is no peer: Realm's figure is the same kind of count (Fig. 6c).
#include <CLI/CLI.hpp>

#include <deque>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "rill/rill.hpp"

namespace {

struct storage {
  double created = 0;
  double peak_untriggered = 0;
  double slots = 0;
};

storage run_workload(std::size_t steps, std::size_t live, std::size_t depth, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::deque<rill::user_event>> chains(live);
  const rill::event_counts before = rill::event_stats();
  for (std::size_t step = 0; step < steps; ++step) {
    for (auto& chain : chains) {
      // Grow the window, or shrink it by triggering the oldest events, at random.
      const bool grow = chain.empty() || (chain.size() < depth && rng() % 8 != 0);
      if (grow) {
        const rill::user_event e = rill::user_event::create();
        if (!chain.empty()) {
          // Deferred: e triggers once the chain's newest event has.
          e.trigger(chain.back());
        }
        chain.push_back(e);
      } else {
        // Trigger the oldest event: the deferred ones behind it follow, and the chain starts over.
        chain.front().trigger();
        chain.back().wait();
        chain.clear();
      }
    }
  }
  for (auto& chain : chains)
    if (!chain.empty()) {
      chain.front().trigger();
      chain.back().wait();
    }
  const rill::event_counts after = rill::event_stats();
  storage s;
  s.created = static_cast<double>(after.created - before.created);
  s.peak_untriggered = static_cast<double>(after.peak_untriggered);
  s.slots = static_cast<double>(after.slots);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"R6: generational event storage vs events created and peak untriggered"};
  app.allow_extras();
  int reps = 3;
  std::size_t steps = 20'000, live = 64, depth = 32;
  bool quick = false;
  app.add_option("--reps", reps, "repetitions (fresh runtime each)");
  app.add_option("--steps", steps, "steps of every chain");
  app.add_option("--live", live, "chains advancing together");
  app.add_option("--depth", depth, "most untriggered events per chain");
  app.add_flag("--quick", quick, "small sizes");
  CLI11_PARSE(app, argc, argv);
  if (quick) steps = std::min<std::size_t>(steps, 3'000);

  std::vector<double> ratio, created, peak, slots;
  int workers = 0;
  const std::vector<std::string> words(argv, argv + argc);
  for (int r = 0; r < reps; ++r) {
    // A fresh runtime per repetition; each consumes the --rill:* flags from its own copy of argv.
    std::vector<std::string> copy = words;
    std::vector<char*> ptrs;
    for (auto& w : copy) ptrs.push_back(w.data());
    ptrs.push_back(nullptr);
    int n = static_cast<int>(copy.size());
    rill::runtime rt(n, ptrs.data());
    workers = rt.options().workers;
    rt.run([&] {
      const storage s = run_workload(steps, live, depth, static_cast<unsigned>(r + 1));
      created.push_back(s.created);
      peak.push_back(s.peak_untriggered);
      slots.push_back(s.slots);
      ratio.push_back(s.slots / s.peak_untriggered);
      bench::progress("R6 rep {}: created {:.0f}, peak untriggered {:.0f}, slots {:.0f}", r, s.created,
                      s.peak_untriggered, s.slots);
    });
  }
  bench::result res;
  res.id = "R6";
  res.case_name = fmt::format("chains {} depth {}, 1 rank, {} {}, local", live, depth, workers,
                              workers == 1 ? "worker" : "workers");
  res.metric = "slots per peak untriggered event";
  res.unit = "ratio";
  res.higher_is_better = false;
  res.rill = ratio;
  res.extra = {{"ranks", 1},
               {"workers", workers},
               {"transport", "local"},
               {"events_created", bench::summarize(created).median},
               {"peak_untriggered", bench::summarize(peak).median},
               {"slots", bench::summarize(slots).median},
               {"target", "slots <= 1.2 x peak untriggered"}};
  bench::emit(res);
  return 0;
}
