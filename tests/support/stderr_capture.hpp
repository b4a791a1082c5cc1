// Sends this process's stderr (file descriptor 2) to a temporary file while alive, so that a test
// can read what the runtime printed, also while it is still running.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace rill_test {

class stderr_capture {
 public:
  stderr_capture() {
    char name[] = "/tmp/rill_stderr_XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) std::abort();
    path_ = name;
    std::fflush(stderr);
    saved_ = dup(2);
    dup2(fd, 2);
    close(fd);
  }
  ~stderr_capture() {
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    std::remove(path_.c_str());
  }
  stderr_capture(const stderr_capture&) = delete;
  stderr_capture& operator=(const stderr_capture&) = delete;

  // Sleeps, blocking the calling thread, until `marker` has been written. Nothing signals a write to
  // the file, so it polls; false after `limit`, which only guards against a test that never ends.
  bool wait_for(const std::string& marker, std::chrono::seconds limit = std::chrono::seconds(120)) const {
    const auto give_up = std::chrono::steady_clock::now() + limit;
    while (text().find(marker) == std::string::npos) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  // Everything written to stderr so far.
  std::string text() const {
    std::fflush(stderr);
    std::ifstream in(path_);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

// The part of `text` from the first line that starts with `from` to the end of the first line after
// it that starts with `to` ("" when either is missing).
inline std::string section(const std::string& text, const std::string& from, const std::string& to) {
  const auto a = text.find(from);
  if (a == std::string::npos) return "";
  const auto b = text.find(to, a);
  if (b == std::string::npos) return "";
  const auto e = text.find('\n', b);
  return text.substr(a, e == std::string::npos ? std::string::npos : e + 1 - a);
}

}  // namespace rill_test
