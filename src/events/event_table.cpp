#include "events/event_table.hpp"

#include "trace/hooks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <deque>
#include <exception>

#include "common/log.hpp"
#include "events/events_module.hpp"
#include "messages/messenger.hpp"
#include "rill/am.hpp"
#include "rill/error.hpp"
#include "scheduler/worker.hpp"

namespace rill::detail {

const std::vector<poisoned_gen> event_table::no_poison;

namespace {

event_table& table_here() { return events_here("an event message"); }

poison_ptr from_wire(const poison_wire& w) {
  return std::make_shared<const poison_info>(poison_info{w.reason, w.rank, w.operation});
}

// ---- messages ---------------------------------------------------------------------------------
// Every handler runs on the receiving rank's progress thread where it has one (send_inline: they do
// not wait), else on a worker; the sender is am::sender().

void send_subscribe(int owner, std::uint32_t slot, std::uint64_t gen) {
  am::send_inline(
      owner, [](std::uint32_t s, std::uint64_t g) { table_here().on_subscribe(am::sender(), s, g); }, slot, gen);
}

// Tells the owner that a poisoned generation this rank triggered was observed here after all.
void send_observed(int owner, std::uint32_t slot, std::uint64_t gen) {
  am::send_inline(
      owner, [](std::uint32_t s, std::uint64_t g) { table_here().on_observed(am::sender(), s, g); }, slot, gen);
}

// Triggers and notifications leave at once, not at the sender's next progress point: what waits
// for them on the other rank waits for nothing else, and the sender may first run a long task.
void send_now(int to) { current_messenger("rill::event").agg().flush(to); }

void send_notify(int to, std::uint32_t slot, std::uint64_t through, const std::vector<poison_wire>& poisoned) {
  if (poisoned.empty()) {
    am::send_inline(
        to, [](std::uint32_t s, std::uint64_t t) { table_here().on_notify(am::sender(), s, t, {}); }, slot, through);
  } else {
    am::send_inline(
        to,
        [](std::uint32_t s, std::uint64_t t, const std::vector<poison_wire>& p) {
          table_here().on_notify(am::sender(), s, t, p);
        },
        slot, through, poisoned);
  }
  send_now(to);
}

// `notify_me`: the triggering rank still has waiters for earlier generations that rely on the
// owner's word, so the owner must notify it too (otherwise it leaves it out, as Realm does).
// `seen`: waiters on this rank ran with the (poisoned) cause.
void send_trigger(int owner, std::uint32_t slot, std::uint64_t gen, const poison_ptr& cause, bool notify_me,
                  bool seen) {
  if (!cause) {
    am::send_inline(
        owner,
        [](std::uint32_t s, std::uint64_t g, bool again) {
          table_here().on_remote_trigger(am::sender(), s, g, nullptr, again);
        },
        slot, gen, notify_me);
  } else {
    am::send_inline(
        owner,
        [](std::uint32_t s, std::uint64_t g, bool again, bool seen, const poison_wire& p) {
          table_here().on_remote_trigger(am::sender(), s, g, from_wire(p), again, seen);
        },
        slot, gen, notify_me, seen, poison_wire{gen, cause->rank, cause->reason, cause->operation});
  }
  send_now(owner);
}

// ---- firing without recursion -------------------------------------------------------------------

// Lists waiting to run on this thread, oldest first. Whole lists are queued, not concatenated:
// finding a list's tail would walk its nodes, each a cache miss in a large graph. A chain of events
// queues one list per trigger, so the queue is a ring without a destructor (a thread_local that has
// one pays an initialisation check on every access), and a deque holds what does not fit.
struct fire_queue {
  static constexpr std::uint32_t ring_size = 64;
  event_waiter* ring[ring_size];
  std::uint32_t head = 0;  // the oldest in the ring
  std::uint32_t count = 0;
  bool overflowed = false;  // lists wait in `overflow`, all queued after those in the ring

  void push(event_waiter* list);
  event_waiter* pop();  // nullptr when empty
};
thread_local constinit fire_queue queued{};
thread_local std::deque<event_waiter*> overflow;
thread_local bool firing = false;

void fire_queue::push(event_waiter* list) {
  if (!overflowed && count < ring_size) {
    ring[(head + count++) % ring_size] = list;
    return;
  }
  overflow.push_back(list);
  overflowed = true;
}

event_waiter* fire_queue::pop() {
  if (count > 0) {
    event_waiter* list = ring[head];
    head = (head + 1) % ring_size;
    --count;
    return list;
  }
  if (!overflowed) return nullptr;
  event_waiter* list = overflow.front();
  overflow.pop_front();
  overflowed = !overflow.empty();
  return list;
}

}  // namespace

namespace {

// Runs the waiters of one list; the first exception any of them throws is kept in `first`.
void run_list(event_waiter* w, std::exception_ptr& first) {
  while (w) {
    event_waiter* next = w->next;
    w->next = nullptr;
    __builtin_prefetch(next);  // its node is cold; fetch it while w runs
    try {
      w->fn(w, false);  // may free w, may queue more lists
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    w = next;
  }
}

}  // namespace

void fire_waiters(event_waiter* list) {
  if (!list) return;
  if (firing) {
    queued.push(list);  // the outer call on this thread runs it, after the lists before it
    return;
  }
  firing = true;
  std::exception_ptr first;
  // The outermost list runs without passing through the queue (the common case: the only list).
  do {
    run_list(list, first);
  } while ((list = queued.pop()));
  firing = false;
  if (first) std::rethrow_exception(first);
}

// ---- the table ----------------------------------------------------------------------------------

event_table::~event_table() {
  // Whatever still waits when the rank stops will never run: release callbacks' resources.
  auto discard = [](event_waiter* w) {
    while (w) {
      event_waiter* next = w->next;
      w->fn(w, true);
      w = next;
    }
  };
  const std::uint32_t n = slot_count_.load();
  for (std::uint32_t i = 0; i < n; ++i) discard(slot_at(i).waiters);
  for (int k = 0; k < max_chunks; ++k) delete[] chunks_[static_cast<std::size_t>(k)].load();
  remote_.for_each([&](int, std::uint32_t, remote_slot& rec) { discard(rec.waiters); });
}

event_table::owned_slot& event_table::slot_at(std::uint32_t index) {
  const std::uint32_t j = index / chunk_base + 1;
  const int k = std::bit_width(j) - 1;
  const std::uint32_t first = chunk_base * ((std::uint32_t{1} << k) - 1);
  return chunks_[static_cast<std::size_t>(k)].load(std::memory_order_acquire)[index - first];
}

event_table::owned_slot* event_table::find_slot(std::uint32_t index) {
  if (index >= slot_count_.load(std::memory_order_acquire)) return nullptr;
  return &slot_at(index);
}

void event_table::check_owner(event e, const char* what) const {
  if (e.owner() < 0 || e.owner() >= ranks_) {
    throw misuse_error(
        fmt::format("{}: the event's owner rank {} does not exist (ranks 0..{})", what, e.owner(), ranks_ - 1));
  }
}

std::uint32_t event_table::allocate_slot() {
  std::lock_guard g(alloc_m_);
  if (const auto index = free_.take_lowest()) return *index;
  const std::uint32_t index = slot_count_.load(std::memory_order_relaxed);
  const std::uint32_t j = index / chunk_base + 1;
  const int k = std::bit_width(j) - 1;
  if (k >= max_chunks) throw std::length_error("rill: too many untriggered events on one rank");
  auto& chunk = chunks_[static_cast<std::size_t>(k)];
  if (!chunk.load(std::memory_order_relaxed)) chunk.store(new owned_slot[chunk_base << k], std::memory_order_release);
  slot_count_.store(index + 1, std::memory_order_release);
  return index;
}

event event_table::create() {
  const std::uint32_t index = allocate_slot();
  owned_slot& s = slot_at(index);
  std::uint64_t gen;
  {
    std::lock_guard g(s.m);
    gen = ++s.gen;
    s.triggered = false;
  }
  created_.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t live = untriggered_.fetch_add(1, std::memory_order_relaxed) + 1;
  std::uint64_t peak = peak_untriggered_.load(std::memory_order_relaxed);
  while (live > peak && !peak_untriggered_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return event::from_parts(static_cast<std::uint32_t>(me_), index, gen);
}

event event_table::create_pinned() {
  const event first = create();
  owned_slot& s = slot_at(first.slot());
  std::lock_guard g(s.m);
  s.pinned = true;
  return first;
}

poison_ptr event_table::find_poison(const std::vector<poisoned_gen>& list, std::uint64_t gen) {
  for (const auto& p : list)
    if (p.gen == gen) return p.cause;
  return nullptr;
}

std::vector<poison_wire> event_table::to_wire(const std::vector<poisoned_gen>& list) {
  std::vector<poison_wire> out;
  out.reserve(list.size());
  for (const auto& p : list) out.push_back({p.gen, p.cause->rank, p.cause->reason, p.cause->operation});
  return out;
}

void event_table::trigger(event e, poison_ptr cause) {
  if (e.is_none()) throw misuse_error("rill: triggering event::none(), which has always triggered");
  check_owner(e, "rill::user_event::trigger");
  if (e.owner() == me_)
    trigger_owned(e.slot(), e.generation(), std::move(cause), -1, false);
  else
    trigger_remote(e, std::move(cause));
}

void event_table::trigger_owned(std::uint32_t index, std::uint64_t gen, poison_ptr cause, int from, bool notify_from,
                                bool seen_by_from) {
  const std::uint64_t flow = trace::enabled() ? trace::event_flow(trace::event_id(me_, index, gen)) : 0;
  trace::instant<trace::kind::event_trigger>(flow, static_cast<std::uint64_t>(me_), index);
  if (trace_.graph_on())
    trace_.record_trigger(event::from_parts(static_cast<std::uint32_t>(me_), index, gen), from < 0 ? me_ : from, cause);
  owned_slot* s = find_slot(index);
  if (!s) {
    if (from >= 0) return refuse_unknown_trigger(from, index, gen);
    throw misuse_error(fmt::format("rill: trigger of an event in slot {} that rank {} never created", index, me_));
  }
  event_waiter* waiters;
  int first = -1;                // the first rank to notify
  std::vector<int> subscribers;  // the others (rarely any)
  std::vector<poison_wire> wire;
  bool reuse = false;
  bool pinned;
  {
    std::unique_lock g(s->m);
    if (from >= 0 && gen > s->gen) {
      // A generation beyond the slot's latest was never created: the handle is not one of this
      // run's (a real one is created before it can travel, and generations only grow).
      g.unlock();
      return refuse_unknown_trigger(from, index, gen);
    }
    pinned = s->pinned;
    if (pinned) {
      if (from >= 0) {
        throw misuse_error(
            fmt::format("rill: rank {} triggered a barrier phase (rank {}, slot {}, generation {}), "
                        "which only its arrivals complete",
                        from, me_, index, gen));
      }
      waiters = trigger_pinned_locked(*s, index, gen, cause, subscribers);
    } else {
      if (gen != s->gen || s->triggered) {
        throw misuse_error(
            fmt::format("rill: event (rank {}, slot {}, generation {}) triggered twice", me_, index, gen));
      }
      s->triggered = true;
      waiters = std::exchange(s->waiters, nullptr);
      first = std::exchange(s->subscriber, -1);
      if (s->extra) subscribers.swap(s->extra->subscribers);
      if (from >= 0) {
        // The triggering rank woke its own waiters; it hears back only if it asked to.
        if (first == from) first = -1;
        std::erase(subscribers, from);
        if (notify_from) {
          if (first < 0)
            first = from;
          else
            subscribers.push_back(from);
        }
      }
      if (cause) {
        const bool seen_early = s->extra && s->extra->observed_before_trigger == gen;
        s->more().poisoned.push_back(
            {gen, cause, waiters || first >= 0 || !subscribers.empty() || seen_by_from || seen_early});
      }
      reuse = s->poisoned().size() < max_poisoned_generations;
      s->retired = !reuse;
    }
    if ((first >= 0 || !subscribers.empty()) && !s->poisoned().empty()) wire = to_wire(s->poisoned());
  }
  if (pinned) {
    created_.fetch_add(1, std::memory_order_relaxed);  // its next generation began, untriggered
  } else {
    untriggered_.fetch_sub(1, std::memory_order_relaxed);
    if (reuse) {
      std::lock_guard g(alloc_m_);
      free_.insert(index);
    } else {
      retired_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // Waiters were registered with no cause: only a poisoned trigger needs a pass over them (a pass
  // that chases pointers through cold nodes, one per dependent).
  if (cause)
    for (event_waiter* w = waiters; w; w = w->next) w->cause = cause;
  // Counted before sending, like every message here: a receiver's reply may reach a counter reader
  // on this rank before this thread returns from the sends.
  if (const std::size_t sent = subscribers.size() + (first >= 0 ? 1 : 0))
    count_sent(&sent_counts::notifications, sent);  // (most triggers notify nobody: no count)
  if (first >= 0) send_notify(first, index, gen, wire);
  for (int r : subscribers) send_notify(r, index, gen, wire);
  trace::releasing released_by(flow);
  fire_waiters(waiters);
}

event_waiter* event_table::trigger_pinned_locked(owned_slot& s, std::uint32_t index, std::uint64_t gen,
                                                 const poison_ptr& cause, std::vector<int>& subscribers) {
  if (gen != s.gen) {
    throw misuse_error(fmt::format("rill: pinned event (rank {}, slot {}) triggered generation {} while {} is current",
                                   me_, index, gen, s.gen));
  }
  // Waiters for this generation run; those for later ones stay.
  event_waiter* ready = nullptr;
  event_waiter* later = nullptr;
  for (event_waiter* w = s.waiters; w;) {
    event_waiter* next = w->next;
    event_waiter*& list = w->gen <= gen ? ready : later;
    w->next = list;
    list = w;
    w = next;
  }
  s.waiters = later;
  // Every subscribed rank hears of this generation; those that asked for no later one are done.
  if (s.extra) {
    auto& subscribed = s.extra->pinned_subscribers;
    for (const auto& [rank, upto] : subscribed) subscribers.push_back(rank);
    std::erase_if(subscribed, [gen](const auto& p) { return p.second <= gen; });
  }
  if (cause) s.more().poisoned.push_back({gen, cause, ready || !subscribers.empty()});
  s.gen = gen + 1;  // the next generation begins at once; `triggered` stays false
  return ready;
}

void event_table::trigger_remote(event e, poison_ptr cause) {
  trace_.note_progress();
  const std::uint64_t key = remote_key(e.owner(), e.slot());
  event_waiter* ready = nullptr;
  bool notify_me;
  {
    shard& sh = shard_of(key);
    std::lock_guard g(sh.m);
    remote_slot& rec = remote_.at(e.owner(), e.slot());
    if (e.generation() <= rec.known || e.generation() <= rec.local_gen) {
      throw misuse_error(fmt::format("rill: event (rank {}, slot {}, generation {}) triggered twice", e.owner(),
                                     e.slot(), e.generation()));
    }
    rec.local_gen = e.generation();
    rec.local_cause = cause;
    rec.local_seen = false;
    // This rank's own waiters for this generation go on at once; the owner tells the others.
    event_waiter** link = &rec.waiters;
    while (event_waiter* w = *link) {
      if (w->gen == e.generation()) {
        *link = w->next;
        w->cause = cause;
        w->next = ready;
        ready = w;
      } else {
        link = &w->next;
      }
    }
    // Waiters left here wait for earlier generations, which have triggered (a later one exists)
    // but whose causes only the owner knows: ask it to answer this rank as well. Without such
    // waiters the owner leaves this rank out, so a later waiter for an earlier generation must
    // subscribe again rather than count on an answer that will not come.
    notify_me = rec.waiters != nullptr;
    if (!notify_me) rec.subscribed = rec.known;
    rec.local_seen = ready != nullptr;
  }
  count_sent(&sent_counts::triggers, 1);
  send_trigger(e.owner(), e.slot(), e.generation(), cause, notify_me, ready != nullptr);
  fire_waiters(ready);
}

event_status event_table::query(event e, bool observe) {
  if (e.is_none()) return {true, true, nullptr};
  check_owner(e, "rill::event");
  if (e.owner() == me_) {
    owned_slot* s = find_slot(e.slot());
    if (!s) throw misuse_error(fmt::format("rill: event in slot {} that rank {} never created", e.slot(), me_));
    std::lock_guard g(s->m);
    if (e.generation() > s->gen) {
      if (s->pinned) return {};  // a later generation of a pinned slot: it will come
      throw misuse_error(fmt::format("rill: event generation {} of slot {} that rank {} never created", e.generation(),
                                     e.slot(), me_));
    }
    if (e.generation() < s->gen || s->triggered)
      return {true, true, observe ? s->observe_poison(e.generation()) : find_poison(s->poisoned(), e.generation())};
    return {};
  }
  const std::uint64_t key = remote_key(e.owner(), e.slot());
  event_status status;
  bool tell_owner = false;
  {
    shard& sh = shard_of(key);
    std::lock_guard g(sh.m);
    remote_slot& rec = remote_.at(e.owner(), e.slot());
    if (e.generation() <= rec.known) return {true, true, find_poison(rec.poisoned, e.generation())};
    if (e.generation() == rec.local_gen) {
      status = {true, true, rec.local_cause};
      tell_owner = observe && observe_local_cause(rec);
    } else {
      if (e.generation() < rec.local_gen) return {true, false, nullptr};  // a later one was created: triggered
      if (!must_subscribe(rec, e.generation())) return {};
    }
  }
  if (status.triggered) {
    if (tell_owner) send_observed(e.owner(), e.slot(), e.generation());
    return status;
  }
  subscribe(e.owner(), e.slot(), e.generation());
  return {};
}

void event_table::subscribe(int owner, std::uint32_t slot, std::uint64_t gen) {
  trace::instant<trace::kind::event_subscribe>(0, static_cast<std::uint64_t>(owner), slot);
  trace_.note_progress();
  count_sent(&sent_counts::subscriptions, 1);
  send_subscribe(owner, slot, gen);
}

bool event_table::must_subscribe(remote_slot& rec, std::uint64_t gen) {
  if (gen == rec.subscribed || gen == rec.subscribed_below) return false;  // asked already
  if (gen > rec.subscribed) {
    rec.subscribed = gen;
    return true;
  }
  // The subscription to the later generation does not cover this one: the owner answers it only
  // when that generation triggers, and that generation may depend on what waits here for this one
  // (its task came after the later one's: reordered messages, or another worker). This one has
  // triggered (a later one exists) or, on a pinned slot, is yet to come: the owner answers at
  // once, or at its trigger.
  rec.subscribed_below = gen;
  return true;
}

void event_table::on_trigger(event e, event_waiter* w) {
  w->next = nullptr;
  w->gen = e.generation();
  w->cause = nullptr;
  if (trace_.graph_on()) trace_.record_wait(e, *w);
  if (e.is_none()) {
    fire_waiters(w);
    return;
  }
  check_owner(e, "rill::event");
  if (e.owner() == me_) {
    owned_slot* s = find_slot(e.slot());
    if (!s) throw misuse_error(fmt::format("rill: event in slot {} that rank {} never created", e.slot(), me_));
    {
      std::lock_guard g(s->m);
      if (e.generation() > s->gen && !s->pinned) {
        throw misuse_error(fmt::format("rill: event generation {} of slot {} that rank {} never created",
                                       e.generation(), e.slot(), me_));
      }
      if (e.generation() >= s->gen && !s->triggered) {
        w->next = s->waiters;
        s->waiters = w;
        return;
      }
      w->cause = s->observe_poison(e.generation());
    }
    fire_waiters(w);
    return;
  }
  const std::uint64_t key = remote_key(e.owner(), e.slot());
  bool tell_owner = false;
  {
    shard& sh = shard_of(key);
    std::lock_guard g(sh.m);
    remote_slot& rec = remote_.at(e.owner(), e.slot());
    if (e.generation() <= rec.known) {
      w->cause = find_poison(rec.poisoned, e.generation());
    } else if (e.generation() == rec.local_gen) {
      w->cause = rec.local_cause;
      tell_owner = observe_local_cause(rec);
    } else {
      // Untriggered, or inferred triggered with an unknown cause: wait for the owner's word.
      w->next = rec.waiters;
      rec.waiters = w;
      if (!must_subscribe(rec, e.generation())) return;
      w = nullptr;
    }
  }
  if (tell_owner) send_observed(e.owner(), e.slot(), e.generation());
  if (w)
    fire_waiters(w);
  else
    subscribe(e.owner(), e.slot(), e.generation());
}

void event_table::on_subscribe(int from, std::uint32_t slot, std::uint64_t gen) {
  owned_slot* s = find_slot(slot);
  if (!s) {
    // A handle this rank never made (built from bits, or kept from another run): the asking
    // rank's wait fails naming it; the owner goes on.
    const std::string handle = fmt::format("(rank {}, slot {}, gen {})", me_, slot, gen);
    count_sent(&sent_counts::notifications, 1);
    send_notify(from, slot, gen,
                {poison_wire{gen, me_,
                             fmt::format("rank {} has no event {}: the handle was not made by Rill in this run (built "
                                         "from bits, or kept from another run)",
                                         me_, handle),
                             "event::wait"}});
    return;
  }
  std::uint64_t through;
  std::vector<poison_wire> wire;
  {
    std::lock_guard g(s->m);
    if (s->pinned && gen >= s->gen) {
      // Kept until `gen` triggers, with the latest generation this rank asked for.
      auto& subscribed = s->more().pinned_subscribers;
      auto it = std::find_if(subscribed.begin(), subscribed.end(), [from](const auto& p) { return p.first == from; });
      if (it != subscribed.end()) {
        it->second = std::max(it->second, gen);  // notified at every trigger since it subscribed
        return;
      }
      subscribed.emplace_back(from, gen);
      // The rank may have waiters for generations that triggered before this subscription
      // arrived (covered by it, as they are earlier): tell it what has triggered so far.
      if (s->gen == 1) return;
      through = s->gen - 1;
      // The rank hears of every poisoned phase so far (its waiters may be for any of them).
      for (poisoned_gen& p : s->more().poisoned) p.observed = true;
      wire = to_wire(s->poisoned());
    } else {
      if (gen > s->gen) throw decode_error(fmt::format("subscription from rank {} to a future generation", from));
      if (gen == s->gen && !s->triggered) {
        s->add_subscriber(from);
        return;
      }
      // Already triggered (the subscription crossed the trigger): answer at once.
      through = s->triggered ? s->gen : s->gen - 1;
      s->observe_poison(gen);
      wire = to_wire(s->poisoned());
    }
  }
  count_sent(&sent_counts::notifications, 1);
  send_notify(from, slot, through, wire);
}

void event_table::refuse_unknown_trigger(int from, std::uint32_t slot, std::uint64_t gen) {
  const std::string what = fmt::format(
      "rank {} triggered {}, which rank {} never created (a handle built from bits, "
      "or kept from another run): the trigger was dropped",
      from, event_name(event::from_parts(static_cast<std::uint32_t>(me_), slot, gen)), me_);
  log().error("rank {}: {}", me_, what);
  std::lock_guard g(unknown_triggers_m_);
  unknown_triggers_.push_back(what);
}

std::vector<std::string> event_table::unknown_triggers() {
  std::lock_guard g(unknown_triggers_m_);
  return unknown_triggers_;
}

void event_table::on_remote_trigger(int from, std::uint32_t slot, std::uint64_t gen, poison_ptr cause, bool notify_from,
                                    bool seen) {
  trigger_owned(slot, gen, std::move(cause), from, notify_from, seen);
}

bool event_table::observe_local_cause(remote_slot& rec) {
  if (!rec.local_cause || rec.local_seen) return false;
  rec.local_seen = true;
  return true;
}

void event_table::on_observed(int from, std::uint32_t slot, std::uint64_t gen) {
  owned_slot* s = find_slot(slot);
  if (!s)
    throw decode_error(
        fmt::format("rank {} observed an error of slot {}, which rank {} never created", from, slot, me_));
  std::lock_guard g(s->m);
  // (Messages may be reordered: the trigger this observation follows may not be here yet.)
  if (!s->observe_poison(gen) && gen == s->gen && !s->triggered) s->more().observed_before_trigger = gen;
}

void event_table::on_notify(int owner, std::uint32_t slot, std::uint64_t through,
                            const std::vector<poison_wire>& poisoned) {
  trace_.note_progress();
  const std::uint64_t key = remote_key(owner, slot);
  event_waiter* ready = nullptr;
  {
    shard& sh = shard_of(key);
    std::lock_guard g(sh.m);
    remote_slot& rec = remote_.at(owner, slot);
    for (const auto& p : poisoned) {
      if (!find_poison(rec.poisoned, p.gen)) rec.poisoned.push_back({p.gen, from_wire(p)});
    }
    rec.known = std::max(rec.known, through);
    // Every generation up to `through` has triggered, and the owner sent all the poisoned ones.
    event_waiter** link = &rec.waiters;
    while (event_waiter* w = *link) {
      if (w->gen <= rec.known) {
        *link = w->next;
        w->cause = find_poison(rec.poisoned, w->gen);
        w->next = ready;
        ready = w;
      } else {
        link = &w->next;
      }
    }
  }
  // The tasks these waiters release end the arrows of the owner's trigger.
  trace::releasing released_by(trace::enabled() ? trace::event_flow(trace::event_id(owner, slot, through)) : 0);
  fire_waiters(ready);
}

void event_table::count_sent(std::atomic<std::uint64_t> sent_counts::*which, std::uint64_t n) {
  const worker* w = current_worker();
  const std::size_t others = sent_.size() - 1;
  const std::size_t i = w ? static_cast<std::size_t>(w->index()) : others;
  std::atomic<std::uint64_t>& c = sent_[std::min(i, others)].*which;
  if (i < others)
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);  // this worker's own line
  else
    c.fetch_add(n, std::memory_order_relaxed);
}

event_counts event_table::counts() {
  event_counts c;
  c.slots = slot_count_.load(std::memory_order_relaxed);
  c.created = created_.load(std::memory_order_relaxed);
  c.untriggered = untriggered_.load(std::memory_order_relaxed);
  c.peak_untriggered = peak_untriggered_.load(std::memory_order_relaxed);
  c.retired_slots = retired_.load(std::memory_order_relaxed);
  for (const sent_counts& s : sent_) {
    c.subscriptions_sent += s.subscriptions.load(std::memory_order_relaxed);
    c.notifications_sent += s.notifications.load(std::memory_order_relaxed);
    c.triggers_sent += s.triggers.load(std::memory_order_relaxed);
  }
  c.remote_slots = remote_.size();
  return c;
}

}  // namespace rill::detail
