// One rank's barriers: the arrival counts, reductions and results of the barriers it owns. A
// barrier's phases are the generations of a pinned slot of this rank's event table (see
// event_table::create_pinned), which carries its waiters and remote subscriptions; this table
// only decides when each phase triggers. Read docs/barriers.md for the protocol.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/barrier.hpp"
#include "rill/event.hpp"

namespace rill::detail {

class event_table;

class barrier_table {
 public:
  barrier_table(int me, event_table& events) : me_(me), events_(events) {}
  barrier_table(const barrier_table&) = delete;
  barrier_table& operator=(const barrier_table&) = delete;

  event create(std::uint32_t expected, barrier_redop redop);

  // An arrival at phase `phase` of a barrier owned here, from rank `from` (this rank or a
  // message's sender). value/size: the contribution (size 0: none), of type `type`. cause: the
  // arrival's precondition was poisoned. A misuse (too many arrivals, a value of another type)
  // throws misuse_error when `caller_can_catch`, and is fatal otherwise.
  void arrive(event phase, std::uint32_t count, std::uint64_t type, const std::byte* value, std::size_t size,
              poison_ptr cause, int from, bool caller_can_catch);

  // The result of a triggered phase owned here; an empty string on success, else why not.
  std::string result(event phase, std::uint64_t type, std::size_t size, std::vector<std::byte>& out);

 private:
  struct phase_record {
    std::uint32_t remaining = 0;  // arrivals still expected
    std::vector<std::byte> acc;   // the reduction so far
    poison_ptr cause;             // the first poisoned arrival's
    bool triggered = false;       // poisoned early: triggered, still taking its remaining arrivals
  };
  struct pending_trigger {
    std::uint64_t gen;
    poison_ptr cause;
  };
  struct state {
    std::mutex m;
    std::uint32_t expected = 0;
    std::uint64_t first_gen = 0;  // generation of the first phase
    std::uint64_t next_gen = 0;   // the first phase not yet decided to trigger
    barrier_redop redop;
    std::map<std::uint64_t, phase_record> phases;                          // phases with arrivals, not yet complete
    std::deque<std::pair<std::uint64_t, std::vector<std::byte>>> results;  // latest kept_results
    // Phases decided to trigger, triggered in order, outside the lock, by one thread at a time.
    std::deque<pending_trigger> to_trigger;
    bool triggering = false;
  };

  state* find(event phase);
  // Under st.m: triggers (in order) every phase from next_gen that has become complete.
  void decide_locked(state& st);
  void drain(state& st, std::uint32_t slot);

  const int me_;
  event_table& events_;
  std::mutex m_;  // guards barriers_ (the states themselves never move)
  std::unordered_map<std::uint32_t, std::unique_ptr<state>> barriers_;
};

}  // namespace rill::detail
