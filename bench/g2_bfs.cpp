// G2 (Grappa Fig. 3, Graph500): breadth-first search on a Kronecker graph.
//
// The graph is Graph500's (bench/kronecker.hpp, labels permuted, edge factor 16), undirected,
// spread cyclically: vertex v lives on rank v mod R, with its adjacency. Each BFS is level by
// level. Rill: a rank expands its frontier, setting the parents of its own vertices in place and
// sending the (vertex, parent) pairs for another rank's vertices in active messages of 512 pairs,
// each leaving as soon as it fills, so that communication overlaps the expansion; the level ends
// once every rank has received the pairs the others announced (one message per pair of ranks),
// and one allreduce says whether any rank found new vertices. The
// peer, in the same processes under mpirun, is the classic level-synchronous MPI BFS: the same
// expansion into per-rank buffers, then MPI_Alltoall of the counts and MPI_Alltoallv of the pairs.
//
// Both run from the same 16 (or more) roots, chosen among vertices with edges. Every BFS tree is
// validated by the five Graph500 checks; TEPS = input edges in the root's component / seconds,
// and the figure is the harmonic mean over the roots, as Graph500 reports it.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "kronecker.hpp"
#include "mpi_peer.hpp"
#include "rill/rill.hpp"

namespace {

// One rank's share of the graph: the adjacency of the vertices it owns, by local index v / R.
struct graph_part {
  int me = 0, ranks = 1;
  std::uint64_t local_vertices = 0;
  std::vector<std::uint64_t> offsets, neighbours;
  std::vector<std::uint32_t> degree;  // of every vertex (for choosing roots)

  bool owns(std::uint64_t v) const { return static_cast<int>(v % static_cast<std::uint64_t>(ranks)) == me; }
  std::uint64_t local(std::uint64_t v) const { return v / static_cast<std::uint64_t>(ranks); }
  std::uint64_t global(std::uint64_t l) const {
    return l * static_cast<std::uint64_t>(ranks) + static_cast<std::uint64_t>(me);
  }
};

graph_part build(const bench::kronecker& g, const std::vector<std::uint64_t>& label, int me, int ranks) {
  graph_part p;
  p.me = me;
  p.ranks = ranks;
  const auto R = static_cast<std::uint64_t>(ranks);
  p.local_vertices = (g.vertices() + R - 1 - static_cast<std::uint64_t>(me)) / R;
  p.degree.assign(g.vertices(), 0);
  std::vector<std::uint64_t> count(p.local_vertices + 1, 0);
  g.for_edges(0, g.edges(), label, [&](std::uint64_t a, std::uint64_t b) {
    if (a == b) return;
    ++p.degree[a];
    ++p.degree[b];
    if (p.owns(a)) ++count[p.local(a) + 1];
    if (p.owns(b)) ++count[p.local(b) + 1];
  });
  for (std::uint64_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
  p.offsets = count;
  p.neighbours.resize(count.back());
  g.for_edges(0, g.edges(), label, [&](std::uint64_t a, std::uint64_t b) {
    if (a == b) return;
    if (p.owns(a)) p.neighbours[count[p.local(a)]++] = b;
    if (p.owns(b)) p.neighbours[count[p.local(b)]++] = a;
  });
  return p;
}

std::vector<std::uint64_t> choose_roots(const graph_part& p, int n) {
  std::mt19937_64 r(2);
  std::vector<std::uint64_t> roots;
  while (static_cast<int>(roots.size()) < n) {
    const std::uint64_t v = r() % p.degree.size();
    if (p.degree[v] > 0) roots.push_back(v);
  }
  return roots;
}

// The five Graph500 checks of a BFS tree (parent[v] = -1: not reached); returns the input edges
// in the root's component (the TEPS numerator), or throws naming the failed check.
std::uint64_t validate(const bench::kronecker& g, const std::vector<std::uint64_t>& label,
                       const std::vector<std::int64_t>& parent, std::uint64_t root) {
  const std::uint64_t n = g.vertices();
  if (parent[root] != static_cast<std::int64_t>(root)) throw std::runtime_error("the root is not its own parent");
  // 1. a tree without cycles, and levels along it (depth by walking up, memoised).
  std::vector<std::int64_t> level(n, -1);
  level[root] = 0;
  std::vector<std::uint64_t> path;
  for (std::uint64_t v = 0; v < n; ++v) {
    if (parent[v] < 0 || level[v] >= 0) continue;
    path.clear();
    std::uint64_t u = v;
    while (level[u] < 0) {
      path.push_back(u);
      if (path.size() > n) throw std::runtime_error("check 1: the parents form a cycle");
      if (parent[u] < 0 || static_cast<std::uint64_t>(parent[u]) >= n)
        throw std::runtime_error("check 1: a parent chain leaves the tree");
      u = static_cast<std::uint64_t>(parent[u]);
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it)
      level[*it] = level[static_cast<std::uint64_t>(parent[*it])] + 1;
  }
  // 3, 4 and 5 over the input edges; 2 follows from 5 with the levels of 1.
  std::uint64_t in_component = 0;
  std::vector<char> tree_edge_seen(n, 0);
  g.for_edges(0, g.edges(), label, [&](std::uint64_t a, std::uint64_t b) {
    const bool in_a = parent[a] >= 0, in_b = parent[b] >= 0;
    if (in_a != in_b) throw std::runtime_error("check 4: an edge joins a reached and an unreached vertex");
    if (!in_a) return;
    ++in_component;
    const std::int64_t d = level[a] - level[b];
    if (d > 1 || d < -1) throw std::runtime_error("check 3: an edge's ends are more than one level apart");
    if (parent[a] == static_cast<std::int64_t>(b) && level[a] == level[b] + 1) tree_edge_seen[a] = 1;
    if (parent[b] == static_cast<std::int64_t>(a) && level[b] == level[a] + 1) tree_edge_seen[b] = 1;
  });
  for (std::uint64_t v = 0; v < n; ++v)
    if (parent[v] >= 0 && v != root && !tree_edge_seen[v])
      throw std::runtime_error("checks 2 and 5: a vertex's parent is not a neighbour one level up");
  return in_component;
}

double harmonic_mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += 1 / x;
  return v.empty() ? 0 : static_cast<double>(v.size()) / s;
}

// ---- MPI peer --------------------------------------------------------------------------------

std::vector<std::int64_t> mpi_bfs(const graph_part& p, std::uint64_t root) {
  const int R = p.ranks;
  std::vector<std::int64_t> parent(p.local_vertices, -1);
  std::vector<std::uint64_t> frontier, next;
  if (p.owns(root)) {
    parent[p.local(root)] = static_cast<std::int64_t>(root);
    frontier.push_back(p.local(root));
  }
  std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(R));
  std::vector<int> send_counts(static_cast<std::size_t>(R)), recv_counts(static_cast<std::size_t>(R)),
      send_at(static_cast<std::size_t>(R)), recv_at(static_cast<std::size_t>(R));
  std::vector<std::uint64_t> send_buf, recv_buf;
  for (;;) {
    for (auto& o : out) o.clear();
    for (std::uint64_t l : frontier) {
      const std::uint64_t u = p.global(l);
      for (std::uint64_t k = p.offsets[l]; k < p.offsets[l + 1]; ++k) {
        const std::uint64_t v = p.neighbours[k];
        if (p.owns(v)) {
          std::int64_t& pv = parent[p.local(v)];
          if (pv < 0) {
            pv = static_cast<std::int64_t>(u);
            next.push_back(p.local(v));
          }
        } else {
          auto& o = out[v % static_cast<std::uint64_t>(R)];
          o.push_back(v);
          o.push_back(u);
        }
      }
    }
    send_buf.clear();
    for (int r = 0; r < R; ++r) {
      send_at[static_cast<std::size_t>(r)] = static_cast<int>(send_buf.size());
      send_counts[static_cast<std::size_t>(r)] = static_cast<int>(out[static_cast<std::size_t>(r)].size());
      send_buf.insert(send_buf.end(), out[static_cast<std::size_t>(r)].begin(), out[static_cast<std::size_t>(r)].end());
    }
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < R; ++r) {
      recv_at[static_cast<std::size_t>(r)] = total;
      total += recv_counts[static_cast<std::size_t>(r)];
    }
    recv_buf.resize(static_cast<std::size_t>(total));
    MPI_Alltoallv(send_buf.data(), send_counts.data(), send_at.data(), MPI_UINT64_T, recv_buf.data(),
                  recv_counts.data(), recv_at.data(), MPI_UINT64_T, MPI_COMM_WORLD);
    for (std::size_t i = 0; i + 1 < recv_buf.size(); i += 2) {
      std::int64_t& pv = parent[p.local(recv_buf[i])];
      if (pv < 0) {
        pv = static_cast<std::int64_t>(recv_buf[i + 1]);
        next.push_back(p.local(recv_buf[i]));
      }
    }
    std::uint64_t mine = next.size(), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (all == 0) break;
    frontier.swap(next);
    next.clear();
  }
  return parent;
}

// ---- Rill ----------------------------------------------------------------------------------

// What a rank's message handlers reach: its share of the BFS in progress. Everything a level
// touches is indexed by the level's parity, so a rank already at level L + 1 can send to one
// still finishing level L without a barrier between the levels.
struct bfs_state {
  const graph_part* part = nullptr;
  std::vector<std::int64_t> parent;
  std::vector<std::uint64_t> frontier[2];           // [L & 1]: level L's frontier; visits found at L join [(L + 1) & 1]
  std::mutex frontier_lock;                         // handlers may run on any of the rank's workers
  std::atomic<std::uint64_t> received[2] = {0, 0};  // pairs received for level L's expansion
  std::atomic<std::uint64_t> announced[2] = {0, 0};  // pairs the other ranks said they sent
  std::atomic<int> announcers[2] = {0, 0};           // how many said so

  void visit(std::uint64_t level, std::uint64_t l, std::uint64_t from) {
    std::int64_t expected = -1;
    if (std::atomic_ref<std::int64_t>(parent[l]).compare_exchange_strong(expected, static_cast<std::int64_t>(from))) {
      std::lock_guard g(frontier_lock);
      frontier[(level + 1) & 1].push_back(l);
    }
  }
};
constexpr int max_ranks = 64;
bfs_state* states[max_ranks];  // by rank: the local transport runs every rank in this process

std::vector<std::int64_t> rill_bfs(bfs_state& s, std::uint64_t root) {
  const graph_part& p = *s.part;
  const auto world = rill::team::world();
  const auto R = static_cast<std::uint64_t>(p.ranks);
  s.parent.assign(p.local_vertices, -1);
  s.frontier[0].clear();
  s.frontier[1].clear();
  if (p.owns(root)) {
    s.parent[p.local(root)] = static_cast<std::int64_t>(root);
    s.frontier[0].push_back(p.local(root));
  }
  world.barrier().wait();
  // Visits to another rank's vertices go in chunks of (vertex, parent) pairs: one active message
  // per chunk, sent as soon as it fills, so communication overlaps the expansion.
  constexpr std::size_t chunk_pairs = 512;
  std::vector<std::vector<std::uint64_t>> out(R);
  std::uint64_t level = 0;
  const auto ship = [&](std::uint64_t owner) {
    rill::am::send(
        static_cast<int>(owner),
        [](std::uint64_t at, const std::vector<std::uint64_t>& pairs) {
          bfs_state& t = *states[rill::rank_me()];
          for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) t.visit(at, pairs[i], pairs[i + 1]);
          t.received[at & 1].fetch_add(pairs.size() / 2, std::memory_order_release);
        },
        level, out[owner]);
    out[owner].clear();
  };
  std::vector<std::uint64_t> current;
  for (;; ++level) {
    const std::size_t odd = level & 1;
    {
      std::lock_guard g(s.frontier_lock);
      current.swap(s.frontier[odd]);
      s.frontier[odd].clear();
    }
    std::vector<std::uint64_t> sent(R, 0);
    for (std::uint64_t l : current) {
      const std::uint64_t u = p.global(l);
      for (std::uint64_t k = p.offsets[l]; k < p.offsets[l + 1]; ++k) {
        const std::uint64_t v = p.neighbours[k];
        const std::uint64_t owner = v % R;
        if (owner == static_cast<std::uint64_t>(p.me)) {
          s.visit(level, v / R, u);
        } else {
          out[owner].push_back(v / R);
          out[owner].push_back(u);
          ++sent[owner];
          if (out[owner].size() == 2 * chunk_pairs) ship(owner);
        }
      }
    }
    for (std::uint64_t r = 0; r < R; ++r) {
      if (!out[r].empty()) ship(r);
      if (r != static_cast<std::uint64_t>(p.me))
        rill::am::send(
            static_cast<int>(r),
            [](std::uint64_t at, std::uint64_t pairs) {
              bfs_state& t = *states[rill::rank_me()];
              t.announced[at & 1].fetch_add(pairs, std::memory_order_release);
              t.announcers[at & 1].fetch_add(1, std::memory_order_release);
            },
            level, sent[r]);
    }
    rill::am::flush();
    // Every other rank has said how many pairs it sent here, and they have all arrived.
    while (s.announcers[odd].load(std::memory_order_acquire) < p.ranks - 1 ||
           s.received[odd].load(std::memory_order_acquire) < s.announced[odd].load(std::memory_order_acquire))
      rill::yield();
    s.received[odd].fetch_sub(s.announced[odd].exchange(0), std::memory_order_relaxed);
    s.announcers[odd].store(0, std::memory_order_relaxed);
    std::uint64_t found;
    {
      std::lock_guard g(s.frontier_lock);
      found = s.frontier[odd ^ 1].size();
    }
    if (world.allreduce(found, rill::reduce::sum<std::uint64_t>{}).get() == 0) break;
  }
  return s.parent;
}

// The whole parent array on rank 0 from each rank's share.
std::vector<std::int64_t> assemble(const std::vector<std::vector<std::int64_t>>& shares, std::uint64_t n) {
  std::vector<std::int64_t> parent(n, -1);
  const auto R = static_cast<std::uint64_t>(shares.size());
  for (std::uint64_t r = 0; r < R; ++r)
    for (std::uint64_t l = 0; l < shares[r].size(); ++l) parent[l * R + r] = shares[r][l];
  return parent;
}

// Validates one BFS tree (from each rank's share of the parents) and records its TEPS, or counts
// the failure; on rank 0.
void record(const char* who, const bench::kronecker& g, const std::vector<std::uint64_t>& label,
            const std::vector<std::vector<std::int64_t>>& shares, std::uint64_t root, double seconds,
            std::vector<double>& teps, int& failures) {
  try {
    const std::uint64_t m = validate(g, label, assemble(shares, g.vertices()), root);
    teps.push_back(static_cast<double>(m) / seconds);
    bench::progress("G2 {} root {}: {:.3g} TEPS ({} edges, {:.3g} s)", who, root, teps.back(), m, seconds);
  } catch (const std::exception& e) {
    ++failures;
    bench::progress("G2 {} root {}: validation failed: {}", who, root, e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  if (mpi) bench::mpi_peer::init(argc, argv);
  CLI::App app{"G2: Graph500 BFS (Kronecker graph, 5 validation checks), against a level-synchronous MPI BFS"};
  app.allow_extras();
  int scale = 16, roots_n = 16;
  bool quick = false;
  app.add_option("--scale", scale, "log2 of the vertices")->check(CLI::Range(8, 22));
  app.add_option("--roots", roots_n, "BFS roots (Graph500: 64; at least 16 for the figure)")->check(CLI::Range(1, 64));
  app.add_flag("--quick", quick, "scale 12, 4 roots");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    scale = std::min(scale, 12);
    roots_n = std::min(roots_n, 4);
  }
  const bench::kronecker g{scale, 16, 1, true};
  const std::vector<std::uint64_t> label = g.labels();
  int failures = 0;

  std::vector<double> peer_teps;
  if (mpi) {
    const int me = bench::mpi_peer::world_rank(), R = bench::mpi_peer::world_size();
    const graph_part p = build(g, label, me, R);
    for (std::uint64_t root : choose_roots(p, roots_n)) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = bench::clock::now();
      const std::vector<std::int64_t> mine = mpi_bfs(p, root);
      MPI_Barrier(MPI_COMM_WORLD);
      const double seconds = bench::seconds_since(t0);
      std::vector<int> counts(static_cast<std::size_t>(R)), at(static_cast<std::size_t>(R));
      const int n_mine = static_cast<int>(mine.size());
      MPI_Gather(&n_mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
      std::vector<std::int64_t> all;
      if (me == 0) {
        int total = 0;
        for (int r = 0; r < R; ++r) {
          at[static_cast<std::size_t>(r)] = total;
          total += counts[static_cast<std::size_t>(r)];
        }
        all.resize(static_cast<std::size_t>(total));
      }
      MPI_Gatherv(mine.data(), n_mine, MPI_INT64_T, all.data(), counts.data(), at.data(), MPI_INT64_T, 0,
                  MPI_COMM_WORLD);
      if (me == 0) {
        std::vector<std::vector<std::int64_t>> shares(static_cast<std::size_t>(R));
        for (int r = 0; r < R; ++r)
          shares[static_cast<std::size_t>(r)].assign(
              all.begin() + at[static_cast<std::size_t>(r)],
              all.begin() + at[static_cast<std::size_t>(r)] + counts[static_cast<std::size_t>(r)]);
        record("mpi", g, label, shares, root, seconds, peer_teps, failures);
      }
    }
  }

  std::vector<double> teps;
  int ranks = 0, workers = 0;
  bool rank0 = false;
  {
    rill::runtime rt(argc, argv);
    workers = rt.options().workers;
    rt.run_spmd([&] {
      const int me = rill::rank_me(), R = rill::rank_n();
      if (R > max_ranks) throw std::runtime_error(fmt::format("G2 runs on at most {} ranks, not {}", max_ranks, R));
      const graph_part p = build(g, label, me, R);
      bfs_state s;
      s.part = &p;
      states[me] = &s;
      rill::team::world().barrier().wait();
      for (std::uint64_t root : choose_roots(p, roots_n)) {
        const auto world = rill::team::world();
        world.barrier().wait();
        const auto t0 = bench::clock::now();
        std::vector<std::int64_t> mine = rill_bfs(s, root);
        world.barrier().wait();
        const double seconds = bench::seconds_since(t0);
        const auto shares = world.gather(std::move(mine), 0).get();
        if (me == 0) {
          record("rill", g, label, shares, root, seconds, teps, failures);
          rank0 = true;
          ranks = R;
        }
      }
      rill::team::world().barrier().wait();
      states[me] = nullptr;
    });
  }
  if (rank0) {
    bench::result r;
    r.id = "G2";
    r.case_name = fmt::format("Graph500 Kronecker scale {}, edge factor 16, {} roots, {} ranks {}, {} worker{}", scale,
                              roots_n, ranks, mpi ? "mpi" : "local", workers, workers == 1 ? "" : "s");
    r.metric = "TEPS (harmonic mean over roots)";
    r.unit = "edges/s";
    r.higher_is_better = true;
    r.rill = {harmonic_mean(teps)};
    if (mpi) {
      r.peer = "level-synchronous MPI BFS (MPI_Alltoallv per level)";
      r.peer_values = {harmonic_mean(peer_teps)};
    }
    r.extra = {{"ranks", ranks},
               {"workers", workers},
               {"transport", mpi ? "mpi" : "local"},
               {"scale", scale},
               {"roots", roots_n},
               {"validated", teps.size()},
               {"peer_validated", peer_teps.size()},
               {"validation_failures", failures}};
    bench::emit(r);
  }
  if (mpi) MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
