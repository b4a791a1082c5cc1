// I2 (BENCHMARKS.md; issue 22; Iris §VI-B, Fig. 9): queries and updates on K SQLite databases,
// each a table whose rows are the points of a region attached to it and acquired; 4096 operations
// in a random order, each a task on one database: a query reads its rows, an update rewrites them
// (both the same work). The read ratio x goes from 0 (all updates) to 1 (all queries).
//
//   write-after-read on   a query and the updates after it on the same database run together: the
//                         update takes another copy of the rows (Iris §IV-B, Fig. 5).
//   write-after-read off  every update waits for the queries before it (rill::set_write_after_read).
//
// Both in the same run, alternating, on one rank. Metric: total time from the acquire to the
// databases written back and synced (release and detach), per x. Check: every query's answer,
// and the databases' final rows, equal between the two (else exit 1).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "rill/attach.hpp"
#include "rill/launch.hpp"
#include "rill/rill.hpp"

namespace {

constexpr rill::field<double> value{1};

struct params {
  int databases = 4;
  rill::coord_t rows = 4096;
  int operations = 4096;
  int passes = 40;  // over a database's rows per operation: its work
};

rill::sqlite_resource database(const std::string& dir, int d, rill::io_mode mode) {
  return {dir + "/rill-i2-" + std::to_string(d) + ".db", "t", {rill::stored_as(value, "v")}, mode};
}

// Rows of a new database: row i holds i.
void make_databases(const params& p, const std::string& dir) {
  for (int d = 0; d < p.databases; ++d) {
    const rill::region r = rill::region::create(rill::rect<1>{0, p.rows - 1}, rill::field_space{value});
    rill::attach(r, {value.id}, database(dir, d, rill::io_mode::write_discard));
    rill::launch(
        [](const rill::physical_regions& rs) {
          const auto v = rs[0].write<double, 1>(value);
          rs[0].reg.space<1>().for_each_point([&](rill::point<1> q) { v[q] = static_cast<double>(q[0]); });
        },
        {rill::req(r, {value.id}, rill::privilege::write_discard)});
    rill::detach(r).wait();
    r.destroy().wait();
  }
}

struct outcome {
  double seconds = 0;
  std::vector<double> answers;  // every query's
  std::vector<double> finals;   // every database's sum after the run
};

double sum_rows(const rill::physical_regions& rs, int passes) {
  const auto v = rs[0].read<double, 1>(value);
  double s = 0;
  for (int k = 0; k < passes; ++k) rs[0].reg.space<1>().for_each_point([&](rill::point<1> q) { s += v[q] * (k + 1); });
  return s;
}

outcome run_operations(const params& p, const std::string& dir, double read_ratio, bool war) {
  rill::set_write_after_read(war);
  std::vector<rill::region> dbs;
  for (int d = 0; d < p.databases; ++d) {
    dbs.push_back(rill::region::create(rill::rect<1>{0, p.rows - 1}, rill::field_space{value}));
    rill::attach(dbs.back(), {value.id}, database(dir, d, rill::io_mode::read_write)).wait();
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<rill::future<double>> queries;
  const auto t0 = bench::clock::now();
  for (const rill::region& r : dbs) rill::acquire(r);
  for (int op = 0; op < p.operations; ++op) {
    const rill::region& r = dbs[rng() % dbs.size()];
    if (coin(rng) < read_ratio) {
      rill::promise<double> answer;
      rill::launch([](const rill::physical_regions& rs, rill::promise<double> out,
                      int passes) { out.put(sum_rows(rs, passes)); },
                   {rill::req(r, {value.id}, rill::privilege::read_only)}, answer, p.passes);
      queries.push_back(answer.get_future());
    } else {
      rill::launch(
          [](const rill::physical_regions& rs, int passes) {
            const double s = sum_rows(rs, passes - 1);  // the same work as a query
            const auto v = rs[0].write<double, 1>(value);
            rs[0].reg.space<1>().for_each_point(
                [&](rill::point<1> q) { v[q] = v[q] * 0.5 + static_cast<double>(q[0] % 7) + s * 1e-12; });
          },
          {rill::req(r, {value.id}, rill::privilege::read_write)}, p.passes);
    }
  }
  std::vector<rill::event> closed;
  for (const rill::region& r : dbs) closed.push_back(rill::detach(r));  // (releases first)
  rill::merge(closed).wait();
  outcome out;
  out.seconds = bench::seconds_since(t0);
  for (rill::future<double>& q : queries) out.answers.push_back(q.get());
  for (const rill::region& r : dbs) {
    rill::promise<double> sum;
    rill::launch([](const rill::physical_regions& rs, rill::promise<double> s) { s.put(sum_rows(rs, 1)); },
                 {rill::req(r, {value.id}, rill::privilege::read_only)}, sum);
    out.finals.push_back(sum.get_future().get());
    r.destroy().wait();
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  CLI::App app{"I2: queries and updates on K SQLite databases, write-after-read on and off"};
  params p;
  int reps = 3;
  bool quick = false;
  std::string dir = std::filesystem::temp_directory_path().string();
  app.add_option("--databases", p.databases, "databases (K)");
  app.add_option("--rows", p.rows, "rows per database");
  app.add_option("--operations", p.operations, "queries and updates in all");
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--dir", dir, "where the databases are");
  app.add_flag("--quick", quick, "fewer operations, two repetitions");
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);
  if (quick) p.operations = 512, reps = 2;

  const int code = rt.run([&] {
    bool same = true;
    for (double x : {0.0, 0.25, 0.5, 0.75, 1.0}) {
      std::vector<double> on, off;
      for (int rep = 0; rep < reps; ++rep) {
        make_databases(p, dir);
        const outcome a = run_operations(p, dir, x, true);
        make_databases(p, dir);
        const outcome b = run_operations(p, dir, x, false);
        same = same && a.answers == b.answers && a.finals == b.finals;
        on.push_back(a.seconds);
        off.push_back(b.seconds);
        bench::progress("I2 x={} rep {}: write-after-read on {:.0f} ms, off {:.0f} ms", x, rep, a.seconds * 1e3,
                        b.seconds * 1e3);
      }
      bench::emit_ms("I2", "sqlite", "total_time", on, "write-after-read off", off,
                     {{"read_ratio", x},
                      {"databases", p.databases},
                      {"rows", p.rows},
                      {"operations", p.operations},
                      {"workers", rt.options().workers}});
    }
    if (!same) bench::progress("I2: queries or databases differ between write-after-read on and off");
    return same ? 0 : 1;
  });
  for (int d = 0; d < p.databases; ++d) std::filesystem::remove(database(dir, d, rill::io_mode::read_only).path);
  return code;
}
