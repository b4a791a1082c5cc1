// The example of docs/data.md: index spaces and field spaces are values. Rank 0 builds the
// boundary of a grid and a sparse set of ids, and every rank computes from them what it owns.
#include <cstdio>
#include <vector>

#include "rill/rill.hpp"

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    const rill::rect<2> grid{{0, 0}, {99, 99}};
    const auto boundary = rill::index_space<2>(grid).subtract(rill::rect<2>{{1, 1}, {98, 98}});
    std::vector<rill::point<1>> ids;
    for (int i = 0; i < 3000; i += 3) ids.push_back({i});
    const auto sparse = rill::index_space<1>::from_points(ids);
    constexpr rill::field<double> voltage{1};
    constexpr rill::field<float> charge{2};
    const rill::field_space fields{voltage, charge};
    std::printf("boundary: %zu points in %zu rects; ids: %zu points; fields: %zu bytes a point\n", boundary.volume(),
                boundary.rects().size(), sparse.volume(), fields.bytes_per_point());

    // Each rank owns a band of rows; it counts the boundary points and ids that fall in it.
    const int n = rill::rank_n();
    std::vector<rill::future<std::size_t>> owned;
    for (int r = 0; r < n; ++r)
      owned.push_back(rill::rpc(
          r,
          [](const rill::index_space<2>& b, const rill::index_space<1>& s, int ranks) {
            const rill::coord_t rows = 100 / ranks + 1, first = rows * rill::rank_me();
            const rill::rect<2> band{{0, first}, {99, first + rows - 1}};
            const rill::rect<1> range{first * 30, (first + rows) * 30 - 1};
            return b.intersect(band).volume() + s.intersect(range).volume();
          },
          boundary, sparse, n));
    std::size_t total = 0;
    for (auto& f : owned) total += f.get();
    std::printf("every rank counted its share: %zu of %zu\n", total, boundary.volume() + sparse.volume());
    return total == boundary.volume() + sparse.volume() ? 0 : 1;
  });
}
