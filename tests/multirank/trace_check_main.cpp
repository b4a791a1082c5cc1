// rill_trace_check PATH NRANKS: checks a trace written by --rill:trace (tests/support/trace_check.hpp)
// after a run under mpirun; exit 0 when it is well formed and covers every rank with tasks and
// message arrows.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "trace_check.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TRACE.json NRANKS\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "rill_trace_check: cannot open %s\n", argv[1]);
    return 1;
  }
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  rill_test::trace_summary s = rill_test::check_trace(doc);
  const long ranks = std::atol(argv[2]);
  if (static_cast<long>(s.ranks.size()) != ranks)
    s.problems.push_back(fmt::format("{} rank processes, expected {}", s.ranks.size(), ranks));
  for (long pid = 1; pid <= ranks; ++pid)
    if (!s.tasks[pid]) s.problems.push_back(fmt::format("rank {} ran no traced task", pid - 1));
  if (s.arrows == 0) s.problems.push_back("no message arrows");
  for (const auto& p : s.problems) std::fprintf(stderr, "rill_trace_check: %s\n", p.c_str());
  if (!s.problems.empty()) return 1;
  std::printf("rill_trace_check: %s is well formed: %ld ranks, %zu arrows\n", argv[1], ranks, s.arrows);
  return 0;
}
