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
//
// Beside it, "ideal_saved": the time write-after-read saves in an ideal schedule of the same
// operations on the run's workers (every operation one unit of work, a worker never idle while an
// operation is ready). How much there is to save depends on how many operations can run at once:
// it is the figure to compare the measured saving with (Iris measured on more cores).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <queue>
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

// One operation of a run: on which database, and whether it is a query.
struct operation {
  int database = 0;
  bool query = false;
};

std::vector<operation> draw_operations(const params& p, double read_ratio) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<operation> ops(static_cast<std::size_t>(p.operations));
  for (operation& o : ops) {
    o.database = static_cast<int>(rng() % static_cast<std::uint64_t>(p.databases));
    o.query = coin(rng) < read_ratio;
  }
  return ops;
}

// Units of time the operations take on `workers`, each one unit, started in program order among
// those whose dependences are done: a query after the last update of its database; an update
// after that update and, without write-after-read, after the queries since it.
double ideal_makespan(const std::vector<operation>& ops, int databases, int workers, bool war) {
  const std::size_t n = ops.size();
  std::vector<std::vector<std::size_t>> after(n);  // the operations waiting for each
  std::vector<int> waits_for(n, 0);
  std::vector<long> last_update(static_cast<std::size_t>(databases), -1);
  std::vector<std::vector<std::size_t>> queries_since(static_cast<std::size_t>(databases));
  const auto depend = [&](std::size_t before, std::size_t op) {
    after[before].push_back(op);
    ++waits_for[op];
  };
  for (std::size_t i = 0; i < n; ++i) {
    const auto d = static_cast<std::size_t>(ops[i].database);
    if (last_update[d] >= 0) depend(static_cast<std::size_t>(last_update[d]), i);
    if (ops[i].query) {
      queries_since[d].push_back(i);
    } else {
      if (!war)
        for (std::size_t q : queries_since[d]) depend(q, i);
      queries_since[d].clear();
      last_update[d] = static_cast<long>(i);
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (waits_for[i] == 0) ready.push(i);
  using ending = std::pair<double, std::size_t>;
  std::priority_queue<ending, std::vector<ending>, std::greater<>> running;
  double now = 0;
  for (std::size_t done = 0; done < n; ++done) {
    while (!ready.empty() && running.size() < static_cast<std::size_t>(workers)) {
      running.emplace(now + 1, ready.top());
      ready.pop();
    }
    const auto [end, op] = running.top();
    running.pop();
    now = end;
    for (std::size_t next : after[op])
      if (--waits_for[next] == 0) ready.push(next);
  }
  return now;
}

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
  std::vector<rill::future<double>> queries;
  const auto t0 = bench::clock::now();
  for (const rill::region& r : dbs) rill::acquire(r);
  for (const operation& op : draw_operations(p, read_ratio)) {
    const rill::region& r = dbs[static_cast<std::size_t>(op.database)];
    if (op.query) {
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
      const std::vector<operation> ops = draw_operations(p, x);
      const int workers = rt.options().workers;
      const double ideal_saved =
          1 - ideal_makespan(ops, p.databases, workers, true) / ideal_makespan(ops, p.databases, workers, false);
      bench::emit_ms("I2", "sqlite", "total_time", on, "write-after-read off", off,
                     {{"read_ratio", x},
                      {"ideal_saved", ideal_saved},
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
