// durable_files.hpp: temporary files renamed into place, syncs, and the checks of an existing file.
#include "data/durable_files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/log.hpp"
#include "rill/error.hpp"

namespace rill::detail {
namespace {

std::string directory_of(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

}  // namespace

std::string errno_text(int e) { return std::strerror(e); }

file_version version_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_size, st.st_mtim, st.st_ctim, st.st_ino};
}

const char* mode_name(io_mode m) {
  switch (m) {
    case io_mode::read_only: return "read_only";
    case io_mode::read_write: return "read_write";
    case io_mode::write_discard: return "write_discard";
  }
  return "?";
}

temporary_file create_beside(const std::string& path, const std::string& name) {
  std::string pattern = (std::filesystem::path(directory_of(path)) /
                         ("." + std::filesystem::path(path).filename().string() + ".rill-XXXXXX"))
                            .string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    throw misuse_error(fmt::format("{} cannot be created in {}: {}", name, directory_of(path), errno_text(errno)));
  ::fchmod(fd, 0644);
  return {pattern, fd};
}

bool check_existing(const std::string& path, io_mode mode, const std::string& name) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  if (!S_ISREG(st.st_mode)) throw misuse_error(fmt::format("{} is not a regular file", name));
  if (mode != io_mode::read_only && (st.st_mode & 0222) == 0)
    throw misuse_error(fmt::format("{} is read-only (mode {:o}): attach it io_mode::read_only, or make it writable",
                                   name, st.st_mode & 07777));
  return true;
}

void sync_file(const std::string& path, const std::string& name, io_counters& counters) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    throw misuse_error(fmt::format("{} could not be synced, its new data may be lost: {}", name, errno_text(e)));
  }
  ::close(fd);
  counters.syncs.fetch_add(1, std::memory_order_relaxed);
}

void replace_with(const std::string& temporary, const std::string& path, const std::string& name,
                  io_counters& counters) {
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(temporary.c_str());
    throw misuse_error(fmt::format("{} could not take its new contents ({}): {}", name, temporary, errno_text(e)));
  }
  const int d = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return;  // (the rename is done; only its durability across a crash is less certain)
  if (::fsync(d) == 0) counters.syncs.fetch_add(1, std::memory_order_relaxed);
  ::close(d);
}

void file_backed_store::snapshot(std::uint64_t slot) { versions_.remember(slot, version_of(current_path())); }
bool file_backed_store::unchanged_since(std::uint64_t slot) { return versions_.same(slot, version_of(current_path())); }
void file_backed_store::locate() {
  // (A file that cannot be examined, or a file system numbered 0, is on the I/O queue's device
  // "none": unordered, never limited.)
  struct stat st {};
  if (::stat(current_path().c_str(), &st) != 0) return;
  device_ = static_cast<std::uint64_t>(st.st_dev);
  inode_ = static_cast<std::uint64_t>(st.st_ino);
}

std::uint64_t file_backed_store::offset(const field_placement& f, const point<3>& p) const {
  std::uint64_t rank = 0, span = 1;
  for (int d = 0; d < 3; ++d) {
    rank += static_cast<std::uint64_t>(p[d] - bounds_.lo[d]) * span;
    span *= static_cast<std::uint64_t>(bounds_.hi[d] - bounds_.lo[d] + 1);
  }
  return (static_cast<std::uint64_t>(f.id) << 40) + rank * f.bytes;
}

void file_backed_store::fail(const std::string& why) const { throw misuse_error(fmt::format("{} {}", name_, why)); }

void discard_unfinished(const std::string& temporary, const std::string& name) {
  ::unlink(temporary.c_str());
  log().warn("{} was attached write_discard and never destroyed: its new contents were discarded", name);
}

void check_writable(io_mode mode, const std::string& name) {
  if (mode == io_mode::read_only)
    throw misuse_error(fmt::format("{} is attached read_only: nothing can be copied into it", name));
}

}  // namespace rill::detail
