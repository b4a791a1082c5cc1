// A raw file as an external instance's data (rill::file_resource): the instance's layout as bytes
// from offset 0, read and written with pread/pwrite. A write_discard file is built under a
// temporary name in the same directory and renamed over the path once synced, so that the path
// always names a whole file: the old one until the rename, the new one after.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "common/log.hpp"
#include "data/external_store.hpp"
#include "rill/error.hpp"

namespace rill::detail {
namespace {

const char* mode_name(io_mode m) {
  switch (m) {
    case io_mode::read_only: return "read_only";
    case io_mode::read_write: return "read_write";
    case io_mode::write_discard: return "write_discard";
  }
  return "?";
}

std::string errno_text(int e) { return std::strerror(e); }

// Where field f of point p lies in the file (p within the bounds).
std::uint64_t offset_of(const field_placement& f, const rect<3>& bounds, const point<3>& p) {
  std::int64_t off = static_cast<std::int64_t>(f.offset);
  for (int d = 0; d < 3; ++d) off += (p[d] - bounds.lo[d]) * f.strides[static_cast<std::size_t>(d)];
  return static_cast<std::uint64_t>(off);
}

// Whether field f's elements at r's points are one range of the file, in index-space order.
bool one_range(const field_placement& f, const rect<3>& bounds, const rect<3>& r) {
  if (f.strides[0] != static_cast<std::ptrdiff_t>(f.bytes)) return false;
  for (int d = 1; d < 3; ++d) {
    if (r.hi[d] == r.lo[d]) continue;
    for (int e = 0; e < d; ++e)
      if (r.lo[e] != bounds.lo[e] || r.hi[e] != bounds.hi[e] ||
          f.strides[static_cast<std::size_t>(e + 1)] !=
              f.strides[static_cast<std::size_t>(e)] * (bounds.hi[e] - bounds.lo[e] + 1))
        return false;
  }
  return true;
}

class file_store final : public external_store {
 public:
  file_store(const file_resource& r, std::uint64_t bytes, const rect<3>& bounds, io_counters& counters)
      : path_(r.path), mode_(r.mode), bounds_(bounds), counters_(counters), name_(fmt::format("file '{}'", r.path)) {
    if (path_.empty()) throw misuse_error("rill::attach_instance: a file_resource with an empty path");
    struct stat st {};
    const bool exists = ::stat(path_.c_str(), &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) fail("is not a regular file");
    if (exists && mode_ != io_mode::read_only && (st.st_mode & 0222) == 0)
      fail(fmt::format("is read-only (mode {:o}): attach it io_mode::read_only, or make it writable",
                       st.st_mode & 07777));
    if (mode_ == io_mode::write_discard) {
      create_temporary(bytes);
    } else {
      fd_ = ::open(path_.c_str(), (mode_ == io_mode::read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
      if (fd_ < 0) fail(fmt::format("cannot be opened {}: {}", mode_name(mode_), errno_text(errno)));
      if (::fstat(fd_, &st) != 0) fail_closing(fmt::format("cannot be examined: {}", errno_text(errno)));
      if (static_cast<std::uint64_t>(st.st_size) != bytes)
        fail_closing(
            fmt::format("has {} bytes, but the instance's layout over its bounds needs {}: a file of another shape, "
                        "fields or layout",
                        st.st_size, bytes));
    }
    counters_.attached.fetch_add(1, std::memory_order_relaxed);
  }

  ~file_store() override {
    if (fd_ < 0) return;
    ::close(fd_);
    if (mode_ == io_mode::write_discard) {
      ::unlink(temporary_.c_str());
      log().warn("{} was attached write_discard and never destroyed: its new contents were discarded", name_);
    }
  }

  void read(const field_placement& f, const rect<3>& r, std::byte* out) override { move(f, r, out, false); }
  void write(const field_placement& f, const rect<3>& r, const std::byte* in) override {
    if (mode_ == io_mode::read_only) fail("is attached read_only: nothing can be copied into it");
    move(f, r, const_cast<std::byte*>(in), true);
    written_ = true;
  }

  void close() override {
    if (fd_ < 0) return;
    const int fd = fd_;
    fd_ = -1;
    if (written_ || mode_ == io_mode::write_discard) {
      if (::fsync(fd) != 0) {
        const int e = errno;
        ::close(fd);
        if (mode_ == io_mode::write_discard) ::unlink(temporary_.c_str());
        fail(fmt::format("could not be synced, its new data may be lost: {}", errno_text(e)));
      }
      counters_.syncs.fetch_add(1, std::memory_order_relaxed);
    }
    if (::close(fd) != 0) fail(fmt::format("could not be closed: {}", errno_text(errno)));
    if (mode_ != io_mode::write_discard) return;
    if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
      const int e = errno;
      ::unlink(temporary_.c_str());
      fail(fmt::format("could not take its new contents ({}): {}", temporary_, errno_text(e)));
    }
    sync_directory();
  }

  void snapshot(std::uint64_t slot) override {
    const state now = current();
    std::lock_guard g(states_lock_);
    states_[slot] = now;
  }
  bool unchanged_since(std::uint64_t slot) override {
    const state now = current();
    std::lock_guard g(states_lock_);
    const auto it = states_.find(slot);
    return it != states_.end() && it->second == now;
  }

  const std::string& name() const override { return name_; }
  io_mode mode() const override { return mode_; }

 private:
  // What tells one version of the file from another. (A write_discard file is the runtime's
  // alone until it takes the path: its temporary file.)
  struct state {
    off_t size = 0;
    timespec modified{}, changed{};
    ino_t inode = 0;
    bool operator==(const state& o) const {
      return size == o.size && inode == o.inode && modified.tv_sec == o.modified.tv_sec &&
             modified.tv_nsec == o.modified.tv_nsec && changed.tv_sec == o.changed.tv_sec &&
             changed.tv_nsec == o.changed.tv_nsec;
    }
  };
  state current() const {
    struct stat st {};
    const int rc = mode_ == io_mode::write_discard ? ::fstat(fd_, &st) : ::stat(path_.c_str(), &st);
    if (rc != 0) return state{-1, {}, {}, 0};  // (gone: unlike every state remembered)
    return state{st.st_size, st.st_mtim, st.st_ctim, st.st_ino};
  }

  [[noreturn]] void fail(const std::string& why) const { throw misuse_error(fmt::format("{} {}", name_, why)); }
  [[noreturn]] void fail_closing(const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    fail(why);
  }

  void create_temporary(std::uint64_t bytes) {
    const std::filesystem::path p(path_);
    const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
    std::string pattern = (dir / ("." + p.filename().string() + ".rill-XXXXXX")).string();
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0) fail(fmt::format("cannot be created in {}: {}", dir.string(), errno_text(errno)));
    temporary_ = pattern;
    ::fchmod(fd_, 0644);
    // Room for every byte now, so that a full disk is found at the attach rather than by a write
    // half-way (a file system that cannot reserve space says so, and gets the size only).
    if (bytes > 0) {
      const int e = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
      if (e != 0 && (e != EOPNOTSUPP || ::ftruncate(fd_, static_cast<off_t>(bytes)) != 0)) {
        ::unlink(temporary_.c_str());
        fail_closing(fmt::format("cannot have {} bytes on its file system: {}", bytes, errno_text(e)));
      }
    }
  }

  void sync_directory() {
    const std::filesystem::path p(path_);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return;  // (the rename is done; only its durability across a crash is less certain)
    if (::fsync(d) == 0) counters_.syncs.fetch_add(1, std::memory_order_relaxed);
    ::close(d);
  }

  // Reads or writes field f's elements at r's points between the file and dense `buf`. Elements
  // that lie apart in the file (an array-of-structs file, or one ordered with another dimension
  // fastest) are moved through the file range around them: read whole, and for a write updated
  // and written back -- under the exclusive lock, since the range holds bytes other copies may
  // be writing (other fields, other points); a write straight to its own range takes it shared.
  void move(const field_placement& f, const rect<3>& r, std::byte* buf, bool writing) {
    if (fd_ < 0) fail("is closed (its instance was destroyed)");
    const std::size_t useful = r.volume() * f.bytes;
    if (one_range(f, bounds_, r)) {
      std::shared_lock g(writes_, std::defer_lock);
      if (writing) g.lock();
      transfer(buf, useful, offset_of(f, bounds_, r.lo), writing);
      return;
    }
    std::unique_lock g(writes_, std::defer_lock);
    if (writing) g.lock();
    const std::uint64_t lo = offset_of(f, bounds_, r.lo), hi = offset_of(f, bounds_, r.hi) + f.bytes;
    if (hi - lo <= 4 * useful + (std::uint64_t{1} << 20)) {
      through_range(f, r, buf, writing, lo, hi);
      return;
    }
    const std::size_t n = static_cast<std::size_t>(r.hi[0] - r.lo[0]) + 1;
    for (coord_t z = r.lo[2]; z <= r.hi[2]; ++z)
      for (coord_t y = r.lo[1]; y <= r.hi[1]; ++y) {
        const rect<3> row{point<3>{r.lo[0], y, z}, point<3>{r.hi[0], y, z}};
        const std::uint64_t a = offset_of(f, bounds_, row.lo), b = offset_of(f, bounds_, row.hi) + f.bytes;
        if (b - a <= 4 * n * f.bytes + (std::uint64_t{64} << 10)) {
          through_range(f, row, buf, writing, a, b);
        } else {
          for (std::size_t i = 0; i < n; ++i)
            transfer(buf + i * f.bytes, f.bytes, a + i * static_cast<std::uint64_t>(f.strides[0]), writing);
        }
        buf += n * f.bytes;
      }
  }

  // move() through the file's bytes [lo, hi), which hold every element of r.
  void through_range(const field_placement& f, const rect<3>& r, std::byte* buf, bool writing, std::uint64_t lo,
                     std::uint64_t hi) {
    range_.resize(static_cast<std::size_t>(hi - lo));
    // (A range the elements fill entirely -- a block of a file ordered another way -- need not be
    // read before it is written.)
    if (!writing || hi - lo != r.volume() * f.bytes) transfer(range_.data(), range_.size(), lo, false);
    const std::size_t n = static_cast<std::size_t>(r.hi[0] - r.lo[0]) + 1;
    for (coord_t z = r.lo[2]; z <= r.hi[2]; ++z)
      for (coord_t y = r.lo[1]; y <= r.hi[1]; ++y) {
        std::byte* in_file = range_.data() + (offset_of(f, bounds_, point<3>{r.lo[0], y, z}) - lo);
        for (std::size_t i = 0; i < n; ++i, in_file += f.strides[0], buf += f.bytes) {
          if (writing)
            std::memcpy(in_file, buf, f.bytes);
          else
            std::memcpy(buf, in_file, f.bytes);
        }
      }
    if (writing) transfer(range_.data(), range_.size(), lo, true);
  }

  void transfer(std::byte* buf, std::size_t bytes, std::uint64_t at, bool writing) {
    std::size_t done = 0;
    while (done < bytes) {
      const ssize_t n = writing ? ::pwrite(fd_, buf + done, bytes - done, static_cast<off_t>(at + done))
                                : ::pread(fd_, buf + done, bytes - done, static_cast<off_t>(at + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        fail(fmt::format("{} of {} bytes at offset {} failed: {}", writing ? "write" : "read", bytes - done, at + done,
                         errno_text(errno)));
      if (n == 0) fail(fmt::format("ended at offset {} (shortened by another program?)", at + done));
      done += static_cast<std::size_t>(n);
    }
    if (writing) {
      counters_.writes.fetch_add(1, std::memory_order_relaxed);
      counters_.bytes_written.fetch_add(bytes, std::memory_order_relaxed);
    } else {
      counters_.reads.fetch_add(1, std::memory_order_relaxed);
      counters_.bytes_read.fetch_add(bytes, std::memory_order_relaxed);
    }
  }

  const std::string path_;
  const io_mode mode_;
  const rect<3> bounds_;
  io_counters& counters_;
  const std::string name_;
  std::string temporary_;  // write_discard: where the new contents are built
  int fd_ = -1;
  bool written_ = false;
  std::shared_mutex writes_;
  std::mutex states_lock_;
  std::unordered_map<std::uint64_t, state> states_;   // by slot
  static thread_local std::vector<std::byte> range_;  // through_range's, per I/O thread
};

thread_local std::vector<std::byte> file_store::range_;

}  // namespace

std::unique_ptr<external_store> open_store(const external_resource& r, const instance_layout& placement,
                                           const rect<3>& bounds, io_counters& counters) {
  return std::visit(
      [&](const auto& res) -> std::unique_ptr<external_store> {
        return std::make_unique<file_store>(res, placement.bytes, bounds, counters);
      },
      r);
}

}  // namespace rill::detail
