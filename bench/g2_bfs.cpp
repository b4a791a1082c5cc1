// G2 (Grappa Fig. 3, Graph500): breadth-first search on a Kronecker graph.
//
// The graph is Graph500's (bench/kronecker.hpp, labels permuted, edge factor 16), undirected,
// spread cyclically: vertex v lives on rank v mod R, with its adjacency. Both versions run the
// algorithm of Graph500's reference BFS (3.0, `src/bfs_reference.c`), level by level: a rank
// scans its frontier's edges, visits its own vertices at once (a visited bitmap, the parent set on
// the first visit) and sends each other rank the visits of its vertices as 8-byte pairs of local
// indices (the receiver knows the sender, so it rebuilds the parent's label). Rill: the pairs go in
// active messages of 1024 pairs, each leaving as soon as it fills, so communication overlaps the
// expansion (as the reference's AML aggregation does); the level ends once every rank has received
// the pairs the others announced (one message per pair of ranks), and one allreduce says whether
// any rank found new vertices. The peer, in the same processes under mpirun: the same expansion
// into per-rank buffers, then MPI_Alltoall of the counts and MPI_Alltoallv of the pairs, and
// MPI_Allreduce.
//
// Both run from the same 16 (or more) roots, chosen among vertices with edges, after one untimed
// BFS from the first (a buffer's first touch costs a page fault per 4 KiB). Every BFS tree is
// validated by the five Graph500 checks; TEPS = input edges in the root's component / seconds,
// and the figure is the harmonic mean over the roots, as Graph500 reports it.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "kronecker.hpp"
#include "mpi_peer.hpp"
#include "rill/rill.hpp"

namespace {

// v / R and v % R for 32-bit v by multiplication (Lemire, Kaser and Kurz 2019): every edge asks
// for its end's owner, and a division there costs 25+ cycles.
class cyclic_split {
 public:
  explicit cyclic_split(int ranks)
      : d_(static_cast<std::uint32_t>(ranks)), m_(~std::uint64_t{0} / static_cast<std::uint32_t>(ranks) + 1) {}
  std::uint32_t owner(std::uint32_t v) const {
    return static_cast<std::uint32_t>((static_cast<unsigned __int128>(m_ * v) * d_) >> 64);
  }
  std::uint32_t local(std::uint32_t v) const {
    return d_ == 1 ? v : static_cast<std::uint32_t>((static_cast<unsigned __int128>(m_) * v) >> 64);
  }

 private:
  std::uint64_t d_, m_;
};

// One rank's share of the graph: the adjacency of the vertices it owns, by local index v / R.
// Labels fit 32 bits (scale ≤ 22), as the reference's local indices do.
struct graph_part {
  int me = 0, ranks = 1;
  cyclic_split split{1};
  std::uint32_t local_vertices = 0;
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> neighbours;
  std::vector<std::uint32_t> degree;  // of every vertex (for choosing roots)

  bool owns(std::uint64_t v) const { return static_cast<int>(v % static_cast<std::uint64_t>(ranks)) == me; }
  std::uint64_t local(std::uint64_t v) const { return v / static_cast<std::uint64_t>(ranks); }
  std::uint64_t global(std::uint64_t l) const { return global_of(l, me); }
  std::uint64_t global_of(std::uint64_t l, int rank) const {
    return l * static_cast<std::uint64_t>(ranks) + static_cast<std::uint64_t>(rank);
  }
};

// A visit sent to the owner of `to`: both ends as local indices, to's at its owner and from's at
// the sender.
std::uint64_t pack_visit(std::uint32_t to_local, std::uint32_t from_local) {
  return std::uint64_t{to_local} | std::uint64_t{from_local} << 32;
}

// The visited bitmap of a rank's vertices. A set may race with another worker's (handlers run on
// any worker of the rank): the first to set a bit is the visit that counts.
struct visited_bits {
  std::vector<std::uint64_t> words;
  void reset(std::uint32_t n) { words.assign((n + 63) / 64, 0); }
  bool first_visit(std::uint32_t l) {
    std::uint64_t& w = words[l / 64];
    const std::uint64_t bit = std::uint64_t{1} << (l % 64);
    if (std::atomic_ref<std::uint64_t>(w).load(std::memory_order_relaxed) & bit) return false;
    return !(std::atomic_ref<std::uint64_t>(w).fetch_or(bit, std::memory_order_relaxed) & bit);
  }
  // The same for a single thread (the MPI peer), as the reference does it.
  bool first_visit_alone(std::uint32_t l) {
    std::uint64_t& w = words[l / 64];
    const std::uint64_t bit = std::uint64_t{1} << (l % 64);
    if (w & bit) return false;
    w |= bit;
    return true;
  }
};

graph_part build(const bench::kronecker& g, const std::vector<std::uint64_t>& label, int me, int ranks) {
  graph_part p;
  p.me = me;
  p.ranks = ranks;
  const auto R = static_cast<std::uint64_t>(ranks);
  p.split = cyclic_split(ranks);
  p.local_vertices = static_cast<std::uint32_t>((g.vertices() + R - 1 - static_cast<std::uint64_t>(me)) / R);
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
    if (p.owns(a)) p.neighbours[count[p.local(a)]++] = static_cast<std::uint32_t>(b);
    if (p.owns(b)) p.neighbours[count[p.local(b)]++] = static_cast<std::uint32_t>(a);
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

// The peer's buffers, kept from one BFS to the next as Rill's are (bfs_state): a fresh buffer's
// first touch costs a page fault per 4 KiB.
struct mpi_bfs_buffers {
  std::vector<std::int64_t> parent;
  visited_bits visited;
  std::vector<std::uint32_t> frontier, next;
  std::vector<std::vector<std::uint64_t>> out;
  std::vector<int> send_counts, recv_counts, send_at, recv_at;
  std::vector<std::uint64_t> send_buf, recv_buf;
};

const std::vector<std::int64_t>& mpi_bfs(const graph_part& p, std::uint64_t root, mpi_bfs_buffers& b) {
  const int R = p.ranks;
  const auto me = static_cast<std::uint32_t>(p.me);
  auto& [parent, visited, frontier, next, out, send_counts, recv_counts, send_at, recv_at, send_buf, recv_buf] = b;
  parent.assign(p.local_vertices, -1);
  visited.reset(p.local_vertices);
  frontier.clear();
  next.clear();
  frontier.reserve(p.local_vertices);
  next.reserve(p.local_vertices);
  if (p.owns(root)) {
    const auto l = static_cast<std::uint32_t>(p.local(root));
    parent[l] = static_cast<std::int64_t>(root);
    visited.first_visit_alone(l);
    frontier.push_back(l);
  }
  out.resize(static_cast<std::size_t>(R));
  for (auto* v : {&send_counts, &recv_counts, &send_at, &recv_at}) v->resize(static_cast<std::size_t>(R));
  for (;;) {
    for (auto& o : out) o.clear();
    for (std::uint32_t l : frontier) {
      for (std::uint64_t k = p.offsets[l]; k < p.offsets[l + 1]; ++k) {
        const std::uint32_t v = p.neighbours[k];
        const std::uint32_t owner = p.split.owner(v), vl = p.split.local(v);
        if (owner == me) {
          if (visited.first_visit_alone(vl)) {
            parent[vl] = static_cast<std::int64_t>(p.global(l));
            next.push_back(vl);
          }
        } else {
          out[owner].push_back(pack_visit(vl, l));
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
    for (int r = 0; r < R; ++r) {
      const auto* in = recv_buf.data() + recv_at[static_cast<std::size_t>(r)];
      for (int i = 0; i < recv_counts[static_cast<std::size_t>(r)]; ++i) {
        const auto vl = static_cast<std::uint32_t>(in[i]);
        if (visited.first_visit_alone(vl)) {
          parent[vl] = static_cast<std::int64_t>(p.global_of(in[i] >> 32, r));
          next.push_back(vl);
        }
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
  std::size_t chunk_pairs = 1024;  // visits per active message
  std::vector<std::int64_t> parent;
  visited_bits visited;
  // [L & 1]: level L's frontier; the vertices found at level L join [(L + 1) & 1]. Handlers may
  // run on any of the rank's workers, so a slot is claimed by a count.
  std::vector<std::uint32_t> frontier[2];
  std::atomic<std::uint32_t> frontier_size[2] = {0, 0};
  std::atomic<std::uint64_t> received[2] = {0, 0};   // pairs received for level L's expansion
  std::atomic<std::uint64_t> announced[2] = {0, 0};  // pairs the other ranks said they sent
  std::atomic<int> announcers[2] = {0, 0};           // how many said so

  void visit(std::uint64_t level, std::uint32_t l, std::uint64_t from) {
    if (!visited.first_visit(l)) return;
    parent[l] = static_cast<std::int64_t>(from);
    const std::size_t next = (level + 1) & 1;
    frontier[next][frontier_size[next].fetch_add(1, std::memory_order_relaxed)] = l;
  }
};
constexpr int max_ranks = 64;
bfs_state* states[max_ranks];  // by rank: the local transport runs every rank in this process

std::vector<std::int64_t> rill_bfs(bfs_state& s, std::uint64_t root) {
  const graph_part& p = *s.part;
  const auto world = rill::team::world();
  const auto R = static_cast<std::uint32_t>(p.ranks);
  const auto me = static_cast<std::uint32_t>(p.me);
  s.parent.assign(p.local_vertices, -1);
  s.visited.reset(p.local_vertices);
  for (auto& f : s.frontier) f.resize(p.local_vertices);
  s.frontier_size[0] = 0;
  s.frontier_size[1] = 0;
  if (p.owns(root)) {
    const auto l = static_cast<std::uint32_t>(p.local(root));
    s.visited.first_visit(l);
    s.parent[l] = static_cast<std::int64_t>(root);
    s.frontier[0][s.frontier_size[0]++] = l;
  }
  world.barrier().wait();
  // Visits of another rank's vertices go in chunks of packed pairs: one active message per chunk,
  // sent as soon as it fills, so communication overlaps the expansion.
  const std::size_t chunk_pairs = s.chunk_pairs;
  std::vector<std::vector<std::uint64_t>> out(R);
  for (auto& o : out) o.reserve(chunk_pairs);
  std::uint64_t level = 0;
  const auto ship = [&](std::uint32_t owner) {
    rill::am::send(
        static_cast<int>(owner),
        [](std::uint64_t at, rill::view<std::uint64_t> pairs) {
          bfs_state& t = *states[rill::rank_me()];
          const int from = rill::am::sender();
          for (const std::uint64_t pair : pairs)
            t.visit(at, static_cast<std::uint32_t>(pair), t.part->global_of(pair >> 32, from));
          t.received[at & 1].fetch_add(pairs.size(), std::memory_order_release);
        },
        level, rill::view(out[owner]));
    out[owner].clear();
  };
  std::vector<std::uint64_t> sent(R);
  for (;; ++level) {
    const std::size_t odd = level & 1;
    const std::uint32_t* const current = s.frontier[odd].data();
    const std::uint32_t current_size = s.frontier_size[odd].load(std::memory_order_acquire);
    std::fill(sent.begin(), sent.end(), 0);
    for (std::uint32_t i = 0; i < current_size; ++i) {
      const std::uint32_t l = current[i];
      const std::uint64_t u = p.global(l);
      for (std::uint64_t k = p.offsets[l]; k < p.offsets[l + 1]; ++k) {
        const std::uint32_t v = p.neighbours[k];
        const std::uint32_t owner = p.split.owner(v), vl = p.split.local(v);
        if (owner == me) {
          s.visit(level, vl, u);
        } else {
          out[owner].push_back(pack_visit(vl, l));
          ++sent[owner];
          if (out[owner].size() == chunk_pairs) {
            ship(owner);
            // Let this rank's worker take in the visits that have come meanwhile (as the
            // reference's aml_send does when a buffer fills): a rank that only sends leaves its
            // inbound ring full, and the senders' further buffers take MPI's slower path.
            rill::yield();
          }
        }
      }
    }
    for (std::uint32_t r = 0; r < R; ++r) {
      if (!out[r].empty()) ship(r);
      if (r != me)
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
    // This level's frontier is spent; the visits of level L + 2 fill it again, and none can come
    // before this rank's part of the allreduce below.
    s.frontier_size[odd].store(0, std::memory_order_relaxed);
    const std::uint64_t found = s.frontier_size[odd ^ 1].load(std::memory_order_acquire);
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
  std::size_t chunk_pairs = 1024;
  app.add_option("--chunk-pairs", chunk_pairs, "Rill: visits per active message")->check(CLI::Range(1, 1 << 16));
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
    mpi_bfs_buffers buffers;
    const std::vector<std::uint64_t> roots = choose_roots(p, roots_n);
    mpi_bfs(p, roots.front(), buffers);  // untimed: its buffers' first touch
    for (std::uint64_t root : roots) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = bench::clock::now();
      const std::vector<std::int64_t>& mine = mpi_bfs(p, root, buffers);
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
      s.chunk_pairs = chunk_pairs;
      states[me] = &s;
      rill::team::world().barrier().wait();
      const std::vector<std::uint64_t> roots = choose_roots(p, roots_n);
      rill_bfs(s, roots.front());  // untimed: its buffers' first touch
      for (std::uint64_t root : roots) {
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
      r.peer = "Graph500 reference BFS algorithm in MPI (bitmap, 8-byte visits, MPI_Alltoallv per level)";
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
