// R5 — deferred against implicit execution on a Circuit-like application (Realm §9, §9.3, Fig. 7).
// Run as an MPI singleton with --rill:ranks=1, or under `mpirun -np N`.
//
// The circuit (Legion's circuit example, rewritten): an irregular graph of P pieces (default 8, the
// same total at every rank count: strong scaling), each of N nodes and W wires (default 2048 and
// 8192: a step takes ~2 ms on one core), pieces round-robin over the ranks; 200 steps a run (quick:
// 50). A wire's in node is a node of its piece; its out node too, except for a fraction (default
// 10 %) of wires whose out node is a random node of one of the 4 pieces nearest on a ring of pieces
// (distance 1 or 2). Nodes that other pieces' wires touch are their piece's *shared* nodes (about a
// third here; numbered first in the piece, grouped by the pieces that touch them), the rest
// *private*; a piece's *ghost* nodes are the other pieces' shared nodes its wires touch. Everything
// comes from a seed, the same on every rank.
// Each step has Legion's three phases, in doubles:
//   calculate new currents  each wire solves its RLC line (4 segments, a few fixed-point sweeps)
//                           from the voltages of its two nodes (private, shared or ghost)
//   distribute charge       each wire adds dt x current to its two nodes: its piece's private and
//                           shared nodes directly, ghost nodes into a fold instance, which is then
//                           reduced into the owners' shared nodes (atomic folds, in any order)
//   update voltages         every node of the piece: v = (v + q / C) (1 - leakage), q = 0
//
// Rill (Realm's data layer): per piece, private nodes in memory::system(owner), shared nodes and
// the ghost instance (a sparse index_space<1> of ghost node ids) in memory::registered(owner) -- as
// Fig. 7 puts shared and ghost data where other nodes reach them --, wires in system memory, and a
// fold instance over the ghost set in system memory (a wire's segment currents and inner voltages
// are grouped side by side, as the MPI peer stores them). Per step and piece: a rill::copy of voltages
// from each neighbour's shared instance into the ghost instance (over the intersection of their
// index spaces), the three tasks on the owner rank, a rill::reduce_into<sum<double>> from the fold
// instance into each neighbour's shared instance, and a rill::fill that resets the fold instance.
// The top-level task on rank 0 issues every operation, as Legion's top-level task does.
//   deferred  the whole run (every step) is issued at once, each operation with the merge of the
//             events it depends on as precondition (the graph is in issue_step); only the end is
//             waited for. The issuing task yields after each step so that, with one worker per
//             rank, rank 0's own tasks and messages are served while it issues.
//   implicit  the same code issues the same operations in the same order, but waits for each
//             operation's precondition immediately before issuing it, with no precondition -- the
//             method of §9.3 ("wait for events in the application code immediately before the
//             dependent operation rather than supplying them as preconditions").
// Peer, in processes of its own at MPI_THREAD_SINGLE that take turns with Rill's repetition by
// repetition (peer_apart.hpp; bench/run R5 starts both): a bulk-synchronous MPI version on plain
// arrays (one piece set per rank; ghost voltages and ghost charges exchanged with persistent
// Isend/Irecv, receives posted a phase ahead, contiguous buffers), the same arithmetic in the same
// wire order. Its final voltages travel with its times, for the check.
// Metric: time per step (the run from the first issue to the last completion, over steps). Check:
// the final voltages of deferred, implicit and MPI agree within a relative 1e-9 (max |a - b| over
// max |a|): charges from several pieces reach a shared node in different orders, so the last bits
// may differ; a larger difference fails the run (exit 1). Paper: deferred Circuit 19-22 % faster
// than implicit at 16 nodes (compute-bound); Fluid up to 135 %.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <tuple>
#include <utility>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "circuit.hpp"
#include "circuit_regions.hpp"
#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"

namespace {

using namespace r5;

// --- Rill ------------------------------------------------------------------------------------------

// A piece's instances: trivially copyable, so tasks on other ranks take them as an argument.
struct piece_instances {
  rill::instance priv, shared, ghost, fold, wires;
};

struct piece {
  int owner;
  piece_instances inst;
  std::vector<rill::index_space<1>> over;  // per edge: the points copied and reduced
};

void init_piece(int p, piece_instances pi) {
  const circuit& c = *g_ckt;
  for (rill::instance nodes : {pi.priv, pi.shared}) {
    const rill::accessor<double, 1> q(nodes, f_charge), cap(nodes, f_capacitance), leak(nodes, f_leakage),
        v(nodes, f_voltage);
    for (coord_t n = q.bounds().lo[0]; n <= q.bounds().hi[0]; ++n) {
      const auto i = static_cast<std::size_t>(n);
      q[{n}] = 0;
      cap[{n}] = c.capacitance[i];
      leak[{n}] = c.leakage[i];
      v[{n}] = c.voltage[i];
    }
  }
  const rill::accessor<coord_t, 1> in(pi.wires, f_in), out(pi.wires, f_out);
  const rill::accessor<std::int32_t, 1> in_kind(pi.wires, f_in_kind), out_kind(pi.wires, f_out_kind);
  const rill::accessor<double, 1> l(pi.wires, f_inductance), r(pi.wires, f_resistance), wc(pi.wires, f_wire_cap);
  init_wires(c, p, in.bounds().lo[0], in.bounds().hi[0], in, out, in_kind, out_kind, l, r, wc);
  // The line state starts at rest.
  for (rill::field_id f = f_current; f < f_current + segments; ++f) {
    const rill::accessor<double, 1> a(pi.wires, f);
    for (coord_t w = a.bounds().lo[0]; w <= a.bounds().hi[0]; ++w) a[{w}] = 0;
  }
  for (rill::field_id f = f_inner; f < f_inner + segments - 1; ++f) {
    const rill::accessor<double, 1> a(pi.wires, f);
    for (coord_t w = a.bounds().lo[0]; w <= a.bounds().hi[0]; ++w) a[{w}] = 0;
  }
}

void calc_new_currents(int iterations, piece_instances pi) {
  const rill::accessor<coord_t, 1> in(pi.wires, f_in), out(pi.wires, f_out);
  const rill::accessor<std::int32_t, 1> in_kind(pi.wires, f_in_kind), out_kind(pi.wires, f_out_kind);
  const rill::accessor<double, 1> l(pi.wires, f_inductance), r(pi.wires, f_resistance), wc(pi.wires, f_wire_cap);
  const rill::accessor<double, 1> pv(pi.priv, f_voltage), sv(pi.shared, f_voltage), gv(pi.ghost, f_voltage);
  std::vector<rill::accessor<double, 1>> cur, inner;
  for (int k = 0; k < segments; ++k) cur.emplace_back(pi.wires, f_current + k);
  for (int k = 0; k < segments - 1; ++k) inner.emplace_back(pi.wires, f_inner + k);
  const auto voltage = [&](std::int32_t kind, coord_t n) {
    return kind == private_node ? pv[{n}] : kind == shared_node ? sv[{n}] : gv[{n}];
  };
  solve_wires(in.bounds().lo[0], in.bounds().hi[0], iterations, in, out, in_kind, out_kind, l, r, wc, cur, inner,
              voltage);
}

void distribute_charge(piece_instances pi) {
  const rill::accessor<coord_t, 1> in(pi.wires, f_in), out(pi.wires, f_out);
  const rill::accessor<std::int32_t, 1> in_kind(pi.wires, f_in_kind), out_kind(pi.wires, f_out_kind);
  const rill::accessor<double, 1> first(pi.wires, f_current), last(pi.wires, f_current + segments - 1);
  const rill::accessor<double, 1> pq(pi.priv, f_charge), sq(pi.shared, f_charge);
  // Only this task folds into the fold instance (its reduce_into and reset come after): exclusive.
  const rill::reducer<add, 1, true> ghost(pi.fold, f_charge);
  // Plain adds into private and shared nodes: the neighbours' reductions into the shared nodes come
  // after this task.
  const auto deposit = [&](std::int32_t kind, coord_t n, double q) {
    if (kind == private_node)
      pq[{n}] += q;
    else if (kind == shared_node)
      sq[{n}] += q;
    else
      ghost({n}, q);
  };
  for (coord_t w = in.bounds().lo[0]; w <= in.bounds().hi[0]; ++w) {
    deposit(in_kind[{w}], in[{w}], -dt * first[{w}]);
    deposit(out_kind[{w}], out[{w}], dt * last[{w}]);
  }
}

void update_voltages(piece_instances pi) {
  for (rill::instance nodes : {pi.priv, pi.shared}) {
    const rill::accessor<double, 1> q(nodes, f_charge), cap(nodes, f_capacitance), leak(nodes, f_leakage),
        v(nodes, f_voltage);
    for (coord_t n = q.bounds().lo[0]; n <= q.bounds().hi[0]; ++n) {
      v[{n}] = new_voltage(v[{n}], q[{n}], cap[{n}], leak[{n}]);
      q[{n}] = 0;
    }
  }
}

std::vector<double> read_voltages(piece_instances pi) {  // shared then private: in id order
  std::vector<double> out;
  for (rill::instance nodes : {pi.shared, pi.priv}) {
    const rill::accessor<double, 1> v(nodes, f_voltage);
    for (coord_t n = v.bounds().lo[0]; n <= v.bounds().hi[0]; ++n) out.push_back(v[{n}]);
  }
  return out;
}

std::vector<piece> create_pieces(const circuit& c) {
  const int ranks = rill::rank_n();
  const coord_t N = c.prm.nodes, W = c.prm.wires;
  const rill::field_space node_fields{f_charge, f_capacitance, f_leakage, f_voltage};
  rill::field_space wire_fields{f_in, f_out, f_in_kind, f_out_kind, f_inductance, f_resistance, f_wire_cap};
  for (int k = 0; k < segments; ++k) wire_fields.add(rill::field<double>{f_current + k});
  for (int k = 0; k < segments - 1; ++k) wire_fields.add(rill::field<double>{f_inner + k});
  // A wire's line state (segment currents, inner voltages) side by side, as the MPI peer stores it.
  std::vector<rill::field_id> line;
  for (int k = 0; k < segments; ++k) line.push_back(f_current + k);
  for (int k = 0; k < segments - 1; ++k) line.push_back(f_inner + k);
  const rill::layout line_layout = rill::layout::grouped({line});
  std::vector<piece> pieces;
  std::vector<rill::event> ready;
  for (int p = 0; p < c.prm.pieces; ++p) {
    const int owner = p % ranks;
    const coord_t lo = p * N, s = c.shared[static_cast<std::size_t>(p)];
    const rill::index_space<1> ghosts = space_of(c.ghosts[static_cast<std::size_t>(p)]);
    auto priv = rill::instance::create(rill::memory::system(owner), rill::rect<1>{lo + s, lo + N - 1}, node_fields);
    auto shared = rill::instance::create(rill::memory::registered(owner), rill::rect<1>{lo, lo + s - 1}, node_fields);
    auto ghost = rill::instance::create(rill::memory::registered(owner), ghosts, rill::field_space{f_voltage});
    auto fold = rill::create_fold_instance<add>(rill::memory::system(owner), ghosts, f_charge);
    auto wires = rill::instance::create(rill::memory::system(owner), rill::rect<1>{p * W, p * W + W - 1}, wire_fields,
                                        line_layout);
    piece pc{owner, {priv.inst, shared.inst, ghost.inst, fold.inst, wires.inst}, {}};
    for (const edge& e : c.edges[static_cast<std::size_t>(p)]) pc.over.push_back(space_of(e.ids));
    pieces.push_back(std::move(pc));
    for (const rill::event& e : {priv.ready, shared.ready, ghost.ready, fold.ready, wires.ready}) ready.push_back(e);
  }
  rill::merge(ready).wait();
  return pieces;
}

// Puts every piece back in its initial state (and every fold instance at the identity).
void reset_pieces(const std::vector<piece>& pieces) {
  std::vector<rill::event> done;
  for (std::size_t p = 0; p < pieces.size(); ++p) {
    done.push_back(rill::proc(pieces[p].owner).spawn(init_piece, static_cast<int>(p), pieces[p].inst));
    done.push_back(rill::fill(pieces[p].inst.fold, f_charge, 0.0));
  }
  rill::merge(done).wait();
}

// The events each piece's next operations depend on, carried from step to step.
struct frontier {
  std::vector<rill::event> updated;   // update_voltages of the step before (or the reset)
  std::vector<rill::event> currents;  // calc_new_currents of the step before: it read the ghosts
  std::vector<rill::event> refilled;  // the fold instance back at the identity
};

// Issues one step. `implicit`: wait for each operation's precondition right before issuing it (and
// issue it with none), instead of passing it as the precondition.
void issue_step(const circuit& c, const std::vector<piece>& pieces, frontier& f, bool implicit) {
  const auto gate = [implicit](rill::event pre) {
    if (!implicit) return pre;
    pre.wait();
    return rill::event::none();
  };
  const std::size_t P = pieces.size();
  std::vector<std::vector<rill::event>> copied(P), reduced(P), read_from(P), reduced_into(P);
  // Ghost voltages: neighbour q's shared voltages of the step before (RAW on update_voltages of q),
  // into p's ghost instance once p's currents of the step before have read it (WAR).
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t k = 0; k < pieces[p].over.size(); ++k) {
      const auto q = static_cast<std::size_t>(c.edges[p][k].q);
      const rill::event e = rill::copy(pieces[q].inst.shared, pieces[p].inst.ghost, {f_voltage}, pieces[p].over[k],
                                       gate(rill::merge(f.updated[q], f.currents[p])));
      copied[p].push_back(e);
      read_from[q].push_back(e);
    }
  // Currents: after the ghosts arrived and p's own voltages were updated (which also follows the
  // last distribute_charge's read of the currents).
  for (std::size_t p = 0; p < P; ++p) {
    copied[p].push_back(f.updated[p]);
    f.currents[p] =
        rill::proc(pieces[p].owner)
            .spawn(rill::after(gate(rill::merge(copied[p]))), calc_new_currents, c.prm.iterations, pieces[p].inst);
  }
  // Charges: after the currents, into a fold instance back at the identity.
  std::vector<rill::event> distributed(P);
  for (std::size_t p = 0; p < P; ++p)
    distributed[p] =
        rill::proc(pieces[p].owner)
            .spawn(rill::after(gate(rill::merge(f.currents[p], f.refilled[p]))), distribute_charge, pieces[p].inst);
  // Ghost charges into each neighbour's shared nodes: after p distributed, and after q's own
  // distribute_charge (which adds into them without atomics; it follows q's update of the step
  // before, which read and reset the charges). Reductions into one instance commute (atomic
  // folds), so they are not ordered among themselves.
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t k = 0; k < pieces[p].over.size(); ++k) {
      const auto q = static_cast<std::size_t>(c.edges[p][k].q);
      const rill::event e =
          rill::reduce_into<add>(pieces[p].inst.fold, f_charge, pieces[q].inst.shared, f_charge, pieces[p].over[k],
                                 gate(rill::merge(distributed[p], distributed[q])));
      reduced[p].push_back(e);
      reduced_into[q].push_back(e);
    }
  // The fold instance back at the identity once every reduction out of it has read it.
  for (std::size_t p = 0; p < P; ++p)
    f.refilled[p] = rill::fill(pieces[p].inst.fold, f_charge, 0.0, gate(rill::merge(reduced[p])));
  // Voltages: after p's own charges, every reduction into p's shared nodes, and every copy out of
  // them (WAR: the neighbours' ghosts read the voltages of the step before).
  for (std::size_t p = 0; p < P; ++p) {
    std::vector<rill::event> pre = std::move(reduced_into[p]);
    pre.insert(pre.end(), read_from[p].begin(), read_from[p].end());
    pre.push_back(distributed[p]);
    f.updated[p] =
        rill::proc(pieces[p].owner).spawn(rill::after(gate(rill::merge(pre))), update_voltages, pieces[p].inst);
  }
}

// Seconds per step of one run (from the reset state).
double run_rill(const circuit& c, const std::vector<piece>& pieces, bool implicit) {
  reset_pieces(pieces);
  const std::size_t P = pieces.size();
  frontier f{std::vector<rill::event>(P), std::vector<rill::event>(P), std::vector<rill::event>(P)};
  std::vector<rill::event> step_done;  // deferred with a window: each step's last operations
  const auto t0 = bench::clock::now();
  for (int s = 0; s < c.prm.steps; ++s) {
    // --window W (not the default): issue at most W steps ahead of the last completed one, as
    // Legion's runtime bounds how far its top-level task runs ahead.
    if (!implicit && c.prm.window > 0 && s >= c.prm.window)
      step_done[static_cast<std::size_t>(s - c.prm.window)].wait();
    issue_step(c, pieces, f, implicit);
    if (c.prm.window > 0) step_done.push_back(rill::merge(f.updated));
    // One worker per rank: let rank 0's own tasks and incoming requests run between steps.
    if (!implicit) rill::yield();
  }
  std::vector<rill::event> last = f.updated;
  last.insert(last.end(), f.refilled.begin(), f.refilled.end());
  rill::merge(last).wait();
  return bench::seconds_since(t0) / c.prm.steps;
}

std::vector<double> rill_voltages(const std::vector<piece>& pieces) {
  std::vector<rill::future<std::vector<double>>> parts;
  for (const piece& p : pieces) parts.push_back(rill::rpc(p.owner, read_voltages, p.inst));
  std::vector<double> all;
  for (auto& f : parts) {
    const std::vector<double> v = f.get();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// --- The MPI peer -----------------------------------------------------------------------------------

// This rank's share of the circuit on plain arrays: its pieces' nodes (in piece order) then its ghost
// nodes (grouped by owner rank, by id within), and its pieces' wires in order.
struct mpi_circuit {
  std::size_t owned = 0;  // nodes of this rank's pieces
  std::vector<double> v, q, cap, leak;
  std::vector<std::int32_t> in, out;  // wires' nodes, as local indices
  std::vector<double> l, r, wc;
  std::vector<double> current, inner;  // segments (resp. segments - 1) per wire
  // Per neighbour rank: the ghost block received from it (offset into the ghost part, count), and
  // the local indices of this rank's nodes it ghosts (sent to it, in its order).
  std::vector<int> neighbours;
  std::vector<std::size_t> ghost_at, ghost_count;
  std::vector<std::vector<std::int32_t>> sent;
};

mpi_circuit mpi_layout(const circuit& c, int me, int ranks) {
  mpi_circuit m;
  const coord_t N = c.prm.nodes, W = c.prm.wires;
  const auto owner = [&](coord_t node) { return c.piece_of(node) % ranks; };
  std::vector<std::int32_t> local(c.voltage.size(), -1);
  for (int p = me; p < c.prm.pieces; p += ranks)
    for (coord_t n = p * N; n < (p + 1) * N; ++n)
      local[static_cast<std::size_t>(n)] = static_cast<std::int32_t>(m.owned++);
  // The ghosts of rank `reader`: nodes of other ranks its wires touch, by owner then id.
  const auto ghosts_of = [&](int reader) {
    std::vector<std::pair<int, coord_t>> g;
    for (int p = reader; p < c.prm.pieces; p += ranks)
      for (const edge& e : c.edges[static_cast<std::size_t>(p)])
        if (e.q % ranks != reader)
          for (coord_t id : e.ids) g.push_back({owner(id), id});
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    return g;
  };
  const auto mine = ghosts_of(me);
  for (std::size_t i = 0; i < mine.size(); ++i)
    local[static_cast<std::size_t>(mine[i].second)] = static_cast<std::int32_t>(m.owned + i);
  for (int other = 0; other < ranks; ++other) {
    if (other == me) continue;
    std::size_t at = 0, count = 0;
    for (std::size_t i = 0; i < mine.size(); ++i)
      if (mine[i].first == other && count++ == 0) at = i;
    std::vector<std::int32_t> to_send;
    for (const auto& [o, id] : ghosts_of(other))
      if (o == me) to_send.push_back(local[static_cast<std::size_t>(id)]);
    if (count == 0 && to_send.empty()) continue;
    m.neighbours.push_back(other);
    m.ghost_at.push_back(at);
    m.ghost_count.push_back(count);
    m.sent.push_back(std::move(to_send));
  }
  const std::size_t all = m.owned + mine.size();
  m.v.assign(all, 0);
  m.q.assign(all, 0);
  m.cap.assign(m.owned, 0);
  m.leak.assign(m.owned, 0);
  for (int p = me; p < c.prm.pieces; p += ranks)
    for (coord_t n = p * N; n < (p + 1) * N; ++n) {
      const auto i = static_cast<std::size_t>(local[static_cast<std::size_t>(n)]);
      m.v[i] = c.voltage[static_cast<std::size_t>(n)];
      m.cap[i] = c.capacitance[static_cast<std::size_t>(n)];
      m.leak[i] = c.leakage[static_cast<std::size_t>(n)];
    }
  for (int p = me; p < c.prm.pieces; p += ranks)
    for (coord_t w = p * W; w < (p + 1) * W; ++w) {
      const auto i = static_cast<std::size_t>(w);
      m.in.push_back(local[static_cast<std::size_t>(c.in[i])]);
      m.out.push_back(local[static_cast<std::size_t>(c.out[i])]);
      m.l.push_back(c.inductance[i]);
      m.r.push_back(c.resistance[i]);
      m.wc.push_back(c.wire_cap[i]);
    }
  m.current.assign(m.in.size() * segments, 0);
  m.inner.assign(m.in.size() * (segments - 1), 0);
  return m;
}

// Seconds per step of the bulk-synchronous MPI version; `voltages` gets (on rank 0) every node's
// final voltage by id.
double run_mpi(const circuit& c, std::vector<double>& voltages) {
  const int me = bench::mpi_peer::world_rank(), ranks = bench::mpi_peer::world_size();
  mpi_circuit m = mpi_layout(c, me, ranks);
  constexpr int tag_voltage = 51, tag_charge = 52;
  const std::size_t k = m.neighbours.size();
  std::vector<std::vector<double>> v_out(k), q_in(k);
  // Persistent requests: ghost voltages in (straight into the ghost block), shared voltages out
  // (packed), ghost charges out (straight from the ghost block), shared charges in.
  std::vector<MPI_Request> v_recv(k), v_send(k), q_send(k), q_recv(k);
  for (std::size_t i = 0; i < k; ++i) {
    const int peer = m.neighbours[i];
    v_out[i].resize(m.sent[i].size());
    q_in[i].resize(m.sent[i].size());
    double* ghosts = m.v.data() + m.owned + m.ghost_at[i];
    double* ghost_q = m.q.data() + m.owned + m.ghost_at[i];
    const int g = static_cast<int>(m.ghost_count[i]), s = static_cast<int>(m.sent[i].size());
    MPI_Recv_init(ghosts, g, MPI_DOUBLE, peer, tag_voltage, MPI_COMM_WORLD, &v_recv[i]);
    MPI_Send_init(v_out[i].data(), s, MPI_DOUBLE, peer, tag_voltage, MPI_COMM_WORLD, &v_send[i]);
    MPI_Send_init(ghost_q, g, MPI_DOUBLE, peer, tag_charge, MPI_COMM_WORLD, &q_send[i]);
    MPI_Recv_init(q_in[i].data(), s, MPI_DOUBLE, peer, tag_charge, MPI_COMM_WORLD, &q_recv[i]);
  }
  const auto start = [](std::vector<MPI_Request>& r) {
    if (!r.empty()) MPI_Startall(static_cast<int>(r.size()), r.data());
  };
  const auto wait = [](std::vector<MPI_Request>& r) {
    if (!r.empty()) MPI_Waitall(static_cast<int>(r.size()), r.data(), MPI_STATUSES_IGNORE);
  };
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = bench::clock::now();
  start(v_recv);
  const std::size_t wires = m.in.size();
  for (int s = 0; s < c.prm.steps; ++s) {
    start(q_recv);  // the charges come back after the currents: post their receives now
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j < m.sent[i].size(); ++j) v_out[i][j] = m.v[static_cast<std::size_t>(m.sent[i][j])];
    start(v_send);
    wait(v_recv);
    for (std::size_t w = 0; w < wires; ++w)
      solve_wire(m.v[static_cast<std::size_t>(m.in[w])], m.v[static_cast<std::size_t>(m.out[w])], m.l[w], m.r[w],
                 m.wc[w], c.prm.iterations, &m.current[w * segments], &m.inner[w * (segments - 1)]);
    for (std::size_t w = 0; w < wires; ++w) {
      m.q[static_cast<std::size_t>(m.in[w])] += -dt * m.current[w * segments];
      m.q[static_cast<std::size_t>(m.out[w])] += dt * m.current[w * segments + segments - 1];
    }
    start(q_send);
    wait(q_recv);
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j < m.sent[i].size(); ++j) m.q[static_cast<std::size_t>(m.sent[i][j])] += q_in[i][j];
    if (s + 1 < c.prm.steps) start(v_recv);  // next step's ghosts: posted before any peer can send them
    for (std::size_t n = 0; n < m.owned; ++n) {
      m.v[n] = new_voltage(m.v[n], m.q[n], m.cap[n], m.leak[n]);
      m.q[n] = 0;
    }
    wait(v_send);
    wait(q_send);
    std::fill(m.q.begin() + static_cast<std::ptrdiff_t>(m.owned), m.q.end(), 0.0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double per_step = bench::seconds_since(t0) / c.prm.steps;
  for (auto* rs : {&v_recv, &v_send, &q_send, &q_recv})
    for (MPI_Request& r : *rs) MPI_Request_free(&r);
  // Every rank's nodes to rank 0: its pieces' nodes in piece order.
  const int owned = static_cast<int>(m.owned);
  std::vector<int> counts(static_cast<std::size_t>(ranks)), displs(static_cast<std::size_t>(ranks));
  MPI_Gather(&owned, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
  std::vector<double> gathered(me == 0 ? c.voltage.size() : 0);
  MPI_Gatherv(m.v.data(), owned, MPI_DOUBLE, gathered.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  if (me == 0) {
    voltages.assign(c.voltage.size(), 0);
    const auto N = static_cast<std::size_t>(c.prm.nodes);
    std::size_t at = 0;
    for (int r = 0; r < ranks; ++r)
      for (int p = r; p < c.prm.pieces; p += ranks, at += N)
        std::copy_n(gathered.begin() + static_cast<std::ptrdiff_t>(at), N,
                    voltages.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(p) * N));
  }
  return per_step;
}

}  // namespace

int main(int argc, char** argv) {
  bench::peer_apart::init_mpi(argc, argv);
  const int me = bench::mpi_peer::world_rank(), mpi_ranks = bench::mpi_peer::world_size();
  CLI::App app{"R5: a Circuit-like application, deferred against implicit, and bulk-synchronous MPI"};
  app.allow_extras();
  params prm;
  int reps = 5;
  bool quick = false;
  app.add_option("--pieces", prm.pieces, "pieces of the circuit (all ranks together)");
  app.add_option("--nodes", prm.nodes, "nodes per piece");
  app.add_option("--wires", prm.wires, "wires per piece");
  app.add_option("--cross", prm.cross_pct, "percentage of wires going to another piece");
  app.add_option("--iterations", prm.iterations, "fixed-point sweeps of a wire's solve per step");
  app.add_option("--steps", prm.steps, "time steps per run");
  app.add_option("--window", prm.window, "deferred: issue at most this many steps ahead (0: every step at once)");
  app.add_flag("!--ungrouped", prm.grouped, "number shared nodes in random order (sparse spaces of many rects)");
  app.add_option("--reps", reps, "repetitions");
  app.add_flag("--quick", quick, "fewer steps and repetitions");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files, true);
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    reps = std::min(reps, 3);
    prm.steps = std::min(prm.steps, 50);
  }
  if (prm.pieces < 2 || prm.nodes < 2 || prm.wires < 1 || prm.steps < 1 || prm.iterations < 1) {
    if (me == 0) std::fputs("r5: need --pieces >= 2, --nodes >= 2, --wires, --steps, --iterations >= 1\n", stderr);
    MPI_Finalize();
    return 2;
  }
  circuit ckt;
  try {
    ckt = build_circuit(prm);
  } catch (const std::exception& e) {
    if (me == 0) std::fprintf(stderr, "r5: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  g_ckt = &ckt;
  coord_t shared_total = 0, ghost_total = 0;
  for (int p = 0; p < prm.pieces; ++p) {
    shared_total += ckt.shared[static_cast<std::size_t>(p)];
    ghost_total += static_cast<coord_t>(ckt.ghosts[static_cast<std::size_t>(p)].size());
  }

  std::vector<double> deferred, implicit, regions, mpi;
  std::vector<double> mpi_v;  // the MPI version's final voltages (rank 0), the same in every repetition
  double diff_deferred = 0, diff_implicit = 0, diff_regions = 0, diff_rill = 0, max_voltage = 0;
  bench::mpi_peer::rill_shape shape;
  const bench::peer_apart::turns turns(peer_files.turns, "rill_bench_r5", reps);
  using side = bench::peer_apart::turns::side;
  const char* const program = "rill_bench_r5";
  const nlohmann::json peer_config = {{"ranks", mpi_ranks}, {"pieces", prm.pieces},   {"nodes", prm.nodes},
                                      {"wires", prm.wires}, {"cross", prm.cross_pct}, {"iterations", prm.iterations},
                                      {"steps", prm.steps}, {"grouped", prm.grouped}, {"reps", reps}};
  if (!peer_files.only.empty()) {
    turns.take(side::peer, peer_config, [&](int rep) {
      mpi.push_back(run_mpi(ckt, mpi_v));
      if (me == 0) bench::progress("R5 rep {}: MPI {:.3f} ms/step", rep, mpi.back() * 1e3);
    });
    turns.hand_over(peer_files.only, program, peer_config, {{"seconds_per_step", mpi}, {"voltages", mpi_v}});
    MPI_Finalize();
    return 0;
  }
  if (peer_files.results.empty()) {
    bench::peer_apart::note_no_peer("R5");
    if (me == 0) bench::progress("R5: without the MPI version, the final voltages are checked between Rill's versions");
  }
  std::vector<std::vector<double>> rill_v;  // per repetition: deferred, implicit, regions
  turns.take(side::rill, peer_config, [&](int rep) {
    shape = bench::mpi_peer::rill_repetition(argc, argv, [&] {
      const std::vector<piece> pieces = create_pieces(ckt);
      // Rotate which goes first, so that none always runs on a warmer machine.
      std::vector<double> v_deferred, v_implicit, v_regions;
      for (int k = 0; k < 3; ++k) {
        const int version = (k + rep) % 3;
        if (version == 2) {
          regions.push_back(run_regions(ckt, v_regions));
          continue;
        }
        const bool run_implicit = version == 1;
        const double t = run_rill(ckt, pieces, run_implicit);
        (run_implicit ? implicit : deferred).push_back(t);
        (run_implicit ? v_implicit : v_deferred) = rill_voltages(pieces);
      }
      diff_rill = std::max(diff_rill, relative_difference(v_implicit, v_deferred));
      diff_regions = std::max(diff_regions, relative_difference(v_deferred, v_regions));
      bench::progress("R5 rep {}: deferred {:.3f} ms/step, implicit {:.3f} ms/step, regions {:.3f} ms/step", rep,
                      deferred.back() * 1e3, implicit.back() * 1e3, regions.back() * 1e3);
      rill_v.insert(rill_v.end(), {std::move(v_deferred), std::move(v_implicit), std::move(v_regions)});
      std::vector<rill::event> gone;
      for (const piece& p : pieces)
        for (rill::instance i : {p.inst.priv, p.inst.shared, p.inst.ghost, p.inst.fold, p.inst.wires})
          gone.push_back(i.destroy());
      rill::merge(gone).wait();
    });
  });
  if (!peer_files.results.empty()) {
    std::tie(mpi, mpi_v) = turns.collect(peer_files.results, program, peer_config, [](const nlohmann::json& in) {
      return std::pair{bench::peer_apart::series(in, "seconds_per_step"), in.at("voltages").get<std::vector<double>>()};
    });
    diff_regions = 0;  // against MPI's from here
    for (std::size_t i = 0; i + 2 < rill_v.size(); i += 3) {
      diff_deferred = std::max(diff_deferred, relative_difference(mpi_v, rill_v[i]));
      diff_implicit = std::max(diff_implicit, relative_difference(mpi_v, rill_v[i + 1]));
      diff_regions = std::max(diff_regions, relative_difference(mpi_v, rill_v[i + 2]));
    }
    for (double x : mpi_v) max_voltage = std::max(max_voltage, std::abs(x));
  }
  int ok = std::max({diff_deferred, diff_implicit, diff_regions, diff_rill}) <= tolerance ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (me == 0) {
    const nlohmann::json extra = {
        {"ranks", shape.ranks},
        {"mpi_ranks", mpi_ranks},
        {"workers", shape.workers},
        {"pieces", prm.pieces},
        {"nodes_per_piece", prm.nodes},
        {"wires_per_piece", prm.wires},
        {"cross_piece_wires_pct", prm.cross_pct},
        {"segments", segments},
        {"shared_nodes_grouped", prm.grouped},
        {"deferred_window", prm.window},
        {"iterations", prm.iterations},
        {"steps", prm.steps},
        {"shared_nodes", shared_total},
        {"ghost_nodes", ghost_total},
        {"max_rel_diff_deferred_vs_mpi", diff_deferred},
        {"max_rel_diff_implicit_vs_mpi", diff_implicit},
        {"max_rel_diff_regions_vs_mpi", diff_regions},
        {"max_rel_diff_deferred_vs_implicit", diff_rill},
        {"max_abs_voltage", max_voltage},
        {"tolerance", tolerance},
        {"checked", ok == 1},
        {"implicit_method", "wait for each operation's precondition right before issuing it (§9.3)"},
        {"reference", "Realm §9.3: Circuit deferred 19-22% faster than implicit at 16 nodes"}};
    const std::string where = ", " + std::to_string(shape.ranks) + " rank(s)";
    const std::string mpi_name = "MPI bulk-synchronous (persistent Isend/Irecv)";
    const auto emit = [&](const std::string& name, const std::vector<double>& value, const std::string& peer,
                          const std::vector<double>& peer_value) {
      bench::emit_ms("R5", name + where, "time per step", value, peer, peer_value, extra);
    };
    emit("deferred", deferred, "implicit", implicit);
    emit("deferred vs MPI", deferred, mpi_name, mpi);
    emit("implicit vs MPI", implicit, mpi_name, mpi);
    // The same circuit on logical regions (circuit_regions.cpp): the price of letting the
    // runtime find the dependences, copies and reductions the deferred version spells out.
    emit("regions vs deferred", regions, "deferred (explicit copies)", deferred);
    emit("regions vs MPI", regions, mpi_name, mpi);
    if (!ok)
      std::fprintf(stderr,
                   "r5: final voltages differ by more than %g (relative): deferred %g, implicit %g, regions %g, "
                   "deferred vs implicit %g\n",
                   tolerance, diff_deferred, diff_implicit, diff_regions, diff_rill);
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
