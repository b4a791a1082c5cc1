// A raw file as an external instance's data (rill::file_resource): the instance's layout as bytes
// from offset 0, read and written with pread/pwrite (preadv/pwritev for ranges the I/O queue
// fused, io_queue.hpp). A write_discard file is built under a temporary name in the same
// directory and renamed over the path once synced, so that the path always names a whole file:
// the old one until the rename, the new one after. Large transfers go through a second descriptor
// opened O_DIRECT (--rill:io-direct), bypassing the page cache.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "data/durable_files.hpp"
#include "data/external_store.hpp"
#include "rill/error.hpp"

namespace rill::detail {
namespace {

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

class file_store final : public file_backed_store {
 public:
  file_store(const file_resource& r, std::uint64_t bytes, const rect<3>& bounds, io_counters& counters,
             std::size_t direct_min)
      : file_backed_store(r.path, r.mode, fmt::format("file '{}'", r.path), bounds),
        counters_(counters),
        direct_min_(direct_min) {
    if (path_.empty()) throw misuse_error("rill::attach_instance: a file_resource with an empty path");
    check_existing(path_, mode_, name_);
    if (mode_ == io_mode::write_discard) {
      create_temporary(bytes);
    } else {
      fd_ = ::open(path_.c_str(), (mode_ == io_mode::read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
      if (fd_ < 0) fail(fmt::format("cannot be opened {}: {}", mode_name(mode_), errno_text(errno)));
      struct stat st {};
      if (::fstat(fd_, &st) != 0) fail_closing(fmt::format("cannot be examined: {}", errno_text(errno)));
      if (static_cast<std::uint64_t>(st.st_size) != bytes)
        fail_closing(
            fmt::format("has {} bytes, but the instance's layout over its bounds needs {}: a file of another shape, "
                        "fields or layout",
                        st.st_size, bytes));
    }
    if (direct_min_ > 0) open_direct();
    locate();
    counters_.attached.fetch_add(1, std::memory_order_relaxed);
  }

  ~file_store() override {
    if (direct_fd_ >= 0) ::close(direct_fd_);
    if (fd_ < 0) return;
    ::close(fd_);
    if (mode_ == io_mode::write_discard) discard_unfinished(temporary_, name_);
  }

  void read(const field_placement& f, const rect<3>& r, std::byte* out) override { move(f, r, out, false); }
  void write(const field_placement& f, const rect<3>& r, const std::byte* in) override {
    check_writable(mode_, name_);
    move(f, r, const_cast<std::byte*>(in), true);
    written_ = true;
  }

  bool fusable(const field_placement& f, const rect<3>& r) const override {
    // (One that may go direct stays alone: fused calls go through the page cache.)
    return one_range(f, bounds_, r) && (direct_fd_ < 0 || r.volume() * f.bytes < direct_min_);
  }

  void move_ranges(std::uint64_t at, std::span<const ::iovec> runs, bool writing) override {
    if (fd_ < 0) fail("is closed (its instance was destroyed)");
    if (writing) check_writable(mode_, name_);
    std::shared_lock shared(writes_, std::defer_lock);
    if (writing) shared.lock();
    std::vector<::iovec> left(runs.begin(), runs.end());
    std::size_t bytes = 0;
    for (const ::iovec& v : left) bytes += v.iov_len;
    move_runs(fd_, left, at, writing);
    counters_.count(writing, bytes);
    if (writing) written_ = true;
  }

  void close() override {
    if (fd_ < 0) return;
    if (direct_fd_ >= 0) ::close(direct_fd_);  // (the fsync below covers what it wrote: one inode)
    direct_fd_ = -1;
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
    if (mode_ == io_mode::write_discard) replace_with(temporary_, path_, name_, counters_);
  }

  // (A write_discard file is the runtime's alone until it takes the path: its temporary file's.)

 private:
  std::uint64_t offset(const field_placement& f, const point<3>& p) const override { return offset_of(f, bounds_, p); }

  [[noreturn]] void fail_closing(const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    fail(why);
  }

  void create_temporary(std::uint64_t bytes) {
    const temporary_file t = create_beside(path_, name_);
    fd_ = t.fd;
    temporary_ = t.path;
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

  // Reads or writes field f's elements at r's points between the file and dense `buf`. Elements
  // that lie apart in the file (an array-of-structs file, or one ordered with another dimension
  // fastest) are moved through the file range around them: read whole, and for a write updated
  // and written back -- under the exclusive lock, since the range holds bytes other copies may
  // be writing (other fields, other points); a write straight to its own range takes it shared,
  // unless it goes direct: the kernel cannot keep a page that a write through the cache dirties
  // beside a direct write coherent with it, so a direct write holds the file alone.
  void move(const field_placement& f, const rect<3>& r, std::byte* buf, bool writing) {
    if (fd_ < 0) fail("is closed (its instance was destroyed)");
    const std::size_t useful = r.volume() * f.bytes;
    if (one_range(f, bounds_, r)) {
      const std::uint64_t at = offset_of(f, bounds_, r.lo);
      std::shared_lock shared(writes_, std::defer_lock);
      std::unique_lock alone(writes_, std::defer_lock);
      if (writing && direct_part(buf, useful, at).middle > 0)
        alone.lock();
      else if (writing)
        shared.lock();
      transfer(buf, useful, at, writing);
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

  // The second descriptor, if the file system takes direct I/O and says how it must be aligned
  // (statx's STATX_DIOALIGN); otherwise every transfer goes through the page cache.
  void open_direct() {
    const std::string& file = mode_ == io_mode::write_discard ? temporary_ : path_;
    const int fd = ::open(file.c_str(), (mode_ == io_mode::read_only ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC);
    if (fd < 0) return;
    struct statx sx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) != 0 || (sx.stx_mask & STATX_DIOALIGN) == 0 ||
        sx.stx_dio_mem_align == 0 || sx.stx_dio_offset_align == 0) {
      ::close(fd);
      return;
    }
    direct_fd_ = fd;
    memory_align_ = sx.stx_dio_mem_align;
    offset_align_ = sx.stx_dio_offset_align;
  }

  // Of `bytes` between buf and the file at `at`, what goes direct: whole blocks in the middle,
  // after `head` bytes, when there are at least direct_min_ of them and buf is aligned there.
  struct split {
    std::size_t head = 0, middle = 0;
  };
  // (Whole pages, not only blocks: a page of the cache that holds bytes of the transfer and bytes
  // another store writes -- another part of the file, attach_options::within, on another rank --
  // must not be written direct under that store's cached write.)
  split direct_part(const std::byte* buf, std::size_t bytes, std::uint64_t at) const {
    if (direct_fd_ < 0 || bytes < direct_min_) return {};
    const std::uint64_t unit = std::max<std::uint64_t>(offset_align_, 4096);
    const auto head = static_cast<std::size_t>((unit - at % unit) % unit);
    const std::size_t middle = head < bytes ? (bytes - head) / unit * unit : 0;
    if (middle < direct_min_ || reinterpret_cast<std::uintptr_t>(buf + head) % memory_align_ != 0) return {};
    return {head, middle};
  }

  // `bytes` between buf and the file at `at`: the direct part directly, the ends through the cache.
  void transfer(std::byte* buf, std::size_t bytes, std::uint64_t at, bool writing) {
    const auto [head, middle] = direct_part(buf, bytes, at);
    move_bytes(fd_, buf, head, at, writing);
    const std::size_t direct = move_bytes(direct_fd_, buf + head, middle, at + head, writing);
    move_bytes(fd_, buf + head + middle, bytes - head - middle, at + head + middle, writing);
    counters_.count(writing, bytes);
    if (direct > 0) counters_.bytes_direct.fetch_add(direct, std::memory_order_relaxed);
  }

  // Moves `bytes` with pread/pwrite on fd; returns how many went direct.
  std::size_t move_bytes(int fd, std::byte* buf, std::size_t bytes, std::uint64_t at, bool writing) {
    ::iovec one{buf, bytes};
    return move_runs(fd, std::span(&one, 1), at, writing);
  }

  // Moves the runs' bytes between memory and the file from `at` on with preadv/pwritev on fd
  // (the runs left as a short call left them); returns how many went direct. A direct transfer
  // the kernel refuses part-way (a short one left the rest unaligned) ends through the cache.
  std::size_t move_runs(int fd, std::span<::iovec> runs, std::uint64_t at, bool writing) {
    std::size_t bytes = 0, done = 0, direct = 0;
    for (const ::iovec& v : runs) bytes += v.iov_len;
    for (std::size_t first = 0; done < bytes;) {
      const int count = static_cast<int>(std::min<std::size_t>(runs.size() - first, IOV_MAX));
      const auto from = static_cast<off_t>(at + done);
      const ssize_t n =
          writing ? ::pwritev(fd, runs.data() + first, count, from) : ::preadv(fd, runs.data() + first, count, from);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL && fd == direct_fd_) {
        fd = fd_;
        continue;
      }
      if (n < 0)
        fail(fmt::format("{} of {} bytes at offset {} failed: {}", writing ? "write" : "read", bytes - done, at + done,
                         errno_text(errno)));
      if (n == 0) fail(fmt::format("ended at offset {} (shortened by another program?)", at + done));
      done += static_cast<std::size_t>(n);
      if (fd == direct_fd_) direct += static_cast<std::size_t>(n);
      // Past what the call moved: whole runs, then into the one it ended in.
      for (auto k = static_cast<std::size_t>(n); k > 0;) {
        const std::size_t step = std::min(k, runs[first].iov_len);
        runs[first].iov_base = static_cast<std::byte*>(runs[first].iov_base) + step;
        runs[first].iov_len -= step;
        k -= step;
        if (runs[first].iov_len == 0) ++first;
      }
    }
    return direct;
  }

  io_counters& counters_;
  const std::size_t direct_min_;
  int fd_ = -1;
  int direct_fd_ = -1;  // the file again, O_DIRECT (-1: none)
  std::uint64_t memory_align_ = 0, offset_align_ = 0;
  std::atomic<bool> written_{false};  // (set by I/O threads writing at once)
  std::shared_mutex writes_;
  static thread_local std::vector<std::byte> range_;  // through_range's, per I/O thread
};

thread_local std::vector<std::byte> file_store::range_;

}  // namespace

std::unique_ptr<external_store> open_file_store(const file_resource& r, const instance_layout& placement,
                                                const rect<3>& bounds, io_counters& counters, std::size_t direct_min) {
  return std::make_unique<file_store>(r, placement.bytes, bounds, counters, direct_min);
}

}  // namespace rill::detail
