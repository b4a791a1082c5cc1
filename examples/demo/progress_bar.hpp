// rill-demo's progress: a bar redrawn in place on a terminal, a plain line per tenth of the run
// otherwise (a log, a pipe, a test).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

class progress_bar {
 public:
  explicit progress_bar(int total) : total_(total), terminal_(isatty(STDOUT_FILENO) == 1) {}

  // `done` of `total` finished; `note` says how things stand.
  void show(int done, const std::string& note) {
    if (terminal_) {
      // Redrawn once per percent: a terminal behind mpirun or ssh is slow to scroll.
      if (percent(done) == shown_percent_ && done < total_) return;
      shown_percent_ = percent(done);
      constexpr int width = 40;
      const int filled = total_ > 0 ? done * width / total_ : width;
      std::printf("\r  [%s%s] %3d%%  %s\033[K", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                  std::string(static_cast<std::size_t>(width - filled), '.').c_str(), percent(done), note.c_str());
    } else {
      const int tenth = total_ > 0 ? done * 10 / total_ : 10;
      if (tenth <= shown_tenth_) return;
      shown_tenth_ = tenth;
      std::printf("  %3d%%  %s\n", percent(done), note.c_str());
    }
    std::fflush(stdout);
  }
  // Ends the bar's line on a terminal.
  void finish() {
    if (terminal_) std::printf("\n");
  }

 private:
  int percent(int done) const { return total_ > 0 ? done * 100 / total_ : 100; }
  const int total_;
  const bool terminal_;
  int shown_tenth_ = 0;
  int shown_percent_ = -1;
};
