// rill-trace-merge PATH NRANKS: merges the part files PATH.part.<rank> that the ranks of a run with
// --rill:trace=PATH wrote into the Chrome JSON document PATH, for when the run ended before rank 0
// merged them itself.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <exception>
#include <string>

#include "trace/trace_file.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Merges the part files of a Rill trace (--rill:trace=PATH) into PATH."};
  std::string path;
  int nranks = 0;
  app.add_option("PATH", path, "The trace path the run was given")->required();
  app.add_option("NRANKS", nranks, "The number of ranks of the run")->required()->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    rill::detail::trace::merge_parts(path, nranks);
  } catch (const std::exception& e) {
    fmt::print(stderr, "rill-trace-merge: {}\n", e.what());
    return 1;
  }
  fmt::print("rill-trace-merge: wrote {}\n", path);
  return 0;
}
