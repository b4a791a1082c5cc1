// Runs a function as the top-level task of a one-rank runtime on the local transport: the setting
// of most single-rank unit tests.
#pragma once

#include <string>
#include <utility>

#include "rill/rill.hpp"
#include "test_argv.hpp"

namespace rill_test {

template <class F>
int run_on_one_rank(int workers, F&& fn) {
  test_argv a(command_line("unit_test",
                           {"--rill:transport=local", "--rill:ranks=1", "--rill:workers=" + std::to_string(workers)}));
  rill::runtime rt(a.argc, a.argv());
  return rt.run(std::forward<F>(fn));
}

}  // namespace rill_test
