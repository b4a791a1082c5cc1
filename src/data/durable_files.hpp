// What every file-backed resource (file_store.cpp, hdf5_store.cpp) does to keep its promises: a
// new file is built under a temporary name beside its path and takes the path only when it is
// complete and synced, so that the path names the old file or the new one, whole, even after a
// crash; a read-only file (no write bit, for root too) is refused for writing. Errors throw
// rill::misuse_error starting with the resource's name.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "data/external_store.hpp"

namespace rill::detail {

// A new, empty file beside `path` (".NAME.rill-XXXXXX", mode 0644), open: its name and descriptor.
struct temporary_file {
  std::string path;
  int fd = -1;
};
temporary_file create_beside(const std::string& path, const std::string& name);

// Refuses a path that exists and is not a regular file, or, for `mode` other than read_only, has
// no write bit. Returns whether it exists.
bool check_existing(const std::string& path, io_mode mode, const std::string& name);

// fsync of the file at `path` (throws naming `name` on failure), counted.
void sync_file(const std::string& path, const std::string& name, io_counters& counters);

// Renames `temporary` over `path` (removing it on failure) and syncs the directory.
void replace_with(const std::string& temporary, const std::string& path, const std::string& name,
                  io_counters& counters);

// What tells one version of a file from another: its size, modification and change times and
// inode. (Of an absent file: unlike every other.)
struct file_version {
  off_t size = -1;
  timespec modified{}, changed{};
  ino_t inode = 0;
  bool operator==(const file_version& o) const {
    return size == o.size && inode == o.inode && modified.tv_sec == o.modified.tv_sec &&
           modified.tv_nsec == o.modified.tv_nsec && changed.tv_sec == o.changed.tv_sec &&
           changed.tv_nsec == o.changed.tv_nsec;
  }
};
file_version version_of(const std::string& path);

// external_store::snapshot and unchanged_since for a resource that is a file: versions remembered
// by slot.
class remembered_versions {
 public:
  void remember(std::uint64_t slot, const file_version& v) {
    std::lock_guard g(lock_);
    slots_[slot] = v;
  }
  bool same(std::uint64_t slot, const file_version& now) {
    std::lock_guard g(lock_);
    const auto it = slots_.find(slot);
    return it != slots_.end() && it->second == now;
  }

 private:
  std::mutex lock_;
  std::unordered_map<std::uint64_t, file_version> slots_;
};

// What the stores of resources that are files share: the path, the mode, the name errors give,
// the temporary file a write_discard one is built in, and the versions a snapshot remembers (of
// the temporary file while it is the runtime's alone).
class file_backed_store : public external_store {
 public:
  file_backed_store(std::string path, io_mode mode, std::string name, const rect<3>& bounds)
      : path_(std::move(path)), mode_(mode), name_(std::move(name)), bounds_(bounds) {}
  void snapshot(std::uint64_t slot) override;
  bool unchanged_since(std::uint64_t slot) override;
  const std::string& name() const override { return name_; }
  io_mode mode() const override { return mode_; }
  io_place place(const field_placement& f, const rect<3>& r) const override {
    const std::uint64_t at = offset(f, r.lo);
    return {device_, inode_, at, at + r.volume() * f.bytes};
  }

 protected:
  // Notes the device and inode of the file current_path() names (for place): a constructor calls
  // it once the file exists.
  void locate();
  // Where field f's element at p (within the bounds) lies in the file. By default (a library lays
  // the file out: HDF5, SQLite) a guess that keeps the order of points and fields: the field's id
  // high, then p's rank in index-space order.
  virtual std::uint64_t offset(const field_placement& f, const point<3>& p) const;

  const std::string& current_path() const { return mode_ == io_mode::write_discard ? temporary_ : path_; }
  [[noreturn]] void fail(const std::string& why) const;

  const std::string path_;
  const io_mode mode_;
  const std::string name_;
  const rect<3> bounds_;   // the instance's
  std::string temporary_;  // write_discard: where the new contents are built

 private:
  remembered_versions versions_;
  std::uint64_t device_ = 0, inode_ = 0;
};

// A write_discard resource never destroyed: its temporary file removed, with a warning (nothing
// said its new contents were complete).
void discard_unfinished(const std::string& temporary, const std::string& name);
// Refuses a copy into a resource attached read_only.
void check_writable(io_mode mode, const std::string& name);

std::string errno_text(int e);
const char* mode_name(io_mode m);

}  // namespace rill::detail
