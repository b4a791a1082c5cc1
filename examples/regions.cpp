// The example of docs/regions.md: an irregular graph cut into pieces the way Circuit cuts it.
// Nodes are split equally; each piece takes the edges that leave its nodes (a preimage of the
// edges' `from` field), and its ghost nodes are those its edges reach outside it (an image of
// `to`, less its own nodes). The tree then answers which pieces can touch each other's data, and
// launches on the pieces write the nodes' voltages, reduce into their ghosts and sum them.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "rill/rill.hpp"

constexpr rill::field<double> voltage{1};
constexpr rill::field<rill::point<1>> from{2}, to{3};

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    constexpr int node_count = 1000, edge_count = 4000, pieces = 4;
    const rill::region nodes = rill::region::create(rill::rect<1>{0, node_count - 1}, rill::field_space{voltage});
    const rill::region edges = rill::region::create(rill::rect<1>{0, edge_count - 1}, rill::field_space{from, to});

    // The edges' data, written on the last rank: mostly short edges, one in eight far.
    const int keeper = rill::rank_n() - 1;
    auto [wires, ready] = rill::instance::create(rill::memory::system(keeper), edges.space<1>(), edges.fields());
    const rill::event wired = rill::proc(keeper).spawn(
        rill::after(ready),
        [](rill::instance w) {
          rill::accessor<rill::point<1>, 1> f(w, from), t(w, to);
          for (rill::coord_t e = 0; e < edge_count; ++e) {
            const rill::coord_t a = e / 4, hop = e % 8 == 0 ? 397 : 1 + e % 5;
            f[{e}] = {a};
            t[{e}] = {(a + hop) % node_count};
          }
        },
        wires);

    const rill::partition owned = rill::partition_equal(nodes, pieces);
    std::vector<rill::index_space<1>> mine;
    for (std::size_t c = 0; c < owned.colors(); ++c) mine.push_back(owned.subregion(c).space<1>());
    // Each piece's edges: those whose `from` is one of its nodes.
    const auto edge_spaces = rill::subspaces_by_preimage(wires, from, edges.space<1>(), mine, wired).get();
    const rill::partition edge_pieces = rill::partition_by_subspaces(edges, edge_spaces);
    // Each piece's ghosts: the nodes its edges reach, less its own.
    auto reached = rill::subspaces_by_image(wires, to, edge_spaces, nodes.space<1>(), wired).get();
    for (std::size_t c = 0; c < reached.size(); ++c) reached[c] = reached[c].subtract(mine[c]);
    const rill::partition ghosts = rill::partition_by_subspaces(nodes, reached);

    for (std::size_t c = 0; c < pieces; ++c)
      std::printf("piece %zu: %zu nodes, %zu edges, %zu ghost nodes\n", c, owned.subregion(c).volume(),
                  edge_pieces.subregion(c).volume(), ghosts.subregion(c).volume());
    std::printf("edge pieces: %s, %s; ghosts: %s\n", edge_pieces.disjoint() ? "disjoint" : "aliased",
                edge_pieces.complete() ? "complete" : "incomplete", ghosts.disjoint() ? "disjoint" : "aliased");
    // Decided by the tree (one disjoint partition), then by the points (two partitions).
    std::printf("owned 0 and owned 1 overlap: %s; owned 1 and ghosts of 0 overlap: %s\n",
                rill::regions_overlap(owned.subregion(0), owned.subregion(1)) ? "yes" : "no",
                rill::regions_overlap(owned.subregion(1), ghosts.subregion(0)) ? "yes" : "no");

    // Launches: every piece sets its nodes' voltage to its color, then one task sums them all,
    // after the four (it reads what they wrote).
    rill::index_launch(
        [](const rill::physical_regions& rs, std::size_t color) {
          auto v = rs[0].write<double, 1>(voltage);
          rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = static_cast<double>(color); });
        },
        owned, {rill::req(owned, {voltage.id}, rill::privilege::write_discard)});
    // Every piece adds 0.5 to each of its ghost nodes, the four at once (reductions by one
    // operator commute, wherever the ghosts overlap); the sum applies them before it reads.
    using add = rill::reduce::sum<double>;
    rill::index_launch(
        [](const rill::physical_regions& rs, std::size_t) {
          auto r = rs[0].reduce<add, 1>(voltage);
          rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { r(p, 0.5); });
        },
        ghosts, {rill::req(ghosts, {voltage.id}, rill::reduce_with<add>())});
    const auto sum_voltages = [](const rill::physical_regions& rs, rill::promise<double> out) {
      auto v = rs[0].read<double, 1>(voltage);
      double s = 0;
      rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { s += v[p]; });
      out.put(s);
    };
    rill::promise<double> sum;
    rill::launch(sum_voltages, {rill::req(nodes, {voltage.id}, rill::privilege::read_only)}, sum);
    const double total = sum.get_future().get();
    std::printf("sum of voltages: %.1f after %llu launches, %llu reductions applied\n", total,
                static_cast<unsigned long long>(rill::launch_counts_here().launches),
                static_cast<unsigned long long>(rill::launch_counts_here().reductions));
    // Sub-launches: each piece's task, on its piece's rank, doubles its nodes' voltages half by
    // half with launches of its own, analysed there; the piece's task ends when they have.
    rill::index_launch(
        [](const rill::physical_regions& rs, std::size_t) {
          const rill::partition halves = rill::partition_equal(rs[0].reg, 2);
          rill::index_launch(
              [](const rill::physical_regions& half, std::size_t) {
                auto v = half[0].write<double, 1>(voltage);
                half[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] *= 2; });
              },
              halves, {rill::req(halves, {voltage.id}, rill::privilege::read_write)});
        },
        owned, {rill::req(owned, {voltage.id}, rill::privilege::read_write)});
    rill::promise<double> doubled;
    rill::launch(sum_voltages, {rill::req(nodes, {voltage.id}, rill::privilege::read_only)}, doubled);
    std::printf("after sub-launches in every piece: %.1f\n", doubled.get_future().get());
    // Steps of the same launch: each piece halves its nodes' voltages and adds one. Once a step
    // finds the pieces as the step before left them, its points are planned as remembered
    // (docs/regions.md, "Repeated launches") instead of analysed again.
    constexpr int steps = 10;
    const std::uint64_t repeated_before = rill::launch_counts_here().launches_repeated;
    for (int step = 0; step < steps; ++step)
      rill::index_launch(
          [](const rill::physical_regions& rs, std::size_t) {
            auto v = rs[0].write<double, 1>(voltage);
            rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = v[p] / 2 + 1; });
          },
          owned, {rill::req(owned, {voltage.id}, rill::privilege::read_write)});
    rill::promise<double> relaxed;
    rill::launch(sum_voltages, {rill::req(nodes, {voltage.id}, rill::privilege::read_only)}, relaxed);
    std::printf("after %d steps: %.3f, %llu of %d point launches repeated\n", steps, relaxed.get_future().get(),
                static_cast<unsigned long long>(rill::launch_counts_here().launches_repeated - repeated_before),
                steps * pieces);
    // Done with the graph: its instances go once the launches on it have ended (docs/regions.md,
    // "Destroying a tree"), and a launch on it from now on is refused.
    nodes.destroy().wait();
    wires.destroy().wait();
    return 0;
  });
}
