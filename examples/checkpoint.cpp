// docs/checkpoint.md: a simulation that checkpoints its state every k steps through attached
// files, and restarts from the last complete checkpoint after a crash.
//
//   rill-checkpoint --dir ckpt --steps 40 --every 5 [--points N] [--step-ms MS] [--pause-ms MS]
//
// The state is a region of N doubles cut into 8 pieces; a step is an index launch updating every
// point from its value and the step number. Every k steps the state is copied by a launch into a
// region attached write_discard to ckpt/state-<step>.bin and detached: the runtime writes the file
// on its I/O threads while the next steps run, and the file takes its name only once complete and
// synced. At start-up, the program continues after the newest state-<step>.bin there is (a
// half-written checkpoint is a temporary file, never that name), reading it through a read_only
// attachment. The last line gives the state's checksum: the same whether the run was interrupted
// (kill -9) and restarted any number of times or not. --step-ms and --pause-ms slow a step's tasks
// and a checkpoint's copies, so that a test can kill the run in the middle of one.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "rill/attach.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"
#include "rill/rill.hpp"

namespace {

constexpr rill::field<double> value{1};
constexpr std::size_t pieces = 8;

struct state {
  rill::region root;
  rill::partition parts;
  explicit state(rill::coord_t points)
      : root(rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value})),
        parts(rill::partition_equal(root, pieces)) {}
};

void pause_ms(int ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// The newest complete checkpoint in dir: its step, or 0.
int newest_checkpoint(const std::string& dir) {
  int newest = 0;
  const std::regex name("state-([0-9]+)\\.bin");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    if (std::regex_match(file, m, name)) newest = std::max(newest, std::stoi(m[1]));
  }
  return newest;
}

std::string checkpoint_path(const std::string& dir, int step) {
  return dir + "/state-" + std::to_string(step) + ".bin";
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  CLI::App app{"rill-checkpoint: a simulation that checkpoints through attached files and restarts"};
  std::string dir;
  rill::coord_t points = 1 << 20;
  int steps = 40, every = 5, step_ms = 0, checkpoint_pause_ms = 0;
  app.add_option("--dir", dir, "where the checkpoints are")->required();
  app.add_option("--points", points, "points of the state");
  app.add_option("--steps", steps, "steps of the whole run");
  app.add_option("--every", every, "steps between checkpoints")->check(CLI::PositiveNumber);
  app.add_option("--step-ms", step_ms, "milliseconds each task of a step sleeps (to slow the run)");
  app.add_option("--pause-ms", checkpoint_pause_ms, "milliseconds each task of a checkpoint sleeps");
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);

  return rt.run([&] {
    std::filesystem::create_directories(dir);
    state live(points);
    const int start = newest_checkpoint(dir);
    if (start > 0) {
      // Read the checkpoint into the pieces where they run; the detach leaves the data there.
      rill::attach(live.root, {value.id}, rill::file_resource{checkpoint_path(dir, start), rill::io_mode::read_only});
      rill::index_launch([](const rill::physical_regions&, std::size_t) {}, live.parts,
                         {rill::req(live.parts, {value.id}, rill::privilege::read_only)});
      rill::detach(live.root).wait();
    } else {
      rill::index_launch(
          [](const rill::physical_regions& rs, std::size_t) {
            const auto v = rs[0].write<double, 1>(value);
            rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = static_cast<double>(p[0]) * 1e-3; });
          },
          live.parts, {rill::req(live.parts, {value.id}, rill::privilege::write_discard)});
    }

    std::vector<rill::event> written;
    for (int s = start + 1; s <= steps; ++s) {
      rill::index_launch(
          [](const rill::physical_regions& rs, std::size_t, int step, int ms) {
            pause_ms(ms);
            const auto v = rs[0].write<double, 1>(value);
            rs[0].reg.space<1>().for_each_point(
                [&](rill::point<1> p) { v[p] = v[p] * 0.999 + std::sin(1e-3 * static_cast<double>(p[0] + 7 * step)); });
          },
          live.parts, {rill::req(live.parts, {value.id}, rill::privilege::read_write)}, s, step_ms);
      if (s % every != 0) continue;
      // A checkpoint: the state copied into a region attached to a new file, which the detach
      // makes durable under its name; the steps go on meanwhile.
      state saved(points);
      rill::attach(saved.root, {value.id}, rill::file_resource{checkpoint_path(dir, s), rill::io_mode::write_discard});
      rill::index_launch(
          [](const rill::physical_regions& rs, std::size_t, int ms) {
            const auto from = rs[0].read<double, 1>(value);
            const auto to = rs[1].write<double, 1>(value);
            rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { to[p] = from[p]; });
            pause_ms(ms);
          },
          live.parts,
          {rill::req(live.parts, {value.id}, rill::privilege::read_only),
           rill::req(saved.parts, {value.id}, rill::privilege::write_discard)},
          checkpoint_pause_ms);
      const rill::event durable = rill::detach(saved.root);
      written.push_back(saved.root.destroy(durable));
      written.push_back(durable);
    }
    rill::merge(written).wait();

    rill::promise<double> sum;
    rill::launch(
        [](const rill::physical_regions& rs, rill::promise<double> out) {
          const auto v = rs[0].read<double, 1>(value);
          double s = 0;
          rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { s += v[p]; });
          out.put(s);
        },
        {rill::req(live.root, {value.id}, rill::privilege::read_only)}, sum);
    std::printf("rill-checkpoint: step %d of %d (started after step %d), checksum %.17g\n", steps, steps, start,
                sum.get_future().get());
    return 0;
  });
}
