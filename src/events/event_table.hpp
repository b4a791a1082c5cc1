// One rank's events: the generational slots it owns and what it knows of other ranks' slots.
// Read src/events/README.md for the protocol and its invariants.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/spinlock.hpp"
#include "events/event_trace.hpp"
#include "events/free_slots.hpp"
#include "events/remote_slots.hpp"
#include "rill/event.hpp"

namespace rill::detail {

// What a rank knows about one generation of a slot.
struct event_status {
  bool triggered = false;
  bool known = false;  // whether `cause` is known (false only for remote generations inferred triggered)
  poison_ptr cause;    // set when poisoned
};

// The wire form of a poisoned generation.
struct poison_wire {
  std::uint64_t gen = 0;
  std::int32_t rank = -1;
  std::string reason;
  std::string operation;
  template <class A>
  void serialize(A& a) {
    a(gen, rank, reason, operation);
  }
};

class event_table {
 public:
  // A slot that has had this many poisoned generations is retired (never reused), so the list of
  // a slot's poisoned generations stays short and complete.
  static constexpr std::size_t max_poisoned_generations = 8;

  // `workers`: the rank's worker threads, which are the only threads that call into its table.
  event_table(int me, int ranks, int workers) : me_(me), ranks_(ranks), sent_(static_cast<std::size_t>(workers) + 1) {}
  ~event_table();
  event_table(const event_table&) = delete;
  event_table& operator=(const event_table&) = delete;

  event create();
  // A slot pinned to a sequence of events (a barrier's phases): it never returns to the free list,
  // and when its generation g triggers, g + 1 begins at once, untriggered. Waiters, queries and
  // subscriptions may name generations beyond the current one; they wait for that generation.
  // Only the owner triggers a pinned slot, one generation after the other.
  event create_pinned();
  // Triggers (cause == nullptr) or poisons an event from this rank. Throws misuse_error when an
  // event owned here has already triggered.
  void trigger(event e, poison_ptr cause);
  // The status of e as this rank knows it now; for a remote untriggered event, subscribes to the
  // owner when this rank has not yet subscribed to that generation.
  // A poisoned cause returned counts as observed (unobserved_errors.cpp) unless `observe` is false:
  // the caller only asks whether it triggered, or hands on the event itself (a merge of it).
  event_status query(event e, bool observe = true);
  // Registers w to run when e triggers; runs it at once (through fire) when e has triggered.
  void on_trigger(event e, event_waiter* w);

  event_counts counts();

  // Seeing the graph (event_trace.cpp, docs/debugging.md).
  event_trace& trace() { return trace_; }
  // The poisoned generations of events owned here that nobody observed (see poisoned_gen), with
  // what created each when known. Call when the rank's workers have stopped.
  struct unobserved_error {
    event e;
    poison_ptr cause;
    std::string created_by;  // "" when not known
  };
  std::vector<unobserved_error> unobserved_errors();
  // Triggers from other ranks of events this rank never created, as reported when they came (each
  // was dropped; the end of the run fails for them).
  std::vector<std::string> unknown_triggers();
  // Notes which operation created `e` (owned here), for the hang report and the graph.
  void set_op(event e, op_kind op, int arg = -1);
  // From an idle worker: prints the hang report once the rank has been quiet for the hang time;
  // returns whether it did.
  bool check_hang();
  // What this rank waits on now: the untriggered events with waiters ("" when none).
  std::string pending_report();

  // Message handlers (run on this rank).
  void on_subscribe(int from, std::uint32_t slot, std::uint64_t gen);
  // `seen`: rank `from` ran waiters of its own with the cause (so the error was observed there).
  void on_remote_trigger(int from, std::uint32_t slot, std::uint64_t gen, poison_ptr cause, bool notify_from,
                         bool seen = false);
  void on_notify(int owner, std::uint32_t slot, std::uint64_t through, const std::vector<poison_wire>& poisoned);
  // Rank `from` passed on the poisoned generation `gen` of `slot`, which it triggered itself.
  void on_observed(int from, std::uint32_t slot, std::uint64_t gen);

 private:
  // What few slots need: more than one remote subscriber, poisoned generations, a barrier's
  // subscriptions.
  // Allocated on first use and kept with the slot (its vectors keep their capacity).
  struct slot_extra {
    std::vector<int> subscribers;  // further ranks to notify when `gen` triggers
    std::vector<poisoned_gen> poisoned;
    // Pinned slots only: subscribed ranks with the latest generation each asked for (>= gen).
    // Each is notified at every trigger until that generation has triggered, so a remote waiter
    // for an earlier generation covered by a later subscription is woken in time.
    std::vector<std::pair<int, std::uint64_t>> pinned_subscribers;
    // A generation whose poison the rank that triggered it observed, in a message that overtook
    // its trigger (on_observed): it is observed once it is poisoned here.
    std::uint64_t observed_before_trigger = 0;
  };
  // One cache line: a trigger touches its slot once, and large dependency graphs keep hundreds of
  // thousands of them. The lock is a spin lock: every section is a few instructions, and a
  // trigger takes it once per event, on the hot path of every dependency graph.
  struct alignas(64) owned_slot {
    spinlock m;
    bool triggered = true;  // whether `gen` has triggered
    bool retired = false;
    bool pinned = false;  // see create_pinned()
    // What created generation op_gen (set just after create, read by reports).
    std::atomic<op_kind> op{op_kind::event};
    std::atomic<std::int32_t> op_arg{-1};
    std::uint64_t gen = 0;            // the latest generation created (0: none yet)
    event_waiter* waiters = nullptr;  // waiting for `gen` (pinned: for `gen` or later)
    std::atomic<std::uint64_t> op_gen{0};
    std::unique_ptr<slot_extra> extra;
    // The first rank to notify when `gen` triggers (-1: none), kept here: most events have at most
    // one remote subscriber, and a trigger should not touch two more cache lines to find it.
    std::int32_t subscriber = -1;

    slot_extra& more() {
      if (!extra) extra = std::make_unique<slot_extra>();
      return *extra;
    }
    const std::vector<poisoned_gen>& poisoned() const { return extra ? extra->poisoned : no_poison; }
    // The cause of generation `gen` (null: not poisoned), which its caller now passes on: observed.
    poison_ptr observe_poison(std::uint64_t g) {
      if (!extra) return nullptr;
      for (poisoned_gen& p : extra->poisoned)
        if (p.gen == g) {
          p.observed = true;
          return p.cause;
        }
      return nullptr;
    }
    bool has_subscribers() const { return subscriber >= 0; }  // the first is always here
    void add_subscriber(int rank) {
      if (subscriber < 0)
        subscriber = rank;
      else
        more().subscribers.push_back(rank);
    }
    bool has_pinned_subscribers() const { return extra && !extra->pinned_subscribers.empty(); }
  };
  static const std::vector<poisoned_gen> no_poison;
  // Guards the remote_slots records whose keys fall in it (remote_key % shard_count).
  struct alignas(64) shard {
    spinlock m;  // every section is a lookup and a few stores
  };

  // Slots live in chunks of doubling size that never move: chunk k holds chunk_base << k slots.
  static constexpr std::uint32_t chunk_base = 64;
  static constexpr int max_chunks = 26;
  static constexpr int shard_count = 16;

  std::uint32_t allocate_slot();
  owned_slot& slot_at(std::uint32_t index);
  owned_slot* find_slot(std::uint32_t index);
  void check_owner(event e, const char* what) const;
  // `from`: the rank whose trigger message this is (-1: this rank); it is notified only if
  // `notify_from`.
  void trigger_owned(std::uint32_t index, std::uint64_t gen, poison_ptr cause, int from, bool notify_from,
                     bool seen_by_from = false);
  // The pinned half of trigger_owned, under s.m: collects the waiters to run and the ranks to
  // notify, and begins generation gen + 1.
  event_waiter* trigger_pinned_locked(owned_slot& s, std::uint32_t index, std::uint64_t gen, const poison_ptr& cause,
                                      std::vector<int>& subscribers);
  void trigger_remote(event e, poison_ptr cause);
  // Rank `from` triggered a generation of `slot` this rank never created: reported, not applied.
  void refuse_unknown_trigger(int from, std::uint32_t slot, std::uint64_t gen);
  void subscribe(int owner, std::uint32_t slot, std::uint64_t gen);
  // Under the record's shard lock, for a generation > known that this rank did not trigger itself:
  // whether a subscription to it must be sent (it is then noted as sent).
  static bool must_subscribe(remote_slot& rec, std::uint64_t gen);
  // Under the record's shard lock: whether its local cause (a poison this rank triggered) is now
  // observed for the first time, so that the owner must be told (send_observed).
  static bool observe_local_cause(remote_slot& rec);
  static poison_ptr find_poison(const std::vector<poisoned_gen>& list, std::uint64_t gen);
  static std::vector<poison_wire> to_wire(const std::vector<poisoned_gen>& list);
  static std::uint64_t remote_key(int owner, std::uint32_t slot) {
    return (static_cast<std::uint64_t>(owner) << 32) | slot;
  }
  shard& shard_of(std::uint64_t key) { return shards_[key % shard_count]; }

  const int me_;
  const int ranks_;
  event_trace trace_{me_};

  spinlock alloc_m_;  // guards free_ and growth (a spin lock: it is taken once per trigger)
  free_slots free_;
  std::atomic<std::uint32_t> slot_count_{0};
  std::array<std::atomic<owned_slot*>, max_chunks> chunks_{};

  std::array<shard, shard_count> shards_;
  remote_slots remote_{ranks_};

  std::atomic<std::uint64_t> created_{0};
  std::atomic<std::uint64_t> untriggered_{0};
  std::atomic<std::uint64_t> peak_untriggered_{0};
  std::atomic<std::uint64_t> retired_{0};
  // Protocol messages sent, counted per worker: each worker writes only its own line, so counting
  // costs no locked instruction on the path of every message. The last entry is for any other
  // thread, with atomic adds.
  struct alignas(64) sent_counts {
    std::atomic<std::uint64_t> subscriptions{0};
    std::atomic<std::uint64_t> notifications{0};
    std::atomic<std::uint64_t> triggers{0};
  };
  std::vector<sent_counts> sent_;
  std::mutex unknown_triggers_m_;
  std::vector<std::string> unknown_triggers_;
  void count_sent(std::atomic<std::uint64_t> sent_counts::*which, std::uint64_t n);
};

// Runs the waiters of a list (linked through next) without recursion: a waiter that triggers
// another event queues that event's waiters behind the running ones on the same thread.
void fire_waiters(event_waiter* list);

}  // namespace rill::detail
