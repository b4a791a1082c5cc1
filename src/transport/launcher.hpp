// What the environment says about the launcher that started this process.
#pragma once

namespace rill::detail {

struct launcher_count {
  int processes = 0;          // 0: no launcher's count in the environment
  const char* variable = "";  // the variable that says so
  const char* launcher = "";  // whose it is
};

// The number of processes the launcher started, from its environment variables.
launcher_count launcher_processes();

}  // namespace rill::detail
