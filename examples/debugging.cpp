// The example of docs/debugging.md: a pipeline whose input comes late and whose check fails.
//
//   rill-debugging --rill:ranks=2 --rill:hang-report-s=1 --rill:event-graph=pipeline.dot
//   dot -Tsvg pipeline.dot -o pipeline.svg
//
// While the producer on the last rank is slow, rank 0 has seen no event trigger for a second and
// prints its hang report: the input event nobody has triggered yet, and who waits for it. At the
// end every rank writes its part of the event graph (pipeline.rank0.dot, ...) and, since all ranks
// share this process, the whole of it to pipeline.dot.
#include <rill/rill.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

void stage(int step) { (void)step; }

void check(int value) {
  if (value < 0) throw std::domain_error("the check found a negative value");
}

// Slow on purpose: three seconds of "work" before the input exists.
void produce(rill::user_event input) {
  std::this_thread::sleep_for(std::chrono::seconds(3));
  input.trigger();
}

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  const int code = rt.run([] {
    const int n = rill::rank_n();
    rill::user_event input = rill::user_event::create();
    // Three stages round the ranks, each after the one before, then a check beside the last one.
    rill::event prev = input;
    for (int i = 0; i < 3; ++i) prev = rill::proc(i % n).spawn(rill::after(prev), stage, i);
    rill::event checked = rill::proc(n - 1).spawn(rill::after(prev), check, -1);
    rill::event all = rill::merge(prev, checked);
    // The input comes from the last rank (with one rank, run two workers so one stays idle).
    rill::proc(n - 1).spawn(produce, input);
    try {
      all.wait();
    } catch (const rill::poisoned_error& e) {
      std::printf("caught: %s\n", e.what());
    }
    return 0;
  });
  if (!rt.options().event_graph.empty()) std::printf("event graph written to %s\n", rt.options().event_graph.c_str());
  return code;
}
