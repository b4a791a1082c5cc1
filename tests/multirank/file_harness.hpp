// What the tests of external resources share: a scratch directory per test, and files read and
// written around the runtime (as another program would).
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace rill_test {

namespace fs = std::filesystem;

// A directory of its own for a test, removed with its files at the end.
struct scratch_dir {
  fs::path path;
  scratch_dir() {
    std::string pattern = (fs::temp_directory_path() / "rill-external-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~scratch_dir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  // The names in it (a temporary file left behind would show here).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

inline std::vector<char> bytes_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::string& path, std::size_t bytes, char value) {
  std::ofstream out(path, std::ios::binary);
  const std::vector<char> data(bytes, value);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// Whether the file system of `dir` takes direct I/O and says its alignment, as the runtime asks.
inline bool direct_io_in(const scratch_dir& dir) {
  const std::string probe = dir / "probe";
  write_file(probe, 4096, 0);
  const int fd = ::open(probe.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return false;
  struct statx sx {};
  const bool ok = ::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) != 0 &&
                  sx.stx_dio_mem_align > 0 && sx.stx_dio_offset_align > 0;
  ::close(fd);
  ::unlink(probe.c_str());
  return ok;
}

}  // namespace rill_test
