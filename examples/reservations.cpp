// The example of docs/reservations.md: tasks on every rank update a shared tally kept in a
// reservation's payload; acquires and releases are deferred, so the whole graph is built before
// any of it runs, and ownership (with the tally) moves to whichever rank is granted next.
#include <rill/rill.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

struct tally {
  std::uint64_t updates;
  std::int32_t last_rank;
};

// Runs while the calling rank holds `r`: the payload is this rank's coherent copy.
void update(rill::reservation r) {
  tally* t = r.payload<tally>();
  t->updates += 1;
  t->last_rank = rill::rank_me();
}

// On each rank: `rounds` updates in a chain, each acquire after the previous update.
void updates_here(rill::reservation r, rill::event start, int rounds) {
  rill::event prev = start;
  for (int i = 0; i < rounds; ++i) {
    rill::event granted = r.acquire(prev);  // never blocks
    rill::event done = rill::proc::here().spawn(rill::after(granted), update, r);
    r.release(done);  // deferred too
    prev = done;
  }
  prev.wait();
}

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    const int n = rill::rank_n();
    constexpr int rounds = 100;
    rill::reservation r = rill::reservation::create(sizeof(tally));  // rank 0 owns it first
    rill::user_event go = rill::user_event::create();
    std::vector<rill::event> workers;
    for (int rank = 0; rank < n; ++rank)
      workers.push_back(rill::proc(rank).spawn(updates_here, r, rill::event(go), rounds));
    go.trigger();
    rill::merge(workers).wait();

    // Readers: three tasks of rank 0 read the tally together (their grants trigger together).
    std::uint64_t seen[3] = {};
    std::vector<rill::event> reads;
    for (std::uint64_t* out = seen; out != seen + 3; ++out) {
      rill::event granted = r.acquire_shared();
      rill::event done = rill::proc::here().spawn(
          rill::after(granted), [out](rill::reservation res) { *out = res.payload<tally>()->updates; }, r);
      r.release(done);
      reads.push_back(done);
    }
    rill::merge(reads).wait();
    if (seen[0] == seen[1] && seen[1] == seen[2])
      std::printf("3 readers saw %llu updates\n", static_cast<unsigned long long>(seen[0]));

    r.acquire().wait();  // ownership and the tally come back to rank 0
    std::printf("%llu updates from %d ranks\n", static_cast<unsigned long long>(r.payload<tally>()->updates), n);
    r.release();

    // A failed precondition: the acquire does not happen, its grant is poisoned.
    rill::user_event bad = rill::user_event::create();
    rill::event granted = r.acquire(bad);
    r.release(granted);  // pairs with the skipped acquire: nothing is released twice
    bad.poison("no input");
    try {
      granted.wait();
    } catch (const rill::poisoned_error& e) {
      std::printf("caught: %s\n", e.what());
    }
    rill::event last = r.acquire();
    r.release(last);
    r.destroy(last);  // takes effect once nobody holds or waits for it
    return 0;
  });
}
