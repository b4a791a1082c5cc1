// The example of docs/events.md: a small graph of deferred tasks across ranks, built before any
// of it runs, then a failure that travels through the graph as a poisoned event, then a thread
// outside Rill that waits on and triggers events.
#include <rill/rill.hpp>

#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

// A stage of the pipeline; it runs on whichever rank it was spawned on.
void stage(int step) {
  if (step < 0) throw std::invalid_argument("negative step");
}

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    const int n = rill::rank_n();

    // 1. Build the graph first: nothing may start before `go` triggers.
    rill::user_event go = rill::user_event::create();
    std::vector<rill::event> fan;
    for (int r = 0; r < n; ++r) fan.push_back(rill::proc(r).spawn(rill::after(go), stage, r));
    rill::event joined = rill::merge(fan);  // triggers once every stage has run
    rill::event last = rill::proc(n - 1).spawn(rill::after(joined), stage, n);

    // 2. Start it, and wait for the end (this task's fiber is suspended meanwhile).
    go.trigger();
    last.wait();
    std::printf("ran %d stages, then the last one on rank %d\n", n, n - 1);

    // 3. A failure: the stage throws, the one after it does not run, and waiting reports why.
    rill::event bad = rill::proc(n - 1).spawn(stage, -1);
    rill::event after_bad = rill::proc(0).spawn(rill::after(bad), stage, 1);
    try {
      after_bad.wait();
    } catch (const rill::poisoned_error& e) {
      std::printf("caught: %s\n", e.what());
    }

    // 4. A thread outside Rill (an I/O thread, say) waits for a stage on the last rank, then
    //    triggers an event; this task waits on that event, so its worker keeps serving meanwhile.
    rill::event remote_stage = rill::proc(n - 1).spawn(stage, 2);
    rill::user_event written = rill::user_event::create();
    std::thread io([&] {
      remote_stage.wait();  // blocks this thread only
      std::printf("an outside thread saw the stage on rank %d end\n", n - 1);
      written.trigger();
    });
    written.wait();
    io.join();

    const rill::event_counts c = rill::event_stats();
    std::printf("rank 0 created %llu events in %llu slots\n", static_cast<unsigned long long>(c.created),
                static_cast<unsigned long long>(c.slots));
    return 0;
  });
}
