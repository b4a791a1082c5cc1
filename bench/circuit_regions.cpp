// R5's circuit on logical regions, as Legion's circuit example writes it: the program names its
// data as two region trees and launches its three phases per step as index launches over the
// pieces, each requirement saying which fields and how; it issues no copy, reduction or event.
//
//   nodes [0, P N)          split into all_private | all_shared (disjoint);
//                           private_p: all_private by piece (disjoint)
//                           shared_p:  all_shared by piece (disjoint)
//                           ghost_p:   all_shared, the nodes each piece's wires reach in other
//                                      pieces (aliased)
//   wires [0, P W)          wires_p: by piece (blocks of W)
//
//   calc_new_currents   wires_p read-write (line state), read-only (the rest); private_p,
//                       shared_p and ghost_p read-only (voltage)
//   distribute_charge   wires_p read-only; private_p read-write (charge); shared_p and ghost_p
//                       reduce with sum<double> (charge)
//   update_voltages     private_p and shared_p read-write (every node field)
//
// The runtime finds that calc reads ghost voltages other pieces' update wrote (it copies them in
// from the shared instances), that distributes of different pieces reduce into the same shared
// nodes without waiting for each other (reductions by one operator commute), and that update
// needs those reductions applied first (it applies every pending fold instance to the shared
// instance). The default mapper runs each piece where its data is: piece p on rank p mod ranks,
// as the data-layer version places it.
#include "circuit_regions.hpp"

#include <cstddef>

#include "common.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"

namespace r5 {
namespace {

using ro = rill::read_accessor<double, 1>;
using rw = rill::accessor<double, 1>;

std::vector<rill::field_id> node_fields() { return {f_charge.id, f_capacitance.id, f_leakage.id, f_voltage.id}; }
std::vector<rill::field_id> line_fields() {  // a wire's state from step to step
  std::vector<rill::field_id> f;
  for (int k = 0; k < segments; ++k) f.push_back(f_current + k);
  for (int k = 0; k < segments - 1; ++k) f.push_back(f_inner + k);
  return f;
}
std::vector<rill::field_id> wire_fields() {  // what a wire is
  return {f_in.id, f_out.id, f_in_kind.id, f_out_kind.id, f_inductance.id, f_resistance.id, f_wire_cap.id};
}

struct circuit_regions {
  rill::region nodes, wires;
  rill::partition private_p, shared_p, ghost_p, wires_p;
};

circuit_regions make_regions(const circuit& c) {
  const coord_t N = c.prm.nodes, W = c.prm.wires;
  const auto P = static_cast<std::size_t>(c.prm.pieces);
  rill::field_space nodes_space{f_charge, f_capacitance, f_leakage, f_voltage};
  rill::field_space wires_space{f_in, f_out, f_in_kind, f_out_kind, f_inductance, f_resistance, f_wire_cap};
  for (rill::field_id f : line_fields()) wires_space.add(f, sizeof(double));
  circuit_regions r;
  r.nodes = rill::region::create(rill::rect<1>{0, static_cast<coord_t>(P) * N - 1}, nodes_space);
  r.wires = rill::region::create(rill::rect<1>{0, static_cast<coord_t>(P) * W - 1}, wires_space);
  std::vector<rill::index_space<1>> priv, shared, ghosts;
  rill::index_space<1> all_private, all_shared;
  for (std::size_t p = 0; p < P; ++p) {
    const coord_t lo = static_cast<coord_t>(p) * N, s = c.shared[p];
    shared.emplace_back(rill::rect<1>{lo, lo + s - 1});
    priv.emplace_back(rill::rect<1>{lo + s, lo + N - 1});
    all_shared = all_shared.unite(shared.back());
    all_private = all_private.unite(priv.back());
    ghosts.push_back(space_of(c.ghosts[p]));
  }
  const rill::partition split =
      rill::partition_by_subspaces(r.nodes, std::vector<rill::index_space<1>>{all_private, all_shared});
  r.private_p = rill::partition_by_subspaces(split.subregion(0), priv);
  r.shared_p = rill::partition_by_subspaces(split.subregion(1), shared);
  r.ghost_p = rill::partition_by_subspaces(split.subregion(1), ghosts);
  r.wires_p = rill::partition_by_blocks(r.wires, rill::point<1>{W});
  return r;
}

// Piece `color`'s nodes and wires at their initial values (write_discard: nothing is read).
void init_piece(const rill::physical_regions& rs, std::size_t color) {
  const circuit& c = *g_ckt;
  for (std::size_t i : {0, 1}) {
    const rw q = rs[i].write<double, 1>(f_charge), cap = rs[i].write<double, 1>(f_capacitance),
             leak = rs[i].write<double, 1>(f_leakage), v = rs[i].write<double, 1>(f_voltage);
    const rill::rect<1> b = rs[i].reg.space<1>().bounds();
    for (coord_t n = b.lo[0]; n <= b.hi[0]; ++n) {
      const auto k = static_cast<std::size_t>(n);
      q[{n}] = 0;
      cap[{n}] = c.capacitance[k];
      leak[{n}] = c.leakage[k];
      v[{n}] = c.voltage[k];
    }
  }
  const auto p = static_cast<int>(color);
  const rill::accessor<coord_t, 1> in = rs[2].write<coord_t, 1>(f_in), out = rs[2].write<coord_t, 1>(f_out);
  const rill::accessor<std::int32_t, 1> in_kind = rs[2].write<std::int32_t, 1>(f_in_kind),
                                        out_kind = rs[2].write<std::int32_t, 1>(f_out_kind);
  const rw l = rs[2].write<double, 1>(f_inductance), r = rs[2].write<double, 1>(f_resistance),
           wc = rs[2].write<double, 1>(f_wire_cap);
  std::vector<rw> line;
  for (rill::field_id f : line_fields()) line.push_back(rs[2].write<double, 1>(rill::field<double>{f}));
  const rill::rect<1> b = rs[2].reg.space<1>().bounds();
  init_wires(c, p, b.lo[0], b.hi[0], in, out, in_kind, out_kind, l, r, wc);
  for (const rw& a : line)  // the line starts at rest
    for (coord_t w = b.lo[0]; w <= b.hi[0]; ++w) a[{w}] = 0;
}

void calc_new_currents(const rill::physical_regions& rs, std::size_t, int iterations) {
  std::vector<rw> cur, inner;
  for (int k = 0; k < segments; ++k) cur.push_back(rs[0].write<double, 1>(rill::field<double>{f_current + k}));
  for (int k = 0; k < segments - 1; ++k) inner.push_back(rs[0].write<double, 1>(rill::field<double>{f_inner + k}));
  const auto in = rs[1].read<coord_t, 1>(f_in), out = rs[1].read<coord_t, 1>(f_out);
  const auto in_kind = rs[1].read<std::int32_t, 1>(f_in_kind), out_kind = rs[1].read<std::int32_t, 1>(f_out_kind);
  const ro l = rs[1].read<double, 1>(f_inductance), r = rs[1].read<double, 1>(f_resistance),
           wc = rs[1].read<double, 1>(f_wire_cap);
  const ro pv = rs[2].read<double, 1>(f_voltage), sv = rs[3].read<double, 1>(f_voltage),
           gv = rs[4].read<double, 1>(f_voltage);
  const auto voltage = [&](std::int32_t kind, coord_t n) {
    return kind == private_node ? pv[{n}] : kind == shared_node ? sv[{n}] : gv[{n}];
  };
  const rill::rect<1> b = rs[0].reg.space<1>().bounds();
  solve_wires(b.lo[0], b.hi[0], iterations, in, out, in_kind, out_kind, l, r, wc, cur, inner, voltage);
}

void distribute_charge(const rill::physical_regions& rs, std::size_t) {
  const auto in = rs[0].read<coord_t, 1>(f_in), out = rs[0].read<coord_t, 1>(f_out);
  const auto in_kind = rs[0].read<std::int32_t, 1>(f_in_kind), out_kind = rs[0].read<std::int32_t, 1>(f_out_kind);
  const ro first = rs[0].read<double, 1>(rill::field<double>{f_current}),
           last = rs[0].read<double, 1>(rill::field<double>{f_current + segments - 1});
  const rw pq = rs[1].write<double, 1>(f_charge);
  // The task's own fold instances: one thread reduces into them (exclusive).
  const auto sq = rs[2].reduce<add, 1, true>(f_charge);
  const auto gq = rs[3].reduce<add, 1, true>(f_charge);
  const auto deposit = [&](std::int32_t kind, coord_t n, double q) {
    if (kind == private_node)
      pq[{n}] += q;
    else if (kind == shared_node)
      sq({n}, q);
    else
      gq({n}, q);
  };
  const rill::rect<1> b = rs[0].reg.space<1>().bounds();
  for (coord_t w = b.lo[0]; w <= b.hi[0]; ++w) {
    deposit(in_kind[{w}], in[{w}], -dt * first[{w}]);
    deposit(out_kind[{w}], out[{w}], dt * last[{w}]);
  }
}

void update_voltages(const rill::physical_regions& rs, std::size_t) {
  for (std::size_t i : {0, 1}) {
    const rw q = rs[i].write<double, 1>(f_charge), v = rs[i].write<double, 1>(f_voltage);
    const ro cap = rs[i].read<double, 1>(f_capacitance), leak = rs[i].read<double, 1>(f_leakage);
    const rill::rect<1> b = rs[i].reg.space<1>().bounds();
    for (coord_t n = b.lo[0]; n <= b.hi[0]; ++n) {
      v[{n}] = new_voltage(v[{n}], q[{n}], cap[{n}], leak[{n}]);
      q[{n}] = 0;
    }
  }
}

void read_voltages(const rill::physical_regions& rs, rill::promise<std::vector<double>> out) {
  const ro v = rs[0].read<double, 1>(f_voltage);
  const rill::rect<1> b = rs[0].reg.space<1>().bounds();
  std::vector<double> all;
  for (coord_t n = b.lo[0]; n <= b.hi[0]; ++n) all.push_back(v[{n}]);
  out.put(std::move(all));
}

}  // namespace

double run_regions(const circuit& c, std::vector<double>& voltages) {
  const circuit_regions r = make_regions(c);
  const std::vector<rill::field_id> nodes = node_fields(), charge{f_charge.id}, voltage{f_voltage.id};
  std::vector<rill::field_id> wire_all = wire_fields(), line = line_fields();
  wire_all.insert(wire_all.end(), line.begin(), line.end());
  const std::vector<rill::field_id> distributed{f_in.id,       f_out.id,  f_in_kind.id,
                                                f_out_kind.id, f_current, f_current + segments - 1};
  using rill::privilege;
  rill::index_launch(
      init_piece, r.private_p,
      {rill::req(r.private_p, nodes, privilege::write_discard), rill::req(r.shared_p, nodes, privilege::write_discard),
       rill::req(r.wires_p, wire_all, privilege::write_discard)})
      .wait();
  const auto t0 = bench::clock::now();
  rill::event last;
  for (int s = 0; s < c.prm.steps; ++s) {
    rill::index_launch(
        calc_new_currents, r.wires_p,
        {rill::req(r.wires_p, line, privilege::read_write), rill::req(r.wires_p, wire_fields(), privilege::read_only),
         rill::req(r.private_p, voltage, privilege::read_only), rill::req(r.shared_p, voltage, privilege::read_only),
         rill::req(r.ghost_p, voltage, privilege::read_only)},
        c.prm.iterations);
    rill::index_launch(
        distribute_charge, r.wires_p,
        {rill::req(r.wires_p, distributed, privilege::read_only), rill::req(r.private_p, charge, privilege::read_write),
         rill::req(r.shared_p, charge, rill::reduce_with<add>()),
         rill::req(r.ghost_p, charge, rill::reduce_with<add>())});
    last = rill::index_launch(
        update_voltages, r.private_p,
        {rill::req(r.private_p, nodes, privilege::read_write), rill::req(r.shared_p, nodes, privilege::read_write)});
    // One worker per rank: let rank 0's own tasks and incoming requests run between steps.
    rill::yield();
  }
  last.wait();
  const double per_step = bench::seconds_since(t0) / c.prm.steps;
  rill::promise<std::vector<double>> all;
  rill::launch(read_voltages, {rill::req(r.nodes, voltage, privilege::read_only)}, all);
  voltages = all.get_future().get();
  return per_step;
}

}  // namespace r5
