// docs/external.md: Iris's rendering (§V-C) in miniature. The program holds a scene's shapes on
// rank 0 -- objects with textures, opaque to the runtime -- and attaches them to a region; each
// strip of the image is rendered by a task, on any rank, from the shapes that cross it. The
// runtime moves shapes between ranks by serializing them (rill::serdes). Attached, every render
// fetches its shapes afresh; acquired, the copies from the last render are reused, and only the
// shapes a step changed travel again. At the release, the changed shapes replace the program's.
//
//   rill-scene [--rill:ranks=4]
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "rill/attach.hpp"
#include "rill/launch.hpp"
#include "rill/opaque.hpp"
#include "rill/partition.hpp"
#include "rill/rill.hpp"

namespace scene {

struct shape {
  std::int64_t left = 0, right = 0;   // the columns it covers
  std::vector<std::uint8_t> texture;  // its colour, column by column (cycling)
};

// Shapes serialized on each rank (counted where the runtime calls serialize).
std::atomic<long> sent[64];

}  // namespace scene

template <>
struct rill::serdes<scene::shape> {
  using shape = scene::shape;
  static std::size_t size(const shape& s) { return 16 + s.texture.size(); }
  static void serialize(const shape& s, std::span<std::byte> out) {
    scene::sent[rill::rank_me()].fetch_add(1);
    std::memcpy(out.data(), &s.left, 8);
    std::memcpy(out.data() + 8, &s.right, 8);
    std::memcpy(out.data() + 16, s.texture.data(), s.texture.size());
  }
  static shape* deserialize(std::span<const std::byte> in) {
    auto* s = new shape;
    std::memcpy(&s->left, in.data(), 8);
    std::memcpy(&s->right, in.data() + 8, 8);
    s->texture.resize(in.size() - 16);
    std::memcpy(s->texture.data(), in.data() + 16, in.size() - 16);
    return s;
  }
  static void destroy(shape* s) { delete s; }
};

namespace {

constexpr rill::opaque_field<scene::shape> shapes{{1}};
constexpr rill::field<double> pixel{2};
constexpr std::int64_t width = 4096, count = 64;

// Every rank renders its strips (Iris: each node a sub-scene): strip s on rank s % ranks. The
// default mapper would run each strip where most of its data is valid -- all of them on rank 0
// once the objects are acquired there.
struct strips_everywhere final : rill::default_mapper {
  int map_task(const rill::mapping_query& q) override {
    if (q.color < 0) return default_mapper::map_task(q);
    return static_cast<int>(q.color % static_cast<std::int64_t>(q.valid_bytes.size()));
  }
};

long serialized_so_far() {
  long n = 0;
  for (int r = 0; r < rill::rank_n(); ++r) n += rill::rpc(r, [] { return scene::sent[rill::rank_me()].load(); }).get();
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    rill::set_mapper(std::make_shared<strips_everywhere>());
    // The program's shapes: shape i covers 128 columns from 61 * i, its texture i + its column.
    std::vector<scene::shape*> held;
    for (std::int64_t i = 0; i < count; ++i) {
      auto* s = new scene::shape{61 * i, 61 * i + 127, std::vector<std::uint8_t>(2000)};
      for (std::size_t c = 0; c < s->texture.size(); ++c) s->texture[c] = static_cast<std::uint8_t>(i + c);
      held.push_back(s);
    }
    const std::size_t strips = 2 * static_cast<std::size_t>(rill::rank_n());
    const rill::region objects = rill::region::create(rill::rect<1>{0, count - 1}, rill::field_space{shapes});
    const rill::region image = rill::region::create(rill::rect<1>{0, width - 1}, rill::field_space{pixel});
    const rill::partition columns = rill::partition_equal(image, strips);
    // The shapes crossing each strip (neighbouring strips share some: an aliased partition).
    std::vector<rill::index_space<1>> crossing;
    for (std::size_t t = 0; t < strips; ++t) {
      const rill::rect<1> cols = columns.subregion(t).space<1>().bounds();
      std::vector<rill::point<1>> in;
      for (std::int64_t i = 0; i < count; ++i)
        if (held[static_cast<std::size_t>(i)]->right >= cols.lo[0] &&
            held[static_cast<std::size_t>(i)]->left <= cols.hi[0])
          in.push_back({i});
      crossing.push_back(rill::index_space<1>::from_points(in));
    }
    const rill::partition seen = rill::partition_by_subspaces(objects, crossing);
    const rill::partition fours = rill::partition_by_blocks(objects, rill::point<1>{4});
    rill::attach(objects, {shapes.id}, rill::opaque_resource::of(std::span(held)));

    const auto render = [&] {
      return rill::index_launch(
          [](const rill::physical_regions& rs, std::size_t) {
            const auto px = rs[0].write<double, 1>(pixel);
            const auto sh = rs[1].read<scene::shape*, 1>(shapes);
            rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { px[p] = 0; });
            rs[1].reg.space<1>().for_each_point([&](rill::point<1> q) {
              const scene::shape& s = *sh[q];
              rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) {
                if (p[0] >= s.left && p[0] <= s.right) px[p] += s.texture[static_cast<std::size_t>(p[0] - s.left)];
              });
            });
          },
          columns,
          {rill::req(columns, {pixel.id}, rill::privilege::write_discard),
           rill::req(seen, {shapes.id}, rill::privilege::read_only)});
    };
    const auto brighten = [&](std::size_t block) {  // shapes 4 * block .. 4 * block + 3, in their copies
      return rill::launch(
          [](const rill::physical_regions& rs) {
            const auto sh = rs[0].write<scene::shape*, 1>(shapes);
            rs[0].reg.space<1>().for_each_point([&](rill::point<1> q) {
              for (std::uint8_t& c : sh[q]->texture) c = static_cast<std::uint8_t>(c + 1);
            });
          },
          {rill::req(fours.subregion(block), {shapes.id}, rill::privilege::read_write)});
    };
    const auto checksum = [&] {
      rill::promise<double> sum;
      rill::launch(
          [](const rill::physical_regions& rs, rill::promise<double> out) {
            const auto px = rs[0].read<double, 1>(pixel);
            double s = 0;
            rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { s += px[p]; });
            out.put(s);
          },
          {rill::req(image, {pixel.id}, rill::privilege::read_only)}, sum);
      return sum.get_future().get();
    };

    long before = serialized_so_far();
    for (int step = 0; step < 2; ++step) render();
    render().wait();
    std::printf("attached: 3 renders serialized %ld shapes (every render fetches them)\n",
                serialized_so_far() - before);
    rill::acquire(objects);
    before = serialized_so_far();
    for (int step = 0; step < 3; ++step) {
      render();
      brighten(2 * static_cast<std::size_t>(step));  // 4 shapes change; their other copies are stale
    }
    render().wait();
    std::printf("acquired: 4 renders serialized %ld shapes (the first fetch, then changed ones)\n",
                serialized_so_far() - before);
    rill::release(objects).wait();
    std::printf("image checksum %.0f; shape 9's first texel %d (the release brought the change back)\n", checksum(),
                held[9]->texture[0]);
    rill::detach(objects).wait();
    image.destroy();
    objects.destroy().wait();
    for (scene::shape* s : held) delete s;
    return 0;
  });
}
