// Phase barriers: the owner's table and the messages that reach it (arrivals, result requests).
#include "sync/barrier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "common/log.hpp"
#include "events/event_table.hpp"
#include "rill/am.hpp"
#include "rill/error.hpp"
#include "sync/sync_module.hpp"

namespace rill::detail {

namespace {

std::string describe(event phase) {
  return fmt::format("barrier (rank {}, id {}) phase {}", phase.owner(), phase.slot(), phase.generation());
}

poison_ptr make_cause(std::int32_t rank, std::string reason, std::string operation) {
  if (rank < 0) return nullptr;
  return std::make_shared<const poison_info>(poison_info{std::move(reason), rank, std::move(operation)});
}

// ---- messages -----------------------------------------------------------------------------------

void on_arrival_message(std::uint32_t slot, std::uint64_t gen, std::uint32_t count, std::uint64_t type,
                        const std::vector<std::byte>& value, poison_ptr cause) {
  sync_module& r = sync_here("a barrier message");
  // A misuse here cannot reach the arriving task: it throws, and the dispatcher stops the program
  // with the message (naming both ranks).
  r.barriers().arrive(event::from_parts(static_cast<std::uint32_t>(r.id()), slot, gen), count, type, value.data(),
                      value.size(), std::move(cause), am::sender(), true);
}

void send_arrival(event phase, std::uint32_t count, std::uint64_t type, const std::byte* value, std::size_t size,
                  const poison_ptr& cause) {
  if (size == 0 && !cause) {
    am::send(
        phase.owner(),
        [](std::uint32_t s, std::uint64_t g, std::uint32_t c) { on_arrival_message(s, g, c, 0, {}, nullptr); },
        phase.slot(), phase.generation(), count);
    return;
  }
  std::vector<std::byte> bytes(value, value + size);
  const std::int32_t cause_rank = cause ? cause->rank : -1;
  am::send(
      phase.owner(),
      [](std::uint32_t s, std::uint64_t g, std::uint32_t c, std::uint64_t t, const std::vector<std::byte>& v,
         std::int32_t cr, std::string reason,
         std::string op) { on_arrival_message(s, g, c, t, v, make_cause(cr, std::move(reason), std::move(op))); },
      phase.slot(), phase.generation(), count, type, bytes, cause_rank, cause ? cause->reason : std::string(),
      cause ? cause->operation : std::string());
}

// An arrival made on this rank, now that its precondition has triggered (cause: poisoned).
void arrive_now(event phase, std::uint32_t count, std::uint64_t type, const std::byte* value, std::size_t size,
                const poison_ptr& cause, bool caller_can_catch) {
  sync_module& r = sync_here("rill::barrier::arrive");
  if (phase.owner() == r.id())
    r.barriers().arrive(phase, count, type, value, size, cause, r.id(), caller_can_catch);
  else
    send_arrival(phase, count, type, value, size, cause);
}

void check_barrier(event phase, const char* what) {
  sync_module& r = sync_here(what);
  if (phase.is_none()) throw misuse_error(fmt::format("{}: no barrier (a default-constructed handle)", what));
  if (phase.owner() < 0 || phase.owner() >= r.size()) {
    throw misuse_error(
        fmt::format("{}: the barrier's owner rank {} does not exist (ranks 0..{})", what, phase.owner(), r.size() - 1));
  }
}

}  // namespace

// ---- the owner's table --------------------------------------------------------------------------

event barrier_table::create(std::uint32_t expected, barrier_redop redop) {
  if (expected == 0) throw misuse_error("rill::barrier::create: a barrier needs at least one expected arrival");
  const event first = events_.create_pinned();
  auto st = std::make_unique<state>();
  st->expected = expected;
  st->first_gen = first.generation();
  st->next_gen = first.generation();
  st->redop = std::move(redop);
  std::lock_guard g(m_);
  barriers_[first.slot()] = std::move(st);
  return first;
}

barrier_table::state* barrier_table::find(event phase) {
  std::lock_guard g(m_);
  auto it = barriers_.find(phase.slot());
  return it == barriers_.end() ? nullptr : it->second.get();
}

void barrier_table::arrive(event phase, std::uint32_t count, std::uint64_t type, const std::byte* value,
                           std::size_t size, poison_ptr cause, int from, bool caller_can_catch) {
  std::string error;
  state* st = find(phase);
  bool drain_here = false;
  if (!st) {
    error = fmt::format("rill::barrier::arrive: rank {} arrived at {}, which rank {} never created", from,
                        describe(phase), me_);
  } else {
    std::lock_guard g(st->m);
    const std::uint64_t gen = phase.generation();
    auto it = st->phases.find(gen);
    if (gen < st->first_gen) {
      error = fmt::format("rill::barrier::arrive: rank {} arrived at {}, which precedes the barrier's creation", from,
                          describe(phase));
    } else if (it == st->phases.end() && gen < st->next_gen) {
      error = fmt::format(
          "rill::barrier::arrive: too many arrivals at {}: rank {} arrived ({} more) after all {} expected arrivals "
          "had come",
          describe(phase), from, count, st->expected);
    } else if (size != 0 && st->redop.size == 0) {
      error = fmt::format("rill::barrier::arrive: rank {} arrived at {} with a value, but the barrier reduces nothing",
                          from, describe(phase));
    } else if (size != 0 && (type != st->redop.type || size != st->redop.size)) {
      error = fmt::format(
          "rill::barrier::arrive: rank {} arrived at {} with a value of another type ({} bytes) than the barrier "
          "reduces ({}, {} bytes)",
          from, describe(phase), size, st->redop.type_name, st->redop.size);
    } else {
      if (it == st->phases.end()) {
        phase_record rec;
        rec.remaining = st->expected;
        rec.acc = st->redop.init;
        it = st->phases.emplace(gen, std::move(rec)).first;
      }
      phase_record& rec = it->second;
      if (count > rec.remaining) {
        error = fmt::format(
            "rill::barrier::arrive: too many arrivals at {}: rank {} arrived {} time(s) where {} of the {} expected "
            "remained",
            describe(phase), from, count, rec.remaining, st->expected);
        if (rec.remaining == st->expected && !rec.triggered && !rec.cause) st->phases.erase(it);  // nothing arrived
      } else {
        if (size != 0) st->redop.fold(rec.acc.data(), value);
        if (cause && !rec.cause) rec.cause = std::move(cause);
        rec.remaining -= count;
        if (rec.remaining == 0 && rec.triggered) st->phases.erase(it);  // poisoned early, now complete
        decide_locked(*st);
        if (!st->to_trigger.empty() && !st->triggering) {
          st->triggering = true;
          drain_here = true;
        }
      }
    }
  }
  if (!error.empty()) {
    if (caller_can_catch) throw misuse_error(error);
    fatal("{}", error);
  }
  if (drain_here) drain(*st, phase.slot());
}

void barrier_table::decide_locked(state& st) {
  for (;;) {
    auto it = st.phases.find(st.next_gen);
    if (it == st.phases.end()) return;
    phase_record& rec = it->second;
    if (rec.remaining != 0 && !rec.cause) return;
    // The phase triggers: complete, or poisoned (at once, as merges are).
    if (!rec.cause && st.redop.size != 0) {
      st.results.emplace_back(st.next_gen, rec.acc);
      if (st.results.size() > barrier::kept_results) st.results.pop_front();
    }
    st.to_trigger.push_back({st.next_gen, rec.cause});
    if (rec.remaining == 0)
      st.phases.erase(it);
    else
      rec.triggered = true;
    ++st.next_gen;
  }
}

void barrier_table::drain(state& st, std::uint32_t slot) {
  // Triggers run waiters, which may arrive at this barrier again: those arrivals only queue their
  // phases, and this loop triggers them, in order.
  std::exception_ptr first;
  for (;;) {
    pending_trigger t;
    {
      std::lock_guard g(st.m);
      if (st.to_trigger.empty()) {
        st.triggering = false;
        break;
      }
      t = std::move(st.to_trigger.front());
      st.to_trigger.pop_front();
    }
    try {
      events_.trigger(event::from_parts(static_cast<std::uint32_t>(me_), slot, t.gen), std::move(t.cause));
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::string barrier_table::result(event phase, std::uint64_t type, std::size_t size, std::vector<std::byte>& out) {
  state* st = find(phase);
  if (!st) return fmt::format("{} does not exist", describe(phase));
  std::lock_guard g(st->m);
  if (st->redop.size == 0) return fmt::format("{} reduces nothing: it has no result", describe(phase));
  if (type != st->redop.type || size != st->redop.size) {
    return fmt::format("the result of {} is a {} ({} bytes), asked for as another type ({} bytes)", describe(phase),
                       st->redop.type_name, st->redop.size, size);
  }
  for (const auto& [gen, bytes] : st->results) {
    if (gen == phase.generation()) {
      out = bytes;
      return {};
    }
  }
  return fmt::format("the result of {} is no longer kept (the owner keeps the latest {} phases' results)",
                     describe(phase), barrier::kept_results);
}

// ---- the public API's non-template halves -------------------------------------------------------

event barrier_create(std::uint32_t expected, barrier_redop redop) {
  return sync_here("rill::barrier::create").barriers().create(expected, std::move(redop));
}

void barrier_arrive(event phase, std::uint32_t count, event after, std::uint64_t type, const void* value,
                    std::size_t size) {
  check_barrier(phase, "rill::barrier::arrive");
  if (count == 0) throw misuse_error(fmt::format("rill::barrier::arrive: zero arrivals at {}", describe(phase)));
  const auto* bytes = static_cast<const std::byte*>(value);
  if (!after.is_none()) {
    const event_status s = sync_here("rill::barrier::arrive").events().query(after);
    if (!(s.triggered && s.known)) {
      // Deferred: the arrival is made (or poisons the phase) once `after` triggers, on this rank.
      when_triggered(after,
                     [phase, count, type, v = std::vector<std::byte>(bytes, bytes + size)](const poison_ptr& cause) {
                       arrive_now(phase, count, type, v.data(), v.size(), cause, false);
                     });
      return;
    }
    arrive_now(phase, count, type, bytes, size, s.cause, true);
    return;
  }
  arrive_now(phase, count, type, bytes, size, nullptr, true);
}

event barrier_get_result(event phase, std::uint64_t type, void* out, std::size_t size) {
  check_barrier(phase, "rill::barrier::get_result");
  const event done = event_create();
  when_triggered(phase, [phase, type, out, size, done](const poison_ptr& cause) {
    if (cause) {
      event_poison(done, cause);
      return;
    }
    sync_module& r = sync_here("rill::barrier::get_result");
    if (phase.owner() == r.id()) {
      std::vector<std::byte> bytes;
      std::string why = r.barriers().result(phase, type, size, bytes);
      if (!why.empty()) {
        event_poison(done, std::make_shared<const poison_info>(poison_info{why, r.id(), "barrier::get_result"}));
        return;
      }
      std::memcpy(out, bytes.data(), size);
      event_trigger(done);
      return;
    }
    // Ask the owner; the reply writes *out here and triggers `done` (owned here).
    am::send(
        phase.owner(),
        [](event ph, std::uint64_t t, std::uint64_t sz, event d, void* o) {
          sync_module& owner = sync_here("a barrier message");
          std::vector<std::byte> bytes;
          std::string why = owner.barriers().result(ph, t, static_cast<std::size_t>(sz), bytes);
          am::send(
              am::sender(),
              [](event d2, void* o2, const std::vector<std::byte>& b, std::string w, std::int32_t from) {
                if (!w.empty()) {
                  event_poison(d2, std::make_shared<const poison_info>(poison_info{w, from, "barrier::get_result"}));
                  return;
                }
                std::memcpy(o2, b.data(), b.size());
                event_trigger(d2);
              },
              d, o, bytes, why, static_cast<std::int32_t>(owner.id()));
        },
        phase, type, static_cast<std::uint64_t>(size), done, out);
  });
  return done;
}

}  // namespace rill::detail
