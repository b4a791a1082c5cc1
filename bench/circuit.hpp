// R5's circuit (Legion's circuit example, rewritten; the whole story is at the top of
// r5_circuit.cpp): the graph every rank builds from the same seed, and the arithmetic of a step,
// shared by the versions on Rill's data layer (r5_circuit.cpp), on logical regions
// (circuit_regions.cpp) and the MPI peer.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "rill/rill.hpp"

namespace r5 {

using add = rill::reduce::sum<double>;
using bench::relative_difference;
using rill::coord_t;

constexpr int segments = 4;  // RLC segments per wire (Legion: 10)
constexpr double dt = 0.05;  // time step
constexpr double tolerance = 1e-9;

// Fields. Nodes: the same four in private and shared instances; ghost instances hold voltages, fold
// instances charges (the field the reductions go into).
constexpr rill::field<double> f_charge{1};
constexpr rill::field<double> f_capacitance{2};
constexpr rill::field<double> f_leakage{3};
constexpr rill::field<double> f_voltage{4};
// Wires.
constexpr rill::field<coord_t> f_in{10};
constexpr rill::field<coord_t> f_out{11};
constexpr rill::field<std::int32_t> f_in_kind{12};
constexpr rill::field<std::int32_t> f_out_kind{13};
constexpr rill::field<double> f_inductance{14};
constexpr rill::field<double> f_resistance{15};
constexpr rill::field<double> f_wire_cap{16};
constexpr rill::field_id f_current = 20;  // 20 .. 20 + segments - 1
constexpr rill::field_id f_inner = 40;    // voltages between segments: 40 .. 40 + segments - 2

enum node_kind : std::int32_t { private_node = 0, shared_node = 1, ghost_node = 2 };

struct params {
  int pieces = 8;
  coord_t nodes = 2048;  // per piece
  coord_t wires = 8192;  // per piece
  int cross_pct = 10;    // wires whose out node is in another piece
  int iterations = 4;    // fixed-point sweeps of a wire's solve per step
  int steps = 200;
  std::uint64_t seed = 12345;
  // Shared nodes numbered by the set of pieces touching them (a few rects per ghost exchange), or
  // in their random order (--ungrouped: about a rect per node). Every copy, reduction and fill
  // checks its points with index-space set operations and moves rect by rect, so the cost of an
  // exchange grows with its rects.
  bool grouped = true;
  int window = 0;  // deferred: steps issued ahead of the last completed one (0: all, the default)
};

// --- The graph, built identically on every rank ---------------------------------------------------

inline std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct rng {
  std::uint64_t state;
  double uniform() { return static_cast<double>(mix(state++) >> 11) * 0x1.0p-53; }  // [0, 1)
  coord_t below(coord_t n) { return static_cast<coord_t>(uniform() * static_cast<double>(n)); }
};

struct edge {                // piece p reads voltages of, and reduces charges into, piece q's nodes
  int q;                     // the neighbour
  std::vector<coord_t> ids;  // ghost nodes of p in q (sorted): p's ghost set ∩ q's shared set
};

struct circuit {
  params prm;
  // Nodes, by global id (piece p holds [p N, (p + 1) N); its shared nodes come first).
  std::vector<double> capacitance, leakage, voltage;
  std::vector<coord_t> shared;  // per piece: how many shared nodes
  // Wires, by global id (piece p holds [p W, (p + 1) W)).
  std::vector<coord_t> in, out;
  std::vector<double> inductance, resistance, wire_cap;
  // Per piece: its ghost nodes (sorted) and its edges (by neighbour).
  std::vector<std::vector<coord_t>> ghosts;
  std::vector<std::vector<edge>> edges;

  int piece_of(coord_t node) const { return static_cast<int>(node / prm.nodes); }
  node_kind kind_for(int p, coord_t node) const {
    if (piece_of(node) != p) return ghost_node;
    return node - p * prm.nodes < shared[static_cast<std::size_t>(p)] ? shared_node : private_node;
  }
};

inline circuit build_circuit(const params& prm) {
  circuit c;
  c.prm = prm;
  const int P = prm.pieces;
  const coord_t N = prm.nodes, W = prm.wires, total_nodes = P * N, total_wires = P * W;
  rng r{prm.seed};
  std::vector<double> cap(static_cast<std::size_t>(total_nodes)), leak(cap.size()), volt(cap.size());
  for (coord_t n = 0; n < total_nodes; ++n) {
    cap[static_cast<std::size_t>(n)] = 1.0 + r.uniform();
    leak[static_cast<std::size_t>(n)] = 0.01 * r.uniform();
    volt[static_cast<std::size_t>(n)] = 2.0 * r.uniform() - 1.0;
  }
  c.in.resize(static_cast<std::size_t>(total_wires));
  c.out.resize(c.in.size());
  c.inductance.resize(c.in.size());
  c.resistance.resize(c.in.size());
  c.wire_cap.resize(c.in.size());
  // Cross-piece wires go to a piece at ring distance 1 or 2 (every other piece when there are few).
  const auto ring = [P](int d) { return ((d % P) + P) % P; };
  std::vector<int> offsets;
  for (int d : {-2, -1, 1, 2})
    if (ring(d) != 0 && std::find(offsets.begin(), offsets.end(), ring(d)) == offsets.end()) offsets.push_back(ring(d));
  // touched[n]: which other pieces' wires reach node n (bit k: the piece offsets[k] before its own).
  std::vector<std::uint32_t> touched(static_cast<std::size_t>(total_nodes), 0);
  for (int p = 0; p < P; ++p)
    for (coord_t i = 0; i < W; ++i) {
      const auto w = static_cast<std::size_t>(p * W + i);
      c.resistance[w] = 1.0 + 10.0 * r.uniform();
      c.inductance[w] = dt * (0.1 + 0.4 * r.uniform());  // L / (dt R) <= 0.5: the sweeps converge
      c.wire_cap[w] = 1.0 + r.uniform();
      c.in[w] = p * N + r.below(N);
      if (r.uniform() * 100.0 < prm.cross_pct) {
        const auto k = static_cast<std::size_t>(r.below(static_cast<coord_t>(offsets.size())));
        c.out[w] = (p + offsets[k]) % P * N + r.below(N);
        touched[static_cast<std::size_t>(c.out[w])] |= 1U << k;
      } else {
        c.out[w] = p * N + r.below(N);
      }
    }
  // Renumber each piece's nodes: shared first, so that a piece's shared and private nodes are two
  // dense ranges of ids (two instances over rects). Shared nodes are grouped by the set of pieces
  // that touch them (as a partitioner would number them), so that the nodes one neighbour reads
  // form a few runs of ids: a sparse index space of few rects (see `grouped` in params).
  std::vector<coord_t> renamed(static_cast<std::size_t>(total_nodes));
  c.shared.assign(static_cast<std::size_t>(P), 0);
  for (int p = 0; p < P; ++p) {
    std::vector<coord_t> order;
    for (coord_t n = p * N; n < (p + 1) * N; ++n)
      if (touched[static_cast<std::size_t>(n)] != 0) order.push_back(n);
    if (prm.grouped)
      std::stable_sort(order.begin(), order.end(), [&](coord_t a, coord_t b) {
        return touched[static_cast<std::size_t>(a)] < touched[static_cast<std::size_t>(b)];
      });
    c.shared[static_cast<std::size_t>(p)] = static_cast<coord_t>(order.size());
    for (coord_t n = p * N; n < (p + 1) * N; ++n)
      if (touched[static_cast<std::size_t>(n)] == 0) order.push_back(n);
    for (std::size_t i = 0; i < order.size(); ++i)
      renamed[static_cast<std::size_t>(order[i])] = p * N + static_cast<coord_t>(i);
  }
  c.capacitance.resize(cap.size());
  c.leakage.resize(cap.size());
  c.voltage.resize(cap.size());
  for (std::size_t n = 0; n < cap.size(); ++n) {
    const auto to = static_cast<std::size_t>(renamed[n]);
    c.capacitance[to] = cap[n];
    c.leakage[to] = leak[n];
    c.voltage[to] = volt[n];
  }
  for (std::size_t w = 0; w < c.in.size(); ++w) {
    c.in[w] = renamed[static_cast<std::size_t>(c.in[w])];
    c.out[w] = renamed[static_cast<std::size_t>(c.out[w])];
  }
  c.ghosts.resize(static_cast<std::size_t>(P));
  c.edges.resize(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p) {
    auto& g = c.ghosts[static_cast<std::size_t>(p)];
    for (coord_t w = p * W; w < (p + 1) * W; ++w)
      if (c.piece_of(c.out[static_cast<std::size_t>(w)]) != p) g.push_back(c.out[static_cast<std::size_t>(w)]);
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    for (coord_t id : g) {
      auto& e = c.edges[static_cast<std::size_t>(p)];
      if (e.empty() || e.back().q != c.piece_of(id)) e.push_back({c.piece_of(id), {}});
      e.back().ids.push_back(id);
    }
    const coord_t s = c.shared[static_cast<std::size_t>(p)];
    if (s == 0 || s == N || g.empty())
      throw std::invalid_argument("piece " + std::to_string(p) + " has " + std::to_string(s) + " shared nodes of " +
                                  std::to_string(N) + " and " + std::to_string(g.size()) +
                                  " ghost nodes: every piece needs some of each (more wires, more nodes, or more "
                                  "cross-piece wires)");
  }
  return c;
}

inline const circuit* g_ckt = nullptr;  // the graph, in every process (read-only once built)

// --- The arithmetic, shared by the Rill tasks and the MPI peer ------------------------------------

// One wire's RLC line for one step (Legion's calc_new_currents): `iterations` fixed-point sweeps of
// the segment currents from the voltage drops and the inductance, then of the inner voltages from
// the currents. current[segments] and inner[segments - 1] are updated in place.
inline void solve_wire(double v_in, double v_out, double inductance, double resistance, double wire_cap, int iterations,
                       double* current, double* inner) {
  double v[segments + 1], old_i[segments], old_v[segments - 1];
  v[0] = v_in;
  v[segments] = v_out;
  for (int k = 0; k < segments; ++k) old_i[k] = current[k];
  for (int k = 0; k < segments - 1; ++k) old_v[k] = v[k + 1] = inner[k];
  const double l_dt = inductance / dt, recip_r = 1.0 / resistance, dt_c = dt / wire_cap;
  for (int it = 0; it < iterations; ++it) {
    for (int k = 0; k < segments; ++k) current[k] = ((v[k] - v[k + 1]) - l_dt * (current[k] - old_i[k])) * recip_r;
    for (int k = 0; k < segments - 1; ++k) v[k + 1] = old_v[k] + (current[k] - current[k + 1]) * dt_c;
  }
  for (int k = 0; k < segments - 1; ++k) inner[k] = v[k + 1];
}

inline double new_voltage(double v, double q, double c, double leak) { return (v + q / c) * (1.0 - leak); }

// calc_new_currents over wires lo..hi: each wire's line solved from its nodes' voltages, which
// voltage(kind, node) reads (from the private, shared or ghost data).
template <class Ids, class Kinds, class Reals, class Line, class Voltage>
void solve_wires(coord_t lo, coord_t hi, int iterations, const Ids& in, const Ids& out, const Kinds& in_kind,
                 const Kinds& out_kind, const Reals& l, const Reals& r, const Reals& wc, const std::vector<Line>& cur,
                 const std::vector<Line>& inner, Voltage voltage) {
  for (coord_t w = lo; w <= hi; ++w) {
    double i[segments], v[segments - 1];
    for (int k = 0; k < segments; ++k) i[k] = cur[static_cast<std::size_t>(k)][{w}];
    for (int k = 0; k < segments - 1; ++k) v[k] = inner[static_cast<std::size_t>(k)][{w}];
    solve_wire(voltage(in_kind[{w}], in[{w}]), voltage(out_kind[{w}], out[{w}]), l[{w}], r[{w}], wc[{w}], iterations, i,
               v);
    for (int k = 0; k < segments; ++k) cur[static_cast<std::size_t>(k)][{w}] = i[k];
    for (int k = 0; k < segments - 1; ++k) inner[static_cast<std::size_t>(k)][{w}] = v[k];
  }
}

// The sparse space of some node ids.
inline rill::index_space<1> space_of(const std::vector<coord_t>& ids) {
  std::vector<rill::point<1>> pts;
  pts.reserve(ids.size());
  for (coord_t id : ids) pts.push_back(rill::point<1>{id});
  return rill::index_space<1>::from_points(pts);
}

// What piece p's wires are, written over the wires lo..hi of these fields.
inline void init_wires(const circuit& c, int p, coord_t lo, coord_t hi, const rill::accessor<coord_t, 1>& in,
                       const rill::accessor<coord_t, 1>& out, const rill::accessor<std::int32_t, 1>& in_kind,
                       const rill::accessor<std::int32_t, 1>& out_kind, const rill::accessor<double, 1>& l,
                       const rill::accessor<double, 1>& r, const rill::accessor<double, 1>& wc) {
  for (coord_t w = lo; w <= hi; ++w) {
    const auto i = static_cast<std::size_t>(w);
    in[{w}] = c.in[i];
    out[{w}] = c.out[i];
    in_kind[{w}] = c.kind_for(p, c.in[i]);
    out_kind[{w}] = c.kind_for(p, c.out[i]);
    l[{w}] = c.inductance[i];
    r[{w}] = c.resistance[i];
    wc[{w}] = c.wire_cap[i];
  }
}

}  // namespace r5
