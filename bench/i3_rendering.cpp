// I3 (BENCHMARKS.md; issue 22; Iris §V-C, Fig. 10): iterative rendering of a scene whose objects
// are held by the program on rank 0, opaque to the runtime (moved by serializing them). The image
// is cut into strips, two per rank; each step renders every strip in a task that reads the objects
// crossing it (an aliased partition), and the program changes a few objects (a task on rank 0
// writing them: their textures shift).
//
//   reuse off  the objects attached and not acquired: every task fetches its objects from rank 0
//              afresh each step (Iris's baseline: the runtime cannot tell whether the program
//              changed them), and the changed ones are written back to the program each step.
//   reuse on   the same, acquired: the copies a task had are reused, and only objects that
//              changed travel again (Iris §IV-C); the release brings the changes back.
//
// Metrics: bytes sent between ranks over the steps (every rank's transport bytes, summed: the
// objects' serialized bytes and all the runtime's other messages) and time per step, reuse on
// against reuse off. Target (issue 22): >= 70 % fewer bytes with reuse. Check: both variants'
// images equal, and the program's objects after the release equal the reuse-off ones (else exit 1).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "common.hpp"
#include "rill/attach.hpp"
#include "rill/launch.hpp"
#include "rill/opaque.hpp"
#include "rill/partition.hpp"
#include "rill/rill.hpp"

namespace i3 {

// A scene object: the columns it covers and its texture (a byte per texel, cycled over them).
struct object {
  std::int64_t left = 0, right = 0;
  std::vector<std::uint8_t> texture;
};

}  // namespace i3

template <>
struct rill::serdes<i3::object> {
  using object = i3::object;
  static std::size_t size(const object& o) { return 16 + o.texture.size(); }
  static void serialize(const object& o, std::span<std::byte> out) {
    std::memcpy(out.data(), &o.left, 8);
    std::memcpy(out.data() + 8, &o.right, 8);
    std::memcpy(out.data() + 16, o.texture.data(), o.texture.size());
  }
  static object* deserialize(std::span<const std::byte> in) {
    auto* o = new object;
    std::memcpy(&o->left, in.data(), 8);
    std::memcpy(&o->right, in.data() + 8, 8);
    o->texture.resize(in.size() - 16);
    std::memcpy(o->texture.data(), in.data() + 16, in.size() - 16);
    return o;
  }
  static void destroy(object* o) { delete o; }
};

namespace {

constexpr rill::opaque_field<i3::object> objects_f{{1}};
constexpr rill::field<double> pixel{2};

struct params {
  std::int64_t objects = 256;
  std::int64_t width = 65536;  // columns of the image
  std::size_t min_kib = 64, max_kib = 384;
  int steps = 10;
  int changed = 8;  // objects the program changes each step
};

std::vector<i3::object*> make_scene(const params& p) {
  std::mt19937_64 rng(42);
  std::vector<i3::object*> scene;
  for (std::int64_t i = 0; i < p.objects; ++i) {
    const std::size_t bytes = 1024 * (p.min_kib + rng() % (p.max_kib - p.min_kib + 1));
    const std::int64_t span = 512 + static_cast<std::int64_t>(rng() % 2048);
    const std::int64_t left = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(p.width - span));
    auto* o = new i3::object{left, left + span - 1, std::vector<std::uint8_t>(bytes)};
    for (std::size_t t = 0; t < bytes; ++t) o->texture[t] = static_cast<std::uint8_t>(rng());
    scene.push_back(o);
  }
  return scene;
}

// Every rank renders its strips (Iris: each node a sub-scene): strip s on rank s % ranks. The
// default mapper would run each strip where most of its data is valid -- all of them on rank 0
// once the objects are acquired there.
struct strips_everywhere final : rill::default_mapper {
  int map_task(const rill::mapping_query& q) override {
    if (q.color < 0) return default_mapper::map_task(q);
    return static_cast<int>(q.color % static_cast<std::int64_t>(q.valid_bytes.size()));
  }
};

std::uint64_t bytes_sent_everywhere() {
  std::uint64_t n = 0;
  for (int r = 0; r < rill::rank_n(); ++r) n += rill::rpc(r, [] { return rill::stats().bytes_sent; }).get();
  return n;
}

struct outcome {
  double seconds = 0;
  std::uint64_t bytes = 0;
  double image = 0;                  // the last image's checksum
  std::vector<std::uint8_t> firsts;  // every object's first texel after the run
};

outcome render_scene(const params& p, bool reuse) {
  std::vector<i3::object*> held = make_scene(p);
  const std::size_t strips = 2 * static_cast<std::size_t>(rill::rank_n());
  const rill::region objects = rill::region::create(rill::rect<1>{0, p.objects - 1}, rill::field_space{objects_f});
  const rill::region image = rill::region::create(rill::rect<1>{0, p.width - 1}, rill::field_space{pixel});
  const rill::partition columns = rill::partition_equal(image, strips);
  std::vector<rill::index_space<1>> crossing;
  for (std::size_t s = 0; s < strips; ++s) {
    const rill::rect<1> cols = columns.subregion(s).space<1>().bounds();
    std::vector<rill::point<1>> in;
    for (std::int64_t i = 0; i < p.objects; ++i) {
      const i3::object& o = *held[static_cast<std::size_t>(i)];
      if (o.right >= cols.lo[0] && o.left <= cols.hi[0]) in.push_back({i});
    }
    crossing.push_back(rill::index_space<1>::from_points(in));
  }
  const rill::partition seen = rill::partition_by_subspaces(objects, crossing);
  const rill::partition single = rill::partition_by_blocks(objects, rill::point<1>{1});
  rill::attach(objects, {objects_f.id}, rill::opaque_resource::of(std::span(held))).wait();
  if (reuse) rill::acquire(objects).wait();

  const auto render = [&] {
    return rill::index_launch(
        [](const rill::physical_regions& rs, std::size_t) {
          const auto px = rs[0].write<double, 1>(pixel);
          const auto obj = rs[1].read<i3::object*, 1>(objects_f);
          const rill::rect<1> cols = rs[0].reg.space<1>().bounds();
          for (rill::coord_t c = cols.lo[0]; c <= cols.hi[0]; ++c) px[{c}] = 0;
          rs[1].reg.space<1>().for_each_point([&](rill::point<1> q) {
            const i3::object& o = *obj[q];
            // Every texel of the object lands on one of its columns: the work is the object's size.
            const auto span = static_cast<std::size_t>(o.right - o.left + 1);
            for (std::size_t t = 0; t < o.texture.size(); ++t) {
              const rill::coord_t c = o.left + static_cast<rill::coord_t>(t % span);
              if (c >= cols.lo[0] && c <= cols.hi[0]) px[{c}] += o.texture[t];
            }
          });
        },
        columns,
        {rill::req(columns, {pixel.id}, rill::privilege::write_discard),
         rill::req(seen, {objects_f.id}, rill::privilege::read_only)});
  };
  // The program's update of one object: a task where the mapper puts it (attached, rank 0's, where
  // it is issued; acquired, where a copy of the object is valid).
  const auto change = [&](std::int64_t which) {
    return rill::launch(
        [](const rill::physical_regions& rs) {
          const auto obj = rs[0].write<i3::object*, 1>(objects_f);
          rs[0].reg.space<1>().for_each_point([&](rill::point<1> q) {
            for (std::uint8_t& t : obj[q]->texture) t = static_cast<std::uint8_t>(t + 1);
          });
        },
        {rill::req(single.subregion(static_cast<std::size_t>(which)), {objects_f.id}, rill::privilege::read_write)});
  };

  const std::uint64_t bytes0 = bytes_sent_everywhere();
  const auto t0 = bench::clock::now();
  for (int step = 0; step < p.steps; ++step) {
    render();
    for (int k = 0; k < p.changed; ++k) change((step * 37 + k * 101) % p.objects);
  }
  render();
  if (reuse) rill::release(objects);
  rill::detach(objects).wait();
  outcome out;
  out.seconds = bench::seconds_since(t0);
  out.bytes = bytes_sent_everywhere() - bytes0;
  rill::promise<double> sum;
  rill::launch(
      [](const rill::physical_regions& rs, rill::promise<double> s) {
        const auto px = rs[0].read<double, 1>(pixel);
        double total = 0;
        rs[0].reg.space<1>().for_each_point([&](rill::point<1> q) { total += px[q] * static_cast<double>(q[0] % 7); });
        s.put(total);
      },
      {rill::req(image, {pixel.id}, rill::privilege::read_only)}, sum);
  out.image = sum.get_future().get();
  for (i3::object* o : held) out.firsts.push_back(o->texture[0]);
  image.destroy();
  objects.destroy().wait();
  for (i3::object* o : held) delete o;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  CLI::App app{"I3: iterative rendering of opaque objects held on rank 0, reuse of local copies on/off"};
  params p;
  int reps = 3;
  bool quick = false;
  app.add_option("--objects", p.objects, "objects in the scene");
  app.add_option("--steps", p.steps, "render steps");
  app.add_option("--changed", p.changed, "objects changed each step");
  app.add_option("--reps", reps, "repetitions");
  app.add_flag("--quick", quick, "a small scene, two repetitions");
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);
  if (quick) p.objects = 64, p.steps = 5, p.changed = 2, reps = 2;

  return rt.run([&] {
    rill::set_mapper(std::make_shared<strips_everywhere>());
    std::vector<double> on_s, off_s, on_bytes, off_bytes;
    bool same = true;
    for (int rep = 0; rep < reps; ++rep) {
      const outcome off = render_scene(p, false);
      const outcome on = render_scene(p, true);
      same = same && on.image == off.image && on.firsts == off.firsts;
      off_s.push_back(off.seconds / (p.steps + 1));
      on_s.push_back(on.seconds / (p.steps + 1));
      off_bytes.push_back(static_cast<double>(off.bytes) / 1048576);
      on_bytes.push_back(static_cast<double>(on.bytes) / 1048576);
      bench::progress("I3 rep {}: reuse off {:.1f} MiB {:.1f} ms/step, on {:.1f} MiB {:.1f} ms/step", rep,
                      off_bytes.back(), off_s.back() * 1e3, on_bytes.back(), on_s.back() * 1e3);
    }
    if (!same) {
      bench::progress("I3: the images or objects of reuse on and off differ");
      return 1;
    }
    const nlohmann::json extra{{"ranks", rill::rank_n()},
                               {"workers", rt.options().workers},
                               {"objects", p.objects},
                               {"steps", p.steps},
                               {"changed_per_step", p.changed}};
    bench::emit({"I3", "rendering", "bytes_between_ranks", "MiB", false, on_bytes, "reuse off", off_bytes, extra});
    bench::emit_ms("I3", "rendering", "time_per_step", on_s, "reuse off", off_s, extra);
    const double fewer = 1 - bench::summarize(on_bytes).median / bench::summarize(off_bytes).median;
    bench::emit({"I3", "rendering", "fewer_bytes_with_reuse", "fraction", true, {fewer}, "", {}, extra});
    return 0;
  });
}
