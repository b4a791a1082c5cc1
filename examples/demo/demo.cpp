// rill-demo: heat spreading through a plate, as a Rill application uses the whole model.
//
//   rill-demo [--size N] [--steps S] [--checkpoint-every K] [--dir DIR] [--input FILE.h5] [--rill:...]
//
// 1. The input -- the plate's initial temperature and its conductivity -- is an HDF5 file. The
//    demo writes it first (through a region attached to the file), then reads it into the plate by
//    attaching the file to the plate's region: no task opens a file.
// 2. The plate is a logical region cut into strips, each with a ghost region that adds a row of
//    each neighbour. A step is an index launch: every strip reads its ghost region and writes its
//    rows. The program issues no copy and no message: the runtime finds that each step needs the
//    neighbours' rows of the step before and moves them, between ranks where strips are apart.
// 3. Every few steps the strips' heat is reduced into a one-point region (a bulk reduction), and
//    every K steps the temperature is checkpointed to an HDF5 file through an attached region:
//    the I/O threads write it while the next steps compute.
// 4. At the end, the result is checked against a sequential run of the same physics, bit for bit,
//    and so is the last checkpoint, read back through an attached region.
//
// On a terminal it draws a progress bar; it ends with a summary and writes a Perfetto trace of the
// run (--trace, or --no-trace). `mpirun -np 4 rill-demo` runs the same program on four processes.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "plate.hpp"
#include "plate_regions.hpp"
#include "progress_bar.hpp"
#include "rill/rill.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct options {
  plate::params p;
  std::string dir = "rill-demo-out";
  std::string input;  // empty: generate dir/input.h5
  std::string trace;  // empty: dir/trace.json
  bool no_trace = false;
};

// Where the run's trace goes: a --rill:trace=PATH or RILL_TRACE of the user's, else DIR/trace.json
// (added to the runtime's command line), or nowhere with --no-trace.
std::string trace_path(const std::vector<std::string>& words, const options& o) {
  for (const std::string& w : words)
    if (w.rfind("--rill:trace=", 0) == 0) return w.substr(std::string("--rill:trace=").size());
  if (const char* env = std::getenv("RILL_TRACE")) return env;
  if (o.no_trace) return "";
  return o.trace.empty() ? o.dir + "/trace.json" : o.trace;
}

// When each checkpoint became durable, seen from rank 0 (tasks that run once each one has).
struct checkpoint_clock {
  std::mutex lock;
  double write_seconds = 0;  // from issue to durable, summed
  int written = 0;
};

void checkpoint_done(checkpoint_clock* c, clock_type::time_point issued) {
  std::lock_guard<std::mutex> g(c->lock);
  c->write_seconds += seconds_since(issued);
  ++c->written;
}

// Every rank's message counters, summed.
rill::rank_stats all_ranks_stats() {
  std::vector<rill::future<rill::rank_stats>> each;
  for (int r = 0; r < rill::rank_n(); ++r) each.push_back(rill::rpc(r, [] { return rill::stats(); }));
  rill::rank_stats sum;
  for (auto& f : each) {
    const rill::rank_stats s = f.get();
    sum.messages_sent += s.messages_sent;
    sum.buffers_sent += s.buffers_sent;
    sum.bytes_sent += s.bytes_sent;
    sum.tasks_run += s.tasks_run;
  }
  return sum;
}

std::string bytes_text(double b) {
  if (b >= 1 << 30) return fmt::format("{:.2f} GiB", b / (1 << 30));
  if (b >= 1 << 20) return fmt::format("{:.1f} MiB", b / (1 << 20));
  return fmt::format("{:.1f} KiB", b / 1024);
}

// The largest difference between two fields, and whether they are the same bit for bit.
double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double most = 0;
  for (std::size_t i = 0; i < a.size(); ++i) most = std::max(most, std::abs(a[i] - b[i]));
  return most;
}

int run_demo(const options& o, const std::string& trace) {
  const plate::params& p = o.p;
  const int pieces = p.pieces > 0 ? p.pieces : 2 * rill::rank_n();
  const std::string input = o.input.empty() ? o.dir + "/input.h5" : o.input;
  std::filesystem::create_directories(o.dir);
  fmt::print("rill-demo: heat through a {} x {} plate, {} steps, {} strips on {} ranks x {} workers\n", p.width,
             p.height, p.steps, pieces, rill::rank_n(), rill::workers_here());

  // ---- input ----
  const auto t_start = clock_type::now();
  plate::plate_regions plate(p, pieces);
  plate::use_block_mapper(plate);
  if (o.input.empty()) {
    plate::generate_input(plate, input).wait();
    fmt::print("  input: wrote {} (HDF5: temperature, conductivity) through an attached region\n", input);
  }
  plate::load_input(plate, input).wait();
  const double input_seconds = seconds_since(t_start);
  fmt::print("  input: read {} into {} strips through an attached region ({:.2f} s)\n", input, pieces, input_seconds);

  // ---- the run: a window of steps in flight, reductions and checkpoints among them ----
  std::vector<int> reported;
  for (int s = p.report_every - 1; s < p.steps; s += p.report_every) reported.push_back(s);
  if (reported.empty() || reported.back() != p.steps - 1) reported.push_back(p.steps - 1);

  progress_bar bar(p.steps);
  checkpoint_clock clock;
  std::vector<rill::event> checkpoints;
  std::vector<rill::future<double>> heat;
  std::deque<rill::event> in_flight;
  constexpr std::size_t window = 4;  // steps issued ahead of the last one waited for
  std::string last_checkpoint;
  int finished = 0;
  const auto t_run = clock_type::now();
  auto show = [&] {
    std::string note = fmt::format("step {}/{}", finished, p.steps);
    for (auto it = heat.rbegin(); it != heat.rend(); ++it)
      if (it->as_event().has_triggered()) {
        note += fmt::format("  heat {:.4g}", it->get());
        break;
      }
    if (finished > 0) note += fmt::format("  {:.0f} steps/s", finished / seconds_since(t_run));
    note += fmt::format("  checkpoints {}/{}", clock.written, checkpoints.size());
    bar.show(finished, note);
  };
  std::size_t next_report = 0;
  for (int s = 0; s < p.steps; ++s) {
    in_flight.push_back(plate::step(plate, s));
    if (next_report < reported.size() && reported[next_report] == s) {
      heat.push_back(plate::heat_after(plate, s));
      ++next_report;
    }
    if (p.checkpoint_every > 0 && (s + 1) % p.checkpoint_every == 0) {
      last_checkpoint = fmt::format("{}/checkpoint-{}.h5", o.dir, s + 1);
      const rill::event durable = plate::checkpoint(plate, s, last_checkpoint);
      // A task on this rank notes when the checkpoint is durable; waiting for it waits for both.
      checkpoints.push_back(rill::proc(0).spawn(rill::after(durable), checkpoint_done, &clock, clock_type::now()));
    }
    if (in_flight.size() > window) {
      in_flight.front().wait();
      in_flight.pop_front();
      ++finished;
      show();
    }
  }
  while (!in_flight.empty()) {
    in_flight.front().wait();
    in_flight.pop_front();
    ++finished;
  }
  const double steps_seconds = seconds_since(t_run);
  show();
  const auto t_drain = clock_type::now();
  rill::merge(checkpoints).wait();
  std::vector<double> heats;
  for (auto& f : heat) heats.push_back(f.get());
  const double drain_seconds = seconds_since(t_drain);
  show();
  bar.finish();

  // ---- verification against the sequential reference ----
  const auto t_check = clock_type::now();
  const std::vector<double> result = plate::temperature_after_step(plate, p.steps - 1);
  const plate::reference ref = plate::run_reference(p, reported);
  const double field_error = max_difference(result, ref.final_temperature);
  double heat_error = heats.size() == ref.heat_at_report.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < heats.size() && i < ref.heat_at_report.size(); ++i)
    heat_error = std::max(heat_error, std::abs(heats[i] - ref.heat_at_report[i]) / std::abs(ref.heat_at_report[i]));
  double checkpoint_error = 0;
  if (!last_checkpoint.empty())
    checkpoint_error = max_difference(plate::read_checkpoint(p, last_checkpoint), ref.checkpointed);
  const double check_seconds = seconds_since(t_check);
  const bool ok = field_error == 0 && heat_error < 1e-12 && checkpoint_error == 0;

  // ---- summary ----
  const rill::rank_stats msgs = all_ranks_stats();
  const rill::launch_counts launches = rill::launch_counts_here();
  const double points = static_cast<double>(p.width) * static_cast<double>(p.height) * p.steps;
  const double checkpoint_bytes = static_cast<double>(checkpoints.size()) * static_cast<double>(p.width) *
                                  static_cast<double>(p.height) * sizeof(double);
  fmt::print("summary:\n");
  fmt::print("  speed       {:.1f} steps/s, {:.1f} M point updates/s ({} steps in {:.2f} s)\n", p.steps / steps_seconds,
             points / steps_seconds / 1e6, p.steps, steps_seconds);
  fmt::print("  moved       {} messages in {} buffers ({}), {} region copies ({}) that the runtime chose\n",
             msgs.messages_sent, msgs.buffers_sent, bytes_text(static_cast<double>(msgs.bytes_sent)), launches.copies,
             bytes_text(static_cast<double>(launches.bytes_copied)));
  if (!checkpoints.empty()) {
    const double hidden = clock.write_seconds > 0 ? std::max(0.0, 1.0 - drain_seconds / clock.write_seconds) : 1.0;
    fmt::print(
        "  I/O         {} checkpoints ({}) took {:.2f} s to write; the run waited {:.2f} s for them: {:.0f}% hidden\n",
        checkpoints.size(), bytes_text(checkpoint_bytes), clock.write_seconds, drain_seconds, 100 * hidden);
  }
  fmt::print(
      "  time        input {:.2f} s, steps {:.2f} s, waiting for I/O {:.2f} s, checking {:.2f} s; {} tasks ran\n",
      input_seconds, steps_seconds, drain_seconds, check_seconds, msgs.tasks_run);
  fmt::print("  heat        {:.6g} at the end ({} reductions)\n", heats.empty() ? 0.0 : heats.back(), heats.size());
  fmt::print("  check       {} against a sequential run: temperature {}, heat within {:.1e}{}\n",
             ok ? "verified" : "FAILED", field_error == 0 ? "identical" : fmt::format("off by {:.3g}", field_error),
             heat_error,
             last_checkpoint.empty() ? ""
                                     : fmt::format(", checkpoint of step {} {}", ref.checkpoint_step,
                                                   checkpoint_error == 0 ? "identical" : "DIFFERS"));
  if (!trace.empty()) fmt::print("trace: {} (written as the run ends; open it at https://ui.perfetto.dev)\n", trace);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"rill-demo: heat through a plate, with every part of Rill's model (runtime flags: --rill:help)"};
  app.add_option("--size", o.p.width, "points per side of the plate")->check(CLI::Range(16, 1 << 14));
  app.add_option("--steps", o.p.steps, "time steps")->check(CLI::Range(1, 1 << 20));
  app.add_option("--checkpoint-every", o.p.checkpoint_every, "steps between checkpoints (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--report-every", o.p.report_every, "steps between reductions of the heat")
      ->check(CLI::PositiveNumber);
  app.add_option("--pieces", o.p.pieces, "strips of the plate (0: two per rank)")->check(CLI::NonNegativeNumber);
  app.add_option("--dir", o.dir, "where the input, checkpoints and trace go");
  app.add_option("--input", o.input, "an HDF5 input of your own (datasets temperature and conductivity)")
      ->check(CLI::ExistingFile);
  app.add_option("--trace", o.trace, "where the Perfetto trace goes (default: DIR/trace.json)");
  app.add_flag("--no-trace", o.no_trace, "write no trace");
  app.allow_extras();  // the runtime's --rill:* flags
  CLI11_PARSE(app, argc, argv);
  for (const std::string& extra : app.remaining())
    if (extra.rfind("--rill:", 0) != 0) {
      fmt::print(stderr, "rill-demo: unknown argument '{}' (--help lists the demo's, --rill:help the runtime's)\n",
                 extra);
      return 2;
    }
  o.p.height = o.p.width;
  if (o.p.pieces > o.p.height) {
    fmt::print(stderr, "rill-demo: --pieces {} is more than the plate's {} rows\n", o.p.pieces, o.p.height);
    return 2;
  }

  std::vector<std::string> words(argv, argv + argc);
  const std::string trace = trace_path(words, o);
  const bool add_trace_flag =
      !trace.empty() && std::getenv("RILL_TRACE") == nullptr &&
      std::none_of(words.begin(), words.end(), [](const std::string& w) { return w.rfind("--rill:trace", 0) == 0; });
  if (add_trace_flag) words.push_back("--rill:trace=" + trace);
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  int runtime_argc = static_cast<int>(words.size());
  rill::runtime rt(runtime_argc, args.data());
  return rt.run([&] { return run_demo(o, trace); });
}
