// REGIONS' stencil on logical regions: the program names the grid as one region, cuts it into
// strips (disjoint) and strips with their halo rows (aliased: a row of each neighbour), and
// launches one index launch per step -- each point reads its ghost region of one field and writes
// its strip of the other. It issues no copy and no event: the runtime finds that a step's halo
// rows are the neighbours' last writes and copies them (between ranks or between two strips'
// instances on one rank), and keeps each strip's own rows in the instance of its ghost region
// (the largest instance holding the strip), so nothing else moves.
//
// Placement: a mapper of the program's (as a Legion stencil brings its own) puts piece p on the
// rank of its block of pieces, as the other versions do; launches of one strip (the final read)
// go where its data is.
#include <memory>

#include "common.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"
#include "stencil.hpp"

namespace stencil {
namespace {

// Points of index launches by blocks; the others (single launches) where their data is.
class block_mapper : public rill::default_mapper {
 public:
  explicit block_mapper(const params& prm) : prm_(prm) {}
  int map_task(const rill::mapping_query& q) override {
    if (q.color >= 0) return owner_of(prm_, static_cast<int>(q.color), rill::rank_n());
    return default_mapper::map_task(q);
  }

 private:
  params prm_;
};

void init_strip(const rill::physical_regions& rs, std::size_t) {
  const auto a = rs[0].write<double, 2>(f_a);
  const rill::rect<2> b = rs[0].reg.space<2>().bounds();
  for (coord_t y = b.lo[1]; y <= b.hi[1]; ++y)
    for (coord_t x = b.lo[0]; x <= b.hi[0]; ++x) a[{x, y}] = initial(x, y);
}

void relax_strip(const rill::physical_regions& rs, std::size_t, params prm, int step) {
  const rill::rect<2> b = rs[1].reg.space<2>().bounds();
  relax_rows(rs[0].read<double, 2>(input_of(step)), rs[1].write<double, 2>(output_of(step)), b.lo[1], b.hi[1], prm);
}

void read_strip(const rill::physical_regions& rs, rill::field<double> f, rill::promise<std::vector<double>> out) {
  const auto v = rs[0].read<double, 2>(f);
  const rill::rect<2> b = rs[0].reg.space<2>().bounds();
  std::vector<double> rows;
  for (coord_t y = b.lo[1]; y <= b.hi[1]; ++y)
    for (coord_t x = b.lo[0]; x <= b.hi[0]; ++x) rows.push_back(v[{x, y}]);
  out.put(std::move(rows));
}

}  // namespace

grid_regions make_regions(const params& prm) {
  grid_regions r;
  r.grid = rill::region::create(rill::rect<2>{{0, 0}, {prm.width - 1, prm.height - 1}}, rill::field_space{f_a, f_b});
  std::vector<rill::index_space<2>> strips, ghosts;
  for (int p = 0; p < prm.pieces; ++p) {
    const coord_t lo = first_row(prm, p), hi = first_row(prm, p + 1) - 1;
    strips.emplace_back(rill::rect<2>{{0, lo}, {prm.width - 1, hi}});
    ghosts.emplace_back(
        rill::rect<2>{{0, std::max<coord_t>(lo - 1, 0)}, {prm.width - 1, std::min(hi + 1, prm.height - 1)}});
  }
  r.strips = rill::partition_by_subspaces(r.grid, strips);  // disjoint, found out
  r.ghosts = rill::partition_by_subspaces(r.grid, ghosts);  // aliased
  return r;
}

double run_regions(const params& prm, const grid_regions& r, std::vector<double>& values,
                   const regions_hook& after_step) {
  using rill::privilege;
  rill::set_mapper(std::make_shared<block_mapper>(prm));
  rill::index_launch(init_strip, r.strips, {rill::req(r.strips, {f_a.id}, privilege::write_discard)}).wait();
  const auto t0 = bench::clock::now();
  rill::event last;
  std::vector<rill::event> hooked;
  for (int s = 0; s < prm.steps; ++s) {
    last = rill::index_launch(relax_strip, r.strips,
                              {rill::req(r.ghosts, {input_of(s).id}, privilege::read_only),
                               rill::req(r.strips, {output_of(s).id}, privilege::write_discard)},
                              prm, s);
    if (after_step)
      if (const rill::event e = after_step(s); !e.is_none()) hooked.push_back(e);
    // One worker per rank: let rank 0's own tasks and incoming requests run between steps.
    rill::yield();
  }
  hooked.push_back(last);
  rill::merge(hooked).wait();
  const double per_step = bench::seconds_since(t0) / prm.steps;
  // Strip by strip where each is (a read of the whole grid would make an instance of it on this
  // rank, which later runs would then use for every strip here).
  std::vector<rill::future<std::vector<double>>> parts;
  for (int p = 0; p < prm.pieces; ++p) {
    rill::promise<std::vector<double>> part;
    parts.push_back(part.get_future());
    rill::launch(
        read_strip,
        {rill::req(r.strips.subregion(static_cast<std::size_t>(p)), {input_of(prm.steps).id}, privilege::read_only)},
        input_of(prm.steps), part);
  }
  values.clear();
  for (auto& f : parts) {
    const std::vector<double> v = f.get();
    values.insert(values.end(), v.begin(), v.end());
  }
  rill::set_mapper(nullptr);
  return per_step;
}

}  // namespace stencil
