// An SQLite table as an external instance's data (rill::sqlite_resource): the rows of a 1-D
// instance's points by rowid, a column per field. One connection per attachment, used by one I/O
// thread at a time (a mutex of the store's); every write of a rect is one transaction, so what a
// copy wrote is durable (SQLite's journal and syncs) when the copy's event triggers.
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "data/durable_files.hpp"
#include "data/external_store.hpp"
#include "rill/error.hpp"

namespace rill::detail {
namespace {

bool is_integer(element_type t) { return t != element_type::f32 && t != element_type::f64; }

std::size_t size_of(element_type t) {
  switch (t) {
    case element_type::i8:
    case element_type::u8: return 1;
    case element_type::i16:
    case element_type::u16: return 2;
    case element_type::i32:
    case element_type::u32:
    case element_type::f32: return 4;
    default: return 8;
  }
}

const char* values_name(element_type t) { return is_integer(t) ? "integers" : "floating-point numbers"; }

// An SQL identifier, quoted.
std::string quoted(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The element's value as SQLite holds it, and back.
std::int64_t integer_of(const std::byte* at, element_type t) {
  switch (t) {
    case element_type::i8: return static_cast<std::int8_t>(*at);
    case element_type::u8: return static_cast<std::uint8_t>(*at);
    case element_type::i16: {
      std::int16_t v;
      std::memcpy(&v, at, 2);
      return v;
    }
    case element_type::u16: {
      std::uint16_t v;
      std::memcpy(&v, at, 2);
      return v;
    }
    case element_type::i32: {
      std::int32_t v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case element_type::u32: {
      std::uint32_t v;
      std::memcpy(&v, at, 4);
      return v;
    }
    default: {
      std::int64_t v;
      std::memcpy(&v, at, 8);
      return v;
    }
  }
}
void store_integer(std::int64_t v, std::byte* at, element_type t) {
  const std::size_t n = size_of(t);
  std::memcpy(at, &v, n);  // (little-endian: the low bytes, two's complement for both signs)
}

class sqlite_store final : public file_backed_store {
 public:
  sqlite_store(const sqlite_resource& r, const instance_layout& placement, const rect<3>& bounds, int dims,
               io_counters& counters)
      : file_backed_store(r.path, r.mode, fmt::format("SQLite database '{}'", r.path), bounds),
        table_(r.table),
        counters_(counters) {
    if (path_.empty()) throw misuse_error("rill::attach_instance: an sqlite_resource with an empty path");
    if (dims != 1)
      fail(fmt::format("table '{}' holds a 1-D instance's points (rows by rowid), not a {}-D one's", table_, dims));
    for (const field_placement& f : placement.fields) {
      const auto c = r.columns.find(f.id);
      if (c == r.columns.end()) fail(fmt::format("has no column named for field {} of the instance", f.id));
      if (size_of(c->second.type) != f.bytes)
        fail(fmt::format("column '{}' holds {}-byte {}, but field {} has {} bytes", c->second.name,
                         size_of(c->second.type), values_name(c->second.type), f.id, f.bytes));
      columns_[f.id] = c->second;
    }
    const bool exists = check_existing(path_, mode_, name_);
    std::string at = path_;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (mode_ == io_mode::write_discard) {
      const temporary_file t = create_beside(path_, name_);
      ::close(t.fd);
      temporary_ = at = t.path;
    } else if (mode_ == io_mode::read_only) {
      if (!exists) fail("cannot be opened read_only: No such file or directory");
      flags = SQLITE_OPEN_READONLY;
    }
    if (sqlite3_open_v2(at.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      if (!temporary_.empty()) ::unlink(temporary_.c_str());
      fail(fmt::format("cannot be opened {}: {}", mode_name(mode_), why));
    }
    try {
      check_schema();
    } catch (...) {
      sqlite3_close(db_);
      db_ = nullptr;
      if (!temporary_.empty()) ::unlink(temporary_.c_str());
      throw;
    }
    locate();
    counters_.attached.fetch_add(1, std::memory_order_relaxed);
  }

  ~sqlite_store() override {
    if (!db_) return;
    sqlite3_close(db_);
    if (mode_ == io_mode::write_discard) discard_unfinished(temporary_, name_);
  }

  void read(const field_placement& f, const rect<3>& r, std::byte* out) override {
    std::lock_guard g(lock_);
    if (!db_) fail("is closed (its instance was destroyed)");
    const stored_field& c = columns_.at(f.id);
    statement select(db_,
                     fmt::format("SELECT rowid, {} FROM {} WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid",
                                 quoted(c.name), quoted(table_)),
                     *this);
    sqlite3_bind_int64(select.s, 1, r.lo[0]);
    sqlite3_bind_int64(select.s, 2, r.hi[0]);
    coord_t next = r.lo[0];
    int rc;
    while ((rc = sqlite3_step(select.s)) == SQLITE_ROW) {
      const coord_t point = sqlite3_column_int64(select.s, 0);
      if (point != next) break;  // a row missing
      if (sqlite3_column_type(select.s, 1) == SQLITE_NULL)
        fail(fmt::format("table '{}' has NULL in column '{}' for point {}", table_, c.name, point));
      std::byte* at = out + static_cast<std::size_t>(point - r.lo[0]) * f.bytes;
      if (is_integer(c.type)) {
        store_integer(sqlite3_column_int64(select.s, 1), at, c.type);
      } else if (c.type == element_type::f64) {
        const double v = sqlite3_column_double(select.s, 1);
        std::memcpy(at, &v, 8);
      } else {
        const float v = static_cast<float>(sqlite3_column_double(select.s, 1));
        std::memcpy(at, &v, 4);
      }
      ++next;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(fmt::format("could not be read: {}", sqlite3_errmsg(db_)));
    if (next <= r.hi[0]) fail(fmt::format("table '{}' has no row for point {}", table_, next));
    counters_.count(false, r.volume() * f.bytes);
  }

  void write(const field_placement& f, const rect<3>& r, const std::byte* in) override {
    check_writable(mode_, name_);
    std::lock_guard g(lock_);
    if (!db_) fail("is closed (its instance was destroyed)");
    const stored_field& c = columns_.at(f.id);
    execute("BEGIN IMMEDIATE");
    try {
      statement update(db_, fmt::format("UPDATE {} SET {} = ?2 WHERE rowid = ?1", quoted(table_), quoted(c.name)),
                       *this);
      statement insert(db_, fmt::format("INSERT INTO {} (rowid, {}) VALUES (?1, ?2)", quoted(table_), quoted(c.name)),
                       *this);
      for (coord_t p = r.lo[0]; p <= r.hi[0]; ++p, in += f.bytes) {
        for (statement* s : {&update, &insert}) {
          sqlite3_reset(s->s);
          sqlite3_bind_int64(s->s, 1, p);
          if (is_integer(c.type)) {
            sqlite3_bind_int64(s->s, 2, integer_of(in, c.type));
          } else if (c.type == element_type::f64) {
            double v;
            std::memcpy(&v, in, 8);
            sqlite3_bind_double(s->s, 2, v);
          } else {
            float v;
            std::memcpy(&v, in, 4);
            sqlite3_bind_double(s->s, 2, v);
          }
          if (sqlite3_step(s->s) != SQLITE_DONE) fail(fmt::format("could not be written: {}", sqlite3_errmsg(db_)));
          if (s == &update && sqlite3_changes(db_) > 0) break;  // (the row was there: no insert)
        }
      }
      execute("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    counters_.count(true, r.volume() * f.bytes);
  }

  void close() override {
    std::lock_guard g(lock_);
    if (!db_) return;
    const int rc = sqlite3_close(db_);
    db_ = nullptr;
    if (rc != SQLITE_OK) fail("could not be closed");
    if (mode_ == io_mode::read_only) return;
    sync_file(current_path(), name_, counters_);
    if (mode_ == io_mode::write_discard) replace_with(temporary_, path_, name_, counters_);
  }

 private:
  // A prepared statement, finalized at the end of its scope.
  struct statement {
    sqlite3_stmt* s = nullptr;
    statement(sqlite3* db, const std::string& sql, const sqlite_store& of) {
      if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
        of.fail(fmt::format("cannot run '{}': {}", sql, sqlite3_errmsg(db)));
    }
    ~statement() { sqlite3_finalize(s); }
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
  };

  void execute(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string why = error ? error : sqlite3_errmsg(db_);
      sqlite3_free(error);
      fail(fmt::format("could not run '{}': {}", sql, why));
    }
  }

  // The table and its columns as the fields need them: made where missing (but read_only), and
  // refused when a column's declared type cannot hold the field's values.
  void check_schema() {
    std::map<std::string, std::string> declared;  // column -> declared type, upper case
    {
      statement info(db_, fmt::format("PRAGMA table_info({})", quoted(table_)), *this);
      while (sqlite3_step(info.s) == SQLITE_ROW) {
        std::string type = reinterpret_cast<const char*>(sqlite3_column_text(info.s, 2));
        for (char& ch : type) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        declared[reinterpret_cast<const char*>(sqlite3_column_text(info.s, 1))] = type;
      }
    }
    const auto affinity = [](const stored_field& c) { return is_integer(c.type) ? "INTEGER" : "REAL"; };
    if (declared.empty()) {
      if (mode_ == io_mode::read_only) fail(fmt::format("has no table '{}'", table_));
      std::string columns = "point INTEGER PRIMARY KEY";
      for (const auto& [f, c] : columns_) columns += fmt::format(", {} {}", quoted(c.name), affinity(c));
      execute(fmt::format("CREATE TABLE {} ({})", quoted(table_), columns));
      return;
    }
    for (const auto& [f, c] : columns_) {
      const auto it = declared.find(c.name);
      if (it == declared.end()) {
        if (mode_ == io_mode::read_only) fail(fmt::format("table '{}' has no column '{}'", table_, c.name));
        execute(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", quoted(table_), quoted(c.name), affinity(c)));
        continue;
      }
      // SQLite's affinity rules (§3.1 of its datatype page): INT makes INTEGER; REAL, FLOA, DOUB REAL.
      const std::string& t = it->second;
      const bool holds_integers = t.find("INT") != std::string::npos;
      const bool holds_reals =
          !holds_integers && (t.find("REAL") != std::string::npos || t.find("FLOA") != std::string::npos ||
                              t.find("DOUB") != std::string::npos);
      if (is_integer(c.type) ? !holds_integers : !holds_reals)
        fail(fmt::format("table '{}' declares column '{}' {}, but field {} holds {}", table_, c.name,
                         t.empty() ? "without a type" : t, f, values_name(c.type)));
    }
  }

  const std::string table_;
  io_counters& counters_;
  std::map<field_id, stored_field> columns_;
  std::mutex lock_;
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<external_store> open_sqlite_store(const sqlite_resource& r, const instance_layout& placement,
                                                  const rect<3>& bounds, int dims, io_counters& counters) {
  return std::make_unique<sqlite_store>(r, placement, bounds, dims, counters);
}

}  // namespace rill::detail
