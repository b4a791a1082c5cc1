// SQLite tables attached as external instances (rill::sqlite_resource): the rows of a 1-D
// instance's points round-trip bit-exact through a table (checked with SQL, as another program
// would read it); a table another program made is read, and a copy of a subspace updates only its
// rows; a schema that does not match the fields, a missing table, column or row, a 2-D instance
// are refused naming the database and the cause.
#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "file_harness.hpp"
#include "harness.hpp"
#include "rill/copy.hpp"
#include "rill/external.hpp"
#include "rill/instance.hpp"
#include "rill/proc.hpp"

namespace rill_test {
namespace {

class external_sqlite : public ::testing::TestWithParam<setup> {};

using namespace data;  // NOLINT(google-build-using-namespace): the suite's shared names

constexpr rill::field<std::int64_t> id_field{1};
constexpr rill::field<double> mass{2};
constexpr rill::field<std::int32_t> charge{3};
const rill::field_space particle{id_field, mass, charge};

rill::sqlite_resource table(const std::string& path, rill::io_mode mode) {
  return {path,
          "particles",
          {rill::stored_as(id_field, "id"), rill::stored_as(mass, "mass"), rill::stored_as(charge, "charge")},
          mode};
}

double mass_of(std::int64_t code) { return static_cast<double>(code) / 8; }
std::int32_t charge_of(std::int64_t code) { return static_cast<std::int32_t>(-(code % 1000)); }

rill::instance with_codes(int rank, const rill::index_space<1>& space, std::int64_t salt) {
  auto [inst, ready] = rill::instance::create(rill::memory::system(rank), space, particle);
  ready.wait();
  rill::rpc(
      rank,
      [](rill::instance i, const rill::index_space<1>& s, std::int64_t sa) {
        rill::accessor<std::int64_t, 1> k(i, id_field);
        rill::accessor<double, 1> m(i, mass);
        rill::accessor<std::int32_t, 1> c(i, charge);
        s.for_each_point([&](const rill::point<1>& p) {
          k[p] = code_of(p, sa);
          m[p] = mass_of(code_of(p, sa));
          c[p] = charge_of(code_of(p, sa));
        });
      },
      inst, space, salt)
      .get();
  return inst;
}

long wrong_points(rill::instance inst, const rill::index_space<1>& space, std::int64_t salt,
                  const rill::index_space<1>& changed, std::int64_t old) {
  return rill::rpc(
             inst.owner(),
             [](rill::instance i, const rill::index_space<1>& s, std::int64_t sa, const rill::index_space<1>& ch,
                std::int64_t o) {
               rill::accessor<std::int64_t, 1> k(i, id_field);
               rill::accessor<double, 1> m(i, mass);
               rill::accessor<std::int32_t, 1> c(i, charge);
               long wrong = 0;
               s.for_each_point([&](const rill::point<1>& p) {
                 const std::int64_t want = code_of(p, ch.contains(p) ? sa : o);
                 if (k[p] != want || m[p] != mass_of(want) || c[p] != charge_of(want)) ++wrong;
               });
               return wrong;
             },
             inst, space, salt, changed, old)
      .get();
}

rill::instance in_memory(int rank, const rill::index_space<1>& space) {
  auto [inst, ready] = rill::instance::create(rill::memory::system(rank), space, particle);
  ready.wait();
  return inst;
}

rill::instance attached(int rank, const rill::index_space<1>& space, const rill::sqlite_resource& r) {
  auto [inst, ready] = rill::attach_instance(rill::memory::external(rank), space, particle, r);
  ready.wait();
  return inst;
}

// SQL run on the database as another program would, and the first column of its rows.
std::vector<std::int64_t> query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  std::vector<std::int64_t> out;
  sqlite3_exec(
      db, sql.c_str(),
      [](void* o, int, char** values, char**) {
        static_cast<std::vector<std::int64_t>*>(o)->push_back(values[0] ? std::stoll(values[0]) : -1);
        return 0;
      },
      &out, nullptr);
  sqlite3_close(db);
  return out;
}

TEST_P(external_sqlite, rows_round_trip_through_a_table) {
  const scratch_dir dir;
  const std::string path = dir / "particles.db";
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            const int last = rill::rank_n() - 1;
            const rill::index_space<1> space(rill::rect<1>{-5, 994});
            const rill::instance src = with_codes(0, space, 3);
            const rill::instance out = attached(last, space, table(path, rill::io_mode::write_discard));
            rill::copy(src, out, {id_field.id, mass.id, charge.id}).wait();
            out.destroy().wait();
            const std::vector<std::int64_t> rows = query(path, "SELECT count(*) FROM particles");
            const std::vector<std::int64_t> row7 = query(path, "SELECT id FROM particles WHERE rowid = 7");
            expect(
                rows == std::vector<std::int64_t>{1000} && row7.size() == 1 && row7[0] == code_of(rill::point<1>{7}, 3),
                "the table does not hold a row per point, by rowid");

            const rill::instance back = in_memory(last, space);
            const rill::instance in = attached(0, space, table(path, rill::io_mode::read_write));
            rill::copy(in, back, {id_field.id, mass.id, charge.id}).wait();
            expect(wrong_points(back, space, 3, space, 3) == 0, "a round trip through SQLite");
            const rill::index_space<1> some =
                rill::index_space<1>::from_points(std::vector<rill::point<1>>{{-5}, {0}, {1}, {2}, {500}, {994}});
            const rill::instance newer = with_codes(last, space, 4);
            rill::copy(newer, in, {id_field.id, mass.id, charge.id}, some).wait();
            rill::copy(in, back, {id_field.id, mass.id, charge.id}).wait();
            expect(wrong_points(back, space, 4, some, 3) == 0, "a copy of some points into a table changed other rows");
            for (const rill::instance& i : {in, src, back, newer}) i.destroy().wait();
          }),
      0);
}

// A table made by another program, with rows for points 0..99 and a column of text beside.
void make_table(const std::string& path, const std::string& mass_type = "REAL", int rows = 100) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(
      db,
      ("CREATE TABLE particles (n INTEGER PRIMARY KEY, name TEXT, id INTEGER, mass " + mass_type + ", charge INT)")
          .c_str(),
      nullptr, nullptr, nullptr);
  sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  for (int i = 0; i < rows; ++i) {
    const std::int64_t code = code_of(rill::point<1>{i}, 9);
    sqlite3_exec(
        db,
        fmt::format("INSERT INTO particles VALUES ({}, 'p{}', {}, {}, {})", i, i, code, mass_of(code), charge_of(code))
            .c_str(),
        nullptr, nullptr, nullptr);
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
}

TEST_P(external_sqlite, a_table_another_program_made_is_read_and_updated_in_place) {
  const scratch_dir dir;
  const std::string path = dir / "theirs.db";
  make_table(path);
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            const rill::index_space<1> space(rill::rect<1>{0, 99});
            const rill::instance in = attached(rill::rank_n() - 1, space, table(path, rill::io_mode::read_write));
            const rill::instance mem = in_memory(0, space);
            rill::copy(in, mem, {id_field.id, mass.id, charge.id}).wait();
            expect(wrong_points(mem, space, 9, space, 9) == 0, "a table another program made");
            rill::fill(in, charge, std::int32_t{-7}, rill::rect<1>{10, 19}).wait();
            in.destroy().wait();
            mem.destroy().wait();
            expect(query(path, "SELECT count(*) FROM particles WHERE charge = -7") == std::vector<std::int64_t>{10},
                   "a fill of ten rows");
            expect(query(path, "SELECT count(*) FROM particles WHERE name LIKE 'p%'") == std::vector<std::int64_t>{100},
                   "a column the fields do not name was changed");
          }),
      0);
}

TEST_P(external_sqlite, a_schema_that_does_not_match_is_refused_naming_the_cause) {
  const scratch_dir dir;
  const std::string text = dir / "text.db", short_table = dir / "short.db";
  make_table(text, "TEXT");
  make_table(short_table, "REAL", 10);
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            const int last = rill::rank_n() - 1;
            const rill::index_space<1> space(rill::rect<1>{0, 19});
            const auto error = [&](const rill::sqlite_resource& r) {
              return poison_of(rill::attach_instance(rill::memory::external(last), space, particle, r).ready);
            };
            const std::string typed = error(table(text, rill::io_mode::read_only));
            expect(says(typed, "text.db") && says(typed, "column 'mass' TEXT") && says(typed, "floating-point"),
                   "a column of another type: " + typed);
            rill::sqlite_resource other = table(short_table, rill::io_mode::read_only);
            other.table = "nothing";
            expect(says(error(other), "has no table 'nothing'"), "a missing table");
            rill::sqlite_resource column = table(short_table, rill::io_mode::read_only);
            column.columns[mass.id].name = "weight";
            expect(says(error(column), "has no column 'weight'"), "a missing column");
            expect(says(error(table(dir / "none.db", rill::io_mode::read_only)), "No such file"), "a missing database");
            const std::string flat =
                poison_of(rill::attach_instance(rill::memory::external(last), rill::rect<2>{{0, 0}, {3, 3}}, particle,
                                                table(short_table, rill::io_mode::read_only))
                              .ready);
            expect(says(flat, "1-D"), "a 2-D instance on a table: " + flat);
            // Rows 0..9 only: a copy of points 0..19 names the first missing one.
            const rill::instance in = attached(last, space, table(short_table, rill::io_mode::read_only));
            const rill::instance mem = in_memory(0, space);
            const std::string missing = poison_of(rill::copy(in, mem, {id_field.id}));
            expect(says(missing, "short.db") && says(missing, "no row for point 10"), "a missing row: " + missing);
            in.destroy().wait();
            mem.destroy().wait();
          }),
      0);
}

INSTANTIATE_TEST_SUITE_P(setups, external_sqlite, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
