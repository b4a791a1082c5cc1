// A Task Bench graph on logical regions (issue 21), as Task Bench's Legion version writes it: the
// outputs of a timestep are a region of `width` cells (task (t, p)'s output tag in cell p), in two
// fields for even and odd timesteps; task (t, p) is a launch with two requirements -- read-only on
// the cells of its inputs at t - 1 (its subregion of an aliased partition of the cells, one
// partition per dependence set) and write-discard on its own cell. The runtime finds every
// dependence and moves the tags between ranks; a mapper of the program's runs task (t, p) on p's
// owner, as the other versions block-distribute the points.
//
// Not SPMD: rank 0 issues every launch in program order (yielding after each timestep, so that its
// worker also runs tasks); the other ranks only run the tasks sent to them. Every task checks its
// inputs' (step, point) tags and counts the wrong ones on its rank; run_graph() sums them.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "rill/launch.hpp"
#include "rill/partition.hpp"
#include "rill/rill.hpp"
#include "task_bench/graph.hpp"
#include "task_bench/kernel.hpp"
#include "task_bench/rill_version.hpp"

namespace task_bench::regions_version {

constexpr rill::field<tag> f_even{1}, f_odd{2};
// The field task (t, p) writes; it reads output_field(t - 1).
inline rill::field<tag> output_field(long t) { return t % 2 == 0 ? f_even : f_odd; }

// Every process's tables by pattern, the same on every rank (built before the runtime starts):
// tasks look their edges up here.
inline const std::map<pattern, edge_table>* tables = nullptr;
inline std::array<std::atomic<long>, rill_version::max_ranks> wrong_inputs{};

// A graph's regions, made once (on rank 0) and used by every run of it.
struct graph_regions {
  rill::region cells;
  rill::partition points;               // a cell per point, disjoint
  std::vector<rill::partition> inputs;  // by timestep (from 1): point p's input cells
};

inline graph_regions make_regions(const edge_table& table) {
  const graph& g = table.g();
  graph_regions r;
  r.cells = rill::region::create(rill::rect<1>{0, g.width - 1}, rill::field_space{f_even, f_odd});
  r.points = rill::partition_by_blocks(r.cells, rill::point<1>{1});
  // Dependence sets repeat: one partition per distinct set of inputs.
  std::map<std::vector<std::vector<rill::coord_t>>, rill::partition> made;
  r.inputs.resize(static_cast<std::size_t>(g.steps));
  for (long t = 1; t < g.steps; ++t) {
    std::vector<std::vector<rill::coord_t>> in(static_cast<std::size_t>(g.width));
    for (long p = 0; p < g.width_at(t); ++p) {
      const task_edges& e = table.at(t, p);
      for (int k = 0; k < e.n_in; ++k) in[static_cast<std::size_t>(p)].push_back(e.in[static_cast<std::size_t>(k)]);
      std::sort(in[static_cast<std::size_t>(p)].begin(), in[static_cast<std::size_t>(p)].end());
    }
    auto [at, fresh] = made.try_emplace(in);
    if (fresh) {
      std::vector<rill::index_space<1>> spaces;
      for (const auto& cells : in) {
        std::vector<rill::point<1>> pts;
        for (rill::coord_t c : cells) pts.push_back({c});
        spaces.push_back(rill::index_space<1>::from_points(pts));
      }
      at->second = rill::partition_by_subspaces(r.cells, spaces);
    }
    r.inputs[static_cast<std::size_t>(t)] = at->second;
  }
  return r;
}

// Runs task (t, p) on the owner of p: the color of the cell it writes (its last requirement).
class point_owner_mapper : public rill::mapper {
 public:
  explicit point_owner_mapper(long width) : width_(width) {}
  int map_task(const rill::mapping_query& q) override {
    return owner_of(static_cast<long>(q.reqs.back().reg.color()), width_, rill::rank_n());
  }

 private:
  long width_;
};

inline void run_task(const rill::physical_regions& rs, pattern kind, long t, long p, long iterations) {
  const task_edges& e = tables->at(kind).at(t, p);
  long wrong = 0;
  if (e.n_in > 0) {
    const auto in = rs[0].read<tag, 1>(output_field(t - 1));
    for (int k = 0; k < e.n_in; ++k) {
      const rill::coord_t q = e.in[static_cast<std::size_t>(k)];
      const tag got = in[{q}];
      if (got.step != t - 1 || got.point != q) ++wrong;
    }
  }
  const double r = compute_bound(iterations);
  if (r == 12345.678) wrong = -1;  // never true; keeps the result alive
  rs[rs.size() - 1].write<tag, 1>(output_field(t))[{p}] = tag{t, p};
  if (wrong) wrong_inputs[static_cast<std::size_t>(rill::rank_me())].fetch_add(wrong, std::memory_order_relaxed);
}

// Runs the graph once with `iterations` per task, issued from the calling task (on rank 0):
// seconds from the first launch to the last task's end, and the wrong inputs of all ranks.
inline rill_version::result run_graph(const graph_regions& r, pattern kind, long iterations) {
  const edge_table& table = tables->at(kind);
  const graph& g = table.g();
  rill::set_mapper(std::make_shared<point_owner_mapper>(g.width));
  std::vector<rill::event> ends;
  const auto t0 = std::chrono::steady_clock::now();
  for (long t = 0; t < g.steps; ++t) {
    const rill::field<tag> out = output_field(t);
    for (long p = 0; p < g.width_at(t); ++p) {
      const rill::region cell = r.points.subregion(static_cast<std::size_t>(p));
      std::vector<rill::requirement> reqs;
      if (table.at(t, p).n_in > 0)
        reqs.push_back(rill::req(r.inputs[static_cast<std::size_t>(t)].subregion(static_cast<std::size_t>(p)),
                                 {output_field(t - 1).id}, rill::privilege::read_only));
      reqs.push_back(rill::req(cell, {out.id}, rill::privilege::write_discard));
      ends.push_back(rill::launch(run_task, reqs, kind, t, p, iterations));
    }
    rill::yield();
  }
  rill::merge(ends).wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rill::set_mapper(nullptr);
  long errors = 0;
  for (int rank = 0; rank < rill::rank_n(); ++rank)
    errors += rill::rpc(rank, [] {
                return wrong_inputs[static_cast<std::size_t>(rill::rank_me())].exchange(0, std::memory_order_relaxed);
              }).get();
  return {seconds, errors};
}

}  // namespace task_bench::regions_version
