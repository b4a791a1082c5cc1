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
// any rank found new vertices. The peer, under mpirun in processes of its own at MPI_THREAD_SINGLE
// (peer_apart.hpp; bench/run G2 runs both): the same expansion into per-rank buffers, then
// MPI_Alltoall of the counts and MPI_Alltoallv of the pairs, and MPI_Allreduce.
//
// A second pair of runs is direction-optimising (Beamer et al., SC 2012): once the frontier is large,
// a level runs bottom-up -- each unvisited vertex looks for a parent among its neighbours in the
// frontier, read as a bitmap gathered from every rank -- and sends no visits; both versions share
// that level's code and the choice of direction.
//
// Both run from the same 16 (or more) roots, chosen among vertices with edges, after one untimed
// BFS from the first (a buffer's first touch costs a page fault per 4 KiB). Every BFS tree is
// validated by the five Graph500 checks; TEPS = input edges in the root's component / seconds,
// and the figure is the harmonic mean over the roots, as Graph500 reports it.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <bit>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "kronecker.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
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
  std::uint64_t vertices = 0;  // of the whole graph
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
  // The bits past n are set: a bottom-up level, which looks for the clear ones, skips them.
  void reset(std::uint32_t n) {
    words.assign((n + 63) / 64, 0);
    if (n % 64) words.back() = ~std::uint64_t{0} << (n % 64);
  }
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
  p.vertices = g.vertices();
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

// ---- direction-optimising levels (both versions) ---------------------------------------------

// Beamer, Asanović and Patterson's direction-optimising BFS (SC 2012), as the fastest Graph500
// codes run it: a level runs bottom-up -- each unvisited vertex looks among its neighbours for one
// in the frontier, and stops at the first -- once the frontier's edges outnumber the unvisited
// vertices' edges / alpha, and top-down again once the frontier holds fewer than n / beta
// vertices. Bottom-up levels read the whole frontier as a bitmap, gathered from every rank, and
// send no visits.
struct direction {
  static constexpr std::uint64_t alpha = 14, beta = 24;
  bool enabled = false;
  bool bottom_up = false;
  void reset() { bottom_up = false; }
  // After a level, with totals over all ranks: the next frontier's vertices and edges, and the
  // edges of the vertices not visited yet, among n vertices.
  void choose(std::uint64_t n_f, std::uint64_t m_f, std::uint64_t m_u, std::uint64_t n) {
    if (!enabled) return;
    if (!bottom_up && m_f > m_u / alpha)
      bottom_up = true;
    else if (bottom_up && n_f < n / beta)
      bottom_up = false;
  }
};

// The frontier as bits: every rank's block of `words` words side by side, a vertex's bit at its
// local index in its owner's block.
struct frontier_bits {
  std::uint32_t words = 0;  // per rank
  std::vector<std::uint64_t> mine, all;
  void size_for(const graph_part& p, std::uint64_t vertices) {
    const std::uint64_t most =
        (vertices + static_cast<std::uint64_t>(p.ranks) - 1) / static_cast<std::uint64_t>(p.ranks);
    words = static_cast<std::uint32_t>((most + 63) / 64);
    mine.assign(words, 0);
    all.assign(static_cast<std::size_t>(words) * static_cast<std::size_t>(p.ranks), 0);
  }
  void set_mine(const std::uint32_t* frontier, std::size_t n) {
    std::fill(mine.begin(), mine.end(), 0);
    for (std::size_t i = 0; i < n; ++i) mine[frontier[i] / 64] |= std::uint64_t{1} << (frontier[i] % 64);
  }
  bool has(const cyclic_split& split, std::uint32_t v) const {
    const std::uint32_t l = split.local(v);
    return (all[std::size_t{split.owner(v)} * words + l / 64] >> (l % 64)) & 1;
  }
};

// One bottom-up level of this rank's vertices: found(l) for each vertex it visits, after setting
// its parent. Nothing else touches `visited` or `parent` meanwhile (no visits travel in a
// bottom-up level).
template <class Found>
void bottom_up_level(const graph_part& p, const frontier_bits& f, visited_bits& visited, std::int64_t* parent,
                     Found found) {
  for (std::size_t w = 0; w < visited.words.size(); ++w) {
    for (std::uint64_t unvisited = ~visited.words[w]; unvisited; unvisited &= unvisited - 1) {
      const auto l = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(unvisited)));
      for (std::uint64_t k = p.offsets[l]; k < p.offsets[l + 1]; ++k) {
        const std::uint32_t v = p.neighbours[k];
        if (f.has(p.split, v)) {
          parent[l] = v;
          visited.words[w] |= std::uint64_t{1} << (l % 64);
          found(l);
          break;
        }
      }
    }
  }
}

// The edges of this rank's vertices in frontier[0, n).
std::uint64_t edges_of(const graph_part& p, const std::uint32_t* frontier, std::size_t n) {
  std::uint64_t m = 0;
  for (std::size_t i = 0; i < n; ++i) m += p.offsets[frontier[i] + 1] - p.offsets[frontier[i]];
  return m;
}

// A level's totals over all ranks, for direction::choose.
struct level_totals {
  std::uint64_t next_vertices = 0, next_edges = 0, unvisited_edges = 0;
};

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
  frontier_bits bits;
  std::uint64_t bottom_up_levels = 0;  // over all BFSs
};

// One top-down level of the peer: visits its own vertices at once, the others' through
// MPI_Alltoallv.
void top_down_level(const graph_part& p, const std::vector<std::uint32_t>& frontier, mpi_bfs_buffers& b,
                    std::vector<std::uint32_t>& next) {
  const int R = p.ranks;
  const auto me = static_cast<std::uint32_t>(p.me);
  std::vector<std::int64_t>& parent = b.parent;
  visited_bits& visited = b.visited;
  std::vector<std::vector<std::uint64_t>>& out = b.out;
  std::vector<int>&send_counts = b.send_counts, &recv_counts = b.recv_counts, &send_at = b.send_at,
  &recv_at = b.recv_at;
  std::vector<std::uint64_t>&send_buf = b.send_buf, &recv_buf = b.recv_buf;
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
  MPI_Alltoallv(send_buf.data(), send_counts.data(), send_at.data(), MPI_UINT64_T, recv_buf.data(), recv_counts.data(),
                recv_at.data(), MPI_UINT64_T, MPI_COMM_WORLD);
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
}

const std::vector<std::int64_t>& mpi_bfs(const graph_part& p, std::uint64_t root, direction dir, mpi_bfs_buffers& b) {
  const int R = p.ranks;
  std::vector<std::int64_t>& parent = b.parent;
  visited_bits& visited = b.visited;
  std::vector<std::uint32_t>&frontier = b.frontier, &next = b.next;
  frontier_bits& bits = b.bits;
  bits.size_for(p, p.vertices);
  std::uint64_t unvisited_edges = p.offsets.back();
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
    unvisited_edges -= edges_of(p, &l, 1);
  }
  b.out.resize(static_cast<std::size_t>(R));
  for (auto* v : {&b.send_counts, &b.recv_counts, &b.send_at, &b.recv_at}) v->resize(static_cast<std::size_t>(R));
  for (;;) {
    if (dir.bottom_up) {
      bits.set_mine(frontier.data(), frontier.size());
      MPI_Allgather(bits.mine.data(), static_cast<int>(bits.words), MPI_UINT64_T, bits.all.data(),
                    static_cast<int>(bits.words), MPI_UINT64_T, MPI_COMM_WORLD);
      bottom_up_level(p, bits, visited, parent.data(), [&](std::uint32_t l) { next.push_back(l); });
      ++b.bottom_up_levels;
    } else {
      top_down_level(p, frontier, b, next);
    }
    const std::uint64_t next_edges = edges_of(p, next.data(), next.size());
    unvisited_edges -= next_edges;
    const std::uint64_t mine[3] = {next.size(), next_edges, unvisited_edges};
    level_totals all;
    MPI_Allreduce(mine, &all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (all.next_vertices == 0) break;
    dir.choose(all.next_vertices, all.next_edges, all.unvisited_edges, p.vertices);
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
  frontier_bits bits;                                // bottom-up levels
  std::uint64_t bottom_up_levels = 0;                // run on this rank, over all BFSs

  void visit(std::uint64_t level, std::uint32_t l, std::uint64_t from) {
    if (!visited.first_visit(l)) return;
    parent[l] = static_cast<std::int64_t>(from);
    const std::size_t next = (level + 1) & 1;
    frontier[next][frontier_size[next].fetch_add(1, std::memory_order_relaxed)] = l;
  }
};
constexpr int max_ranks = 64;
bfs_state* states[max_ranks];  // by rank: the local transport runs every rank in this process

// One top-down level on this rank: its own vertices visited at once, the others' visits sent in
// chunks of packed pairs, one active message per chunk as soon as it fills, so that communication
// overlaps the expansion; returns once every visit sent here for this level has arrived.
void rill_top_down_level(bfs_state& s, std::uint64_t level, std::vector<std::vector<std::uint64_t>>& out,
                         std::vector<std::uint64_t>& sent) {
  const graph_part& p = *s.part;
  const auto R = static_cast<std::uint32_t>(p.ranks);
  const auto me = static_cast<std::uint32_t>(p.me);
  const std::size_t odd = level & 1;
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
        if (out[owner].size() == s.chunk_pairs) {
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
}

// One bottom-up level on this rank, from the frontier bits of every rank: no visits travel, so
// nothing else fills the next frontier meanwhile.
void rill_bottom_up_level(bfs_state& s, std::uint64_t level) {
  const graph_part& p = *s.part;
  const std::size_t odd = level & 1;
  s.bits.set_mine(s.frontier[odd].data(), s.frontier_size[odd].load(std::memory_order_acquire));
  const std::vector<std::vector<std::uint64_t>> blocks = rill::team::world().allgather(s.bits.mine).get();
  for (std::size_t r = 0; r < blocks.size(); ++r)
    std::copy(blocks[r].begin(), blocks[r].end(), s.bits.all.begin() + static_cast<std::ptrdiff_t>(r * s.bits.words));
  std::uint32_t* const next = s.frontier[odd ^ 1].data();
  std::uint32_t found = 0;
  bottom_up_level(p, s.bits, s.visited, s.parent.data(), [&](std::uint32_t l) { next[found++] = l; });
  s.frontier_size[odd ^ 1].store(found, std::memory_order_release);
}

std::vector<std::int64_t> rill_bfs(bfs_state& s, std::uint64_t root, direction dir) {
  const graph_part& p = *s.part;
  const auto world = rill::team::world();
  const auto R = static_cast<std::uint32_t>(p.ranks);
  s.parent.assign(p.local_vertices, -1);
  s.visited.reset(p.local_vertices);
  s.bits.size_for(p, p.vertices);
  for (auto& f : s.frontier) f.resize(p.local_vertices);
  s.frontier_size[0] = 0;
  s.frontier_size[1] = 0;
  std::uint64_t unvisited_edges = p.offsets.back();
  if (p.owns(root)) {
    const auto l = static_cast<std::uint32_t>(p.local(root));
    s.visited.first_visit(l);
    s.parent[l] = static_cast<std::int64_t>(root);
    s.frontier[0][s.frontier_size[0]++] = l;
    unvisited_edges -= edges_of(p, &l, 1);
  }
  world.barrier().wait();
  std::vector<std::vector<std::uint64_t>> out(R);
  for (auto& o : out) o.reserve(s.chunk_pairs);
  std::vector<std::uint64_t> sent(R);
  for (std::uint64_t level = 0;; ++level) {
    const std::size_t odd = level & 1;
    if (dir.bottom_up) {
      rill_bottom_up_level(s, level);
      ++s.bottom_up_levels;
    } else {
      rill_top_down_level(s, level, out, sent);
    }
    // This level's frontier is spent; the visits of level L + 2 fill it again, and none can come
    // before this rank's part of the allreduce below.
    s.frontier_size[odd].store(0, std::memory_order_relaxed);
    const std::uint32_t found = s.frontier_size[odd ^ 1].load(std::memory_order_acquire);
    const std::uint64_t next_edges = edges_of(p, s.frontier[odd ^ 1].data(), found);
    unvisited_edges -= next_edges;
    const level_totals all = world
                                 .allreduce(level_totals{found, next_edges, unvisited_edges},
                                            [](level_totals& a, const level_totals& b) {
                                              a.next_vertices += b.next_vertices;
                                              a.next_edges += b.next_edges;
                                              a.unvisited_edges += b.unvisited_edges;
                                            })
                                 .get();
    if (all.next_vertices == 0) break;
    dir.choose(all.next_vertices, all.next_edges, all.unvisited_edges, p.vertices);
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

// The MPI peer, in processes of its own (peer_apart.hpp): every variant from the same roots, each
// tree validated on rank 0. Returns, per variant, what rank 0 recorded.
struct peer_figures {
  std::vector<double> teps;
  std::uint64_t bottom_up_levels = 0;
};

template <class Traversal>
std::vector<peer_figures> mpi_peer_runs(const bench::kronecker& g, const std::vector<std::uint64_t>& label, int roots_n,
                                        int variants, Traversal traversal, int& failures) {
  std::vector<peer_figures> out(static_cast<std::size_t>(variants));
  const int me = bench::mpi_peer::world_rank(), R = bench::mpi_peer::world_size();
  const graph_part p = build(g, label, me, R);
  mpi_bfs_buffers buffers;
  const std::vector<std::uint64_t> roots = choose_roots(p, roots_n);
  for (int v = 0; v < variants; ++v) {
    mpi_bfs(p, roots.front(), traversal(v), buffers);  // untimed: its buffers' first touch
    const std::uint64_t levels_before = buffers.bottom_up_levels;
    for (std::uint64_t root : roots) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = bench::clock::now();
      const std::vector<std::int64_t>& mine = mpi_bfs(p, root, traversal(v), buffers);
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
        record("mpi", g, label, shares, root, seconds, out[static_cast<std::size_t>(v)].teps, failures);
      }
    }
    out[static_cast<std::size_t>(v)].bottom_up_levels = buffers.bottom_up_levels - levels_before;
  }
  return out;
}

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  if (mpi) bench::peer_apart::init_mpi(argc, argv);
  CLI::App app{
      "G2: Graph500 BFS (Kronecker graph, 5 validation checks), top-down and direction-optimising, against "
      "the same algorithms in MPI"};
  app.allow_extras();
  int scale = 16, roots_n = 16;
  bool quick = false;
  std::size_t chunk_pairs = 1024;
  app.add_option("--chunk-pairs", chunk_pairs, "Rill: visits per active message")->check(CLI::Range(1, 1 << 16));
  app.add_option("--scale", scale, "log2 of the vertices")->check(CLI::Range(8, 22));
  app.add_option("--roots", roots_n, "BFS roots (Graph500: 64; at least 16 for the figure)")->check(CLI::Range(1, 64));
  app.add_flag("--quick", quick, "scale 12, 4 roots");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files);
  CLI11_PARSE(app, argc, argv);
  bench::peer_apart::require_mpirun(peer_files, mpi, "rill_bench_g2");
  if (quick) {
    scale = std::min(scale, 12);
    roots_n = std::min(roots_n, 4);
  }
  const bench::kronecker g{scale, 16, 1, true};
  const std::vector<std::uint64_t> label = g.labels();
  int failures = 0;

  // Variant 0: top-down levels only (the reference 3.0 algorithm); 1: direction-optimising.
  constexpr int variants = 2;
  const auto traversal = [](int v) {
    direction d;
    d.enabled = v == 1;
    return d;
  };
  std::vector<peer_figures> peer(variants);
  std::uint64_t bottom_up[variants] = {};  // levels, over the timed roots
  const char* const program = "rill_bench_g2";
  const nlohmann::json peer_config = {
      {"ranks", mpi ? bench::mpi_peer::world_size() : 1}, {"scale", scale}, {"roots", roots_n}};
  if (!peer_files.only.empty()) {
    peer = mpi_peer_runs(g, label, roots_n, variants, traversal, failures);
    nlohmann::json variants_out = nlohmann::json::array();
    for (const peer_figures& f : peer)
      variants_out.push_back({{"teps", f.teps}, {"bottom_up_levels", f.bottom_up_levels}});
    bench::peer_apart::write(peer_files.only, program, peer_config,
                             {{"variants", variants_out}, {"validation_failures", failures}});
    if (failures != 0) std::fprintf(stderr, "G2: %d of the MPI peer's trees failed validation\n", failures);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
  }
  if (!peer_files.results.empty()) {
    peer = bench::peer_apart::read_or_exit(peer_files.results, program, peer_config, [&](const nlohmann::json& in) {
      const nlohmann::json& per_variant = in.at("variants");
      if (!per_variant.is_array() || per_variant.size() != variants)
        throw std::runtime_error("not one result per variant");
      failures += in.at("validation_failures").get<int>();  // the peer's trees count as before
      std::vector<peer_figures> out;
      for (const auto& j : per_variant)
        out.push_back({j.at("teps").get<std::vector<double>>(), j.at("bottom_up_levels").get<std::uint64_t>()});
      return out;
    });
  } else if (mpi) {
    bench::peer_apart::note_no_peer("G2");
  }

  std::vector<double> teps[variants];
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
      for (int v = 0; v < variants; ++v) {
        rill_bfs(s, roots.front(), traversal(v));  // untimed: its buffers' first touch
        const std::uint64_t levels_before = s.bottom_up_levels;
        for (std::uint64_t root : roots) {
          const auto world = rill::team::world();
          world.barrier().wait();
          const auto t0 = bench::clock::now();
          std::vector<std::int64_t> mine = rill_bfs(s, root, traversal(v));
          world.barrier().wait();
          const double seconds = bench::seconds_since(t0);
          const auto shares = world.gather(std::move(mine), 0).get();
          if (me == 0) {
            record("rill", g, label, shares, root, seconds, teps[v], failures);
            rank0 = true;
            ranks = R;
          }
        }
        if (me == 0) bottom_up[v] = s.bottom_up_levels - levels_before;
      }
      rill::team::world().barrier().wait();
      states[me] = nullptr;
    });
  }
  for (int v = 0; rank0 && v < variants; ++v) {
    bench::result r;
    r.id = "G2";
    r.case_name = fmt::format("Graph500 Kronecker scale {}, edge factor 16, {} roots, {} ranks {}, {} worker{}{}",
                              scale, roots_n, ranks, mpi ? "mpi" : "local", workers, workers == 1 ? "" : "s",
                              v == 1 ? ", direction-optimising" : "");
    r.metric = "TEPS (harmonic mean over roots)";
    r.unit = "edges/s";
    r.higher_is_better = true;
    r.rill = {harmonic_mean(teps[v])};
    if (!peer[static_cast<std::size_t>(v)].teps.empty()) {
      r.peer = v == 0 ? "Graph500 reference BFS algorithm in MPI (bitmap, 8-byte visits, MPI_Alltoallv per level)"
                      : "the same with bottom-up levels (MPI_Allgather of the frontier bitmap)";
      r.peer_values = {harmonic_mean(peer[static_cast<std::size_t>(v)].teps)};
    }
    r.extra = {{"ranks", ranks},
               {"workers", workers},
               {"transport", mpi ? "mpi" : "local"},
               {"scale", scale},
               {"roots", roots_n},
               {"traversal", v == 1 ? "direction-optimising" : "top-down"},
               {"bottom_up_levels", bottom_up[v]},
               {"peer_bottom_up_levels", peer[static_cast<std::size_t>(v)].bottom_up_levels},
               {"validated", teps[v].size()},
               {"peer_validated", peer[static_cast<std::size_t>(v)].teps.size()},
               {"validation_failures", failures}};
    bench::emit(r);
  }
  if (mpi) MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
