// REGIONS, case `launch` (BENCHMARKS.md): index launches of empty point tasks over a partition of
// 1024 subregions, against Rill's plain proc::spawn of the same tasks with the same dependences.
//
//   Rill, regions: L index launches, one after the other without waiting, each point read-write on
//                  its subregion of a disjoint partition (so point c of launch k waits for point
//                  c of launch k-1 and for nothing else); tasks/s = L * colors / time to the end.
//   peer, spawn:   the same L * colors tasks with proc(c % ranks).spawn, each after its color's
//                  previous task: the price of the analysis is the difference.
//   analysis cost: the issuing time per point task in the later half of the launches against the
//                  earlier half (growth with the number of earlier launches shows as a ratio
//                  above 1; the first launch of a round is left out: its points wait for nothing
//                  still running).
//   Rill, sub-launches (case `launch_nested`): the same L * colors point tasks issued as
//                  sub-launches: one top-level index launch over 2 blocks per rank, each block's
//                  task issuing the L index launches over its share of the subregions, analysed
//                  on its rank (so every rank analyses at once); tasks/s against the same peer.
//
// Run with --rill:launch-memo=off, every point is analysed (the cases end in `_no_memo`); by
// default the launches after the first two repeat their points' remembered analyses.
//
// Points run where the default mapper puts them: color % ranks on the first launch, then where
// their data is valid (the same rank); a block's sub-launches run where its instance is.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "rill/rill.hpp"

namespace {

constexpr rill::field<std::uint64_t> value{1};

struct round_times {
  double total = 0;        // seconds from the first issue to the last task's end
  double early_issue = 0;  // seconds to issue launches 1 .. L/2 - 1
  double late_issue = 0;   // seconds to issue launches L/2 .. L - 1
};

round_times regions_round(rill::partition cells, int launches) {
  std::vector<rill::event> ends;
  round_times t;
  const auto t0 = bench::clock::now();
  for (int k = 0; k < launches; ++k) {
    const auto issue = bench::clock::now();
    ends.push_back(rill::index_launch([](const rill::physical_regions&, std::size_t) {}, cells,
                                      {rill::req(cells, {value.id}, rill::privilege::read_write)}));
    const double s = bench::seconds_since(issue);
    if (k >= 1 && k < launches / 2) t.early_issue += s;
    if (k >= launches / 2) t.late_issue += s;
  }
  rill::merge(ends).wait();
  t.total = bench::seconds_since(t0);
  return t;
}

// The block's task: L index launches over its subregions (`cells[block]`), issued on its rank.
void issue_block(const rill::physical_regions&, std::size_t block, const std::vector<rill::partition>& cells,
                 int launches) {
  const rill::partition mine = cells[block];
  for (int k = 0; k < launches; ++k)
    rill::index_launch([](const rill::physical_regions&, std::size_t) {}, mine,
                       {rill::req(mine, {value.id}, rill::privilege::read_write)});
}

// `blocks` partitions a tree of its own (the flat rounds' launches are not in its way); block b's
// subregions are `cells[b]`, made once as a program would.
double nested_round(rill::partition blocks, const std::vector<rill::partition>& cells, int launches) {
  const auto t0 = bench::clock::now();
  rill::index_launch(issue_block, blocks, {rill::req(blocks, {value.id}, rill::privilege::read_write)}, cells, launches)
      .wait();
  return bench::seconds_since(t0);
}

double spawn_round(std::size_t colors, int launches) {
  const int n = rill::rank_n();
  std::vector<rill::event> last(colors, rill::event::none());
  const auto t0 = bench::clock::now();
  for (int k = 0; k < launches; ++k)
    for (std::size_t c = 0; c < colors; ++c)
      last[c] = rill::proc(static_cast<int>(c % static_cast<std::size_t>(n))).spawn(rill::after(last[c]), [] {});
  rill::merge(last).wait();
  return bench::seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  CLI::App app{"REGIONS launch: index launches of empty tasks over 1024 subregions vs proc::spawn"};
  std::size_t colors = 1024;
  int launches = 20, reps = 5, cells_per_color = 16;
  bool quick = false;
  app.add_option("--colors", colors, "subregions of the partition (point tasks per launch)");
  app.add_option("--launches", launches, "index launches per repetition");
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--cells", cells_per_color, "points per subregion");
  app.add_flag("--quick", quick, "fewer launches and repetitions");
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);
  if (quick) launches = 5, reps = 3;
  if (launches < 4) launches = 4;

  return rt.run([&] {
    const rill::region grid = rill::region::create(
        rill::rect<1>{0, static_cast<rill::coord_t>(colors) * cells_per_color - 1}, rill::field_space{value});
    const rill::partition cells = rill::partition_equal(grid, colors);
    const rill::region nested_grid = rill::region::create(
        rill::rect<1>{0, static_cast<rill::coord_t>(colors) * cells_per_color - 1}, rill::field_space{value});
    const rill::partition blocks = rill::partition_equal(nested_grid, 2 * static_cast<std::size_t>(rill::rank_n()));
    std::vector<rill::partition> block_cells;
    for (std::size_t b = 0; b < blocks.colors(); ++b)
      block_cells.push_back(rill::partition_equal(blocks.subregion(b), colors / blocks.colors()));
    // A warm-up launch makes the instances, which every later launch reuses.
    regions_round(cells, 1);
    (void)spawn_round(colors, 1);
    (void)nested_round(blocks, block_cells, 1);

    // With --rill:launch-memo=off every point is analysed (the cases are named so).
    const std::string off = rt.options().launch_memo ? "" : "_no_memo";
    bench::result rate{"REGIONS", "launch" + off, "point tasks per second", "tasks/s", true, {}, "proc::spawn", {}};
    bench::result growth{"REGIONS",
                         "launch_analysis" + off,
                         "issue time per point task, later half of the launches / earlier half",
                         "ratio",
                         false,
                         {},
                         "",
                         {}};
    bench::result nested{"REGIONS",
                         "launch_nested" + off,
                         "point tasks per second, issued as sub-launches",
                         "tasks/s",
                         true,
                         {},
                         "proc::spawn",
                         {}};
    std::vector<double> early_ns, late_ns;
    for (int r = 0; r < reps; ++r) {
      const round_times t = regions_round(cells, launches);
      const double peer = spawn_round(colors, launches);
      const double sub = nested_round(blocks, block_cells, launches);
      const double tasks = static_cast<double>(colors) * launches;
      rate.rill.push_back(tasks / t.total);
      rate.peer_values.push_back(tasks / peer);
      nested.rill.push_back(tasks / sub);
      nested.peer_values.push_back(tasks / peer);
      const double early = t.early_issue / (launches / 2 - 1), late = t.late_issue / (launches - launches / 2);
      growth.rill.push_back(late / early);
      early_ns.push_back(early * 1e9 / static_cast<double>(colors));
      late_ns.push_back(late * 1e9 / static_cast<double>(colors));
      bench::progress(
          "REGIONS launch rep {}: {:.0f} tasks/s, as sub-launches {:.0f} (spawn {:.0f}); issue {:.0f} -> {:.0f} "
          "ns/point",
          r, tasks / t.total, tasks / sub, tasks / peer, early_ns.back(), late_ns.back());
    }
    nested.extra["blocks"] = blocks.colors();
    for (bench::result* res : {&rate, &nested, &growth}) {
      res->extra["ranks"] = rill::rank_n();
      res->extra["workers"] = rt.options().workers;
      res->extra["colors"] = colors;
      res->extra["launches"] = launches;
    }
    growth.extra["early_issue_ns_per_point"] = bench::summarize(early_ns).median;
    growth.extra["late_issue_ns_per_point"] = bench::summarize(late_ns).median;
    bench::emit(rate);
    bench::emit(nested);
    bench::emit(growth);
    return 0;
  });
}
