#include "plate_regions.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "rill/attach.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"

namespace plate {
namespace {

using rill::privilege;

std::vector<rill::index_space<2>> strip_spaces(const params& p, int pieces, bool with_halo) {
  std::vector<rill::index_space<2>> out;
  for (int s = 0; s < pieces; ++s) {
    coord_t lo = first_row(p, pieces, s), hi = first_row(p, pieces, s + 1) - 1;
    if (with_halo) {
      lo = std::max<coord_t>(lo - 1, 0);
      hi = std::min(hi + 1, p.height - 1);
    }
    out.emplace_back(rill::rect<2>{{0, lo}, {p.width - 1, hi}});
  }
  return out;
}

rill::region new_plate_region(const params& p, rill::field_space fields) {
  return rill::region::create(rill::rect<2>{{0, 0}, {p.width - 1, p.height - 1}}, std::move(fields));
}

// The input file's datasets: the field each one fills.
rill::hdf5_resource input_file(const std::string& path, rill::io_mode mode) {
  return rill::hdf5_resource{
      path, {rill::stored_as(temperature_a, "temperature"), rill::stored_as(conductivity, "conductivity")}, mode};
}
rill::hdf5_resource checkpoint_file(const std::string& path, rill::io_mode mode) {
  return rill::hdf5_resource{path, {rill::stored_as(temperature_a, "temperature")}, mode};
}

class block_mapper : public rill::default_mapper {
 public:
  explicit block_mapper(int pieces) : pieces_(pieces) {}
  int map_task(const rill::mapping_query& q) override {
    if (q.color >= 0) return static_cast<int>(q.color * rill::rank_n() / pieces_);
    return default_mapper::map_task(q);
  }

 private:
  const int pieces_;
};

template <class Accessor>
void require_contiguous_rows(const Accessor& a) {
  if (a.stride(0) != sizeof(double)) throw std::logic_error("rill-demo: rows are not contiguous in the instance");
}

// ---- the tasks ----

void fill_input(const rill::physical_regions& rs, std::size_t, params p) {
  const auto t = rs[0].write<double, 2>(temperature_a);
  const auto k = rs[0].write<double, 2>(conductivity);
  rs[0].reg.space<2>().for_each_point([&](rill::point<2> q) {
    t[q] = initial_temperature(q[0], q[1], p);
    k[q] = initial_conductivity(q[0], q[1], p);
  });
}

void pull_in(const rill::physical_regions&, std::size_t) {}

void step_strip(const rill::physical_regions& rs, std::size_t, params p, int s) {
  const auto in = rs[0].read<double, 2>(temperature_before(s));
  const auto k = rs[0].read<double, 2>(conductivity);
  const auto out = rs[1].write<double, 2>(temperature_after(s));
  require_contiguous_rows(in);
  require_contiguous_rows(k);
  require_contiguous_rows(out);
  const rill::rect<2> b = rs[1].reg.space<2>().bounds();
  for (coord_t y = b.lo[1]; y <= b.hi[1]; ++y) {
    const bool edge = y == 0 || y == p.height - 1;
    step_row(edge ? nullptr : in.ptr({0, y - 1}), in.ptr({0, y}), edge ? nullptr : in.ptr({0, y + 1}), k.ptr({0, y}),
             out.ptr({0, y}), p.width, edge);
  }
}

void zero_heat(const rill::physical_regions& rs) { rs[0].write<double, 1>(heat)[{0}] = 0.0; }

void sum_strip(const rill::physical_regions& rs, std::size_t, int s) {
  const auto t = rs[0].read<double, 2>(temperature_after(s));
  double sum = 0.0;
  rs[0].reg.space<2>().for_each_point([&](rill::point<2> q) { sum += t[q]; });
  rs[1].reduce<rill::reduce::sum<double>, 1>(heat)({0}, sum);
}

void read_heat(const rill::physical_regions& rs, rill::promise<double> out) {
  out.put(rs[0].read<double, 1>(heat)[{0}]);
}

void copy_strip(const rill::physical_regions& rs, std::size_t, int s) {
  const auto from = rs[0].read<double, 2>(temperature_after(s));
  const auto to = rs[1].write<double, 2>(temperature_a);
  rs[0].reg.space<2>().for_each_point([&](rill::point<2> q) { to[q] = from[q]; });
}

void read_rows(const rill::physical_regions& rs, rill::field<double> f, rill::promise<std::vector<double>> out) {
  const auto v = rs[0].read<double, 2>(f);
  std::vector<double> rows;
  rs[0].reg.space<2>().for_each_point([&](rill::point<2> q) { rows.push_back(v[q]); });
  out.put(std::move(rows));
}

}  // namespace

plate_regions::plate_regions(const params& prm, int piece_count)
    : p(prm),
      pieces(piece_count),
      grid(new_plate_region(prm, rill::field_space{temperature_a, temperature_b, conductivity})),
      strips(rill::partition_by_subspaces(grid, strip_spaces(prm, piece_count, false))),
      ghosts(rill::partition_by_subspaces(grid, strip_spaces(prm, piece_count, true))),
      totals(rill::region::create(rill::rect<1>{0, 0}, rill::field_space{heat})) {}

void use_block_mapper(const plate_regions& r) { rill::set_mapper(std::make_shared<block_mapper>(r.pieces)); }

rill::event generate_input(const plate_regions& r, const std::string& path) {
  rill::region source = new_plate_region(r.p, rill::field_space{temperature_a, conductivity});
  const rill::partition parts = rill::partition_by_subspaces(source, strip_spaces(r.p, r.pieces, false));
  rill::attach(source, {temperature_a.id, conductivity.id}, input_file(path, rill::io_mode::write_discard));
  rill::index_launch(fill_input, parts,
                     {rill::req(parts, {temperature_a.id, conductivity.id}, privilege::write_discard)}, r.p);
  const rill::event written = rill::detach(source);
  return rill::merge(written, source.destroy(written));
}

rill::event load_input(const plate_regions& r, const std::string& path) {
  rill::attach(r.grid, {temperature_a.id, conductivity.id}, input_file(path, rill::io_mode::read_only));
  // Into the instances of the ghost regions, which the steps read.
  rill::index_launch(pull_in, r.ghosts,
                     {rill::req(r.ghosts, {temperature_a.id, conductivity.id}, privilege::read_only)});
  return rill::detach(r.grid);
}

rill::event step(const plate_regions& r, int s) {
  return rill::index_launch(step_strip, r.strips,
                            {rill::req(r.ghosts, {temperature_before(s).id, conductivity.id}, privilege::read_only),
                             rill::req(r.strips, {temperature_after(s).id}, privilege::write_discard)},
                            r.p, s);
}

rill::future<double> heat_after(const plate_regions& r, int s) {
  rill::launch(zero_heat, {rill::req(r.totals, {heat.id}, privilege::write_discard)});
  rill::index_launch(sum_strip, r.strips,
                     {rill::req(r.strips, {temperature_after(s).id}, privilege::read_only),
                      rill::req(r.totals, {heat.id}, rill::reduce_with<rill::reduce::sum<double>>())},
                     s);
  rill::promise<double> total;
  rill::launch(read_heat, {rill::req(r.totals, {heat.id}, privilege::read_only)}, total);
  return total.get_future();
}

rill::event checkpoint(const plate_regions& r, int s, const std::string& path) {
  rill::region saved = new_plate_region(r.p, rill::field_space{temperature_a});
  const rill::partition parts = rill::partition_by_subspaces(saved, strip_spaces(r.p, r.pieces, false));
  rill::attach(saved, {temperature_a.id}, checkpoint_file(path, rill::io_mode::write_discard));
  rill::index_launch(copy_strip, r.strips,
                     {rill::req(r.strips, {temperature_after(s).id}, privilege::read_only),
                      rill::req(parts, {temperature_a.id}, privilege::write_discard)},
                     s);
  const rill::event durable = rill::detach(saved);
  return rill::merge(durable, saved.destroy(durable));
}

std::vector<double> temperature_after_step(const plate_regions& r, int s) {
  std::vector<rill::future<std::vector<double>>> parts;
  for (int i = 0; i < r.pieces; ++i) {
    rill::promise<std::vector<double>> part;
    parts.push_back(part.get_future());
    rill::launch(
        read_rows,
        {rill::req(r.strips.subregion(static_cast<std::size_t>(i)), {temperature_after(s).id}, privilege::read_only)},
        temperature_after(s), part);
  }
  std::vector<double> all;
  for (auto& f : parts) {
    const std::vector<double> rows = f.get();
    all.insert(all.end(), rows.begin(), rows.end());
  }
  return all;
}

std::vector<double> read_checkpoint(const params& p, const std::string& path) {
  rill::region saved = new_plate_region(p, rill::field_space{temperature_a});
  rill::attach(saved, {temperature_a.id}, checkpoint_file(path, rill::io_mode::read_only));
  rill::promise<std::vector<double>> all;
  rill::launch(read_rows, {rill::req(saved, {temperature_a.id}, privilege::read_only)}, temperature_a, all);
  std::vector<double> out = all.get_future().get();
  const rill::event closed = rill::detach(saved);
  rill::merge(closed, saved.destroy(closed)).wait();
  return out;
}

}  // namespace plate
