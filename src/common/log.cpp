#include "common/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "rill/error.hpp"

namespace rill::detail {

namespace {
std::atomic<void (*)(int)> abort_hook{nullptr};
}

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("rill");
    l->set_pattern("rill[%l] %v");
    l->set_level(spdlog::level::warn);
    return l;
  }();
  return *logger;
}

void set_log_level(const std::string& level) { log().set_level(spdlog::level::from_str(level)); }

void set_fatal_abort_hook(void (*hook)(int)) { abort_hook.store(hook); }

void fatal_message(const std::string& message) {
  std::fprintf(stderr, "rill: fatal: %s\n", message.c_str());
  std::fflush(stderr);
  if (auto hook = abort_hook.load()) hook(exit_fatal);
  std::_Exit(exit_fatal);
}

}  // namespace rill::detail
