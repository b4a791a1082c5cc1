// Errors nobody observed: a poisoned event that no waiter, query or subscribed rank ever saw (a
// proc::spawn task that threw with nobody waiting on it, a dropped rpc future). Such an error would
// otherwise vanish; the end of the run reports it (--rill:unobserved-errors, docs/debugging.md).
//
// Observing is passing on: a task or merge waiting on a poisoned event poisons its own event, so
// an error that travels down a chain is reported once, at the end of the chain nobody looked at.
#include "events/unobserved_errors.hpp"

#include <fmt/format.h>

#include <set>
#include <string>
#include <tuple>

#include "common/log.hpp"
#include "rill/error.hpp"

namespace rill::detail {

std::vector<event_table::unobserved_error> event_table::unobserved_errors() {
  std::vector<unobserved_error> out;
  const std::uint32_t n = slot_count_.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < n; ++i) {
    owned_slot& s = slot_at(i);
    std::lock_guard g(s.m);
    for (const poisoned_gen& p : s.poisoned()) {
      if (p.observed) continue;
      const bool op_known = !s.pinned && s.op_gen.load(std::memory_order_acquire) == p.gen;
      out.push_back(
          {event::from_parts(static_cast<std::uint32_t>(me_), i, p.gen), p.cause,
           op_known ? describe_op(s.op.load(std::memory_order_relaxed), s.op_arg.load(std::memory_order_relaxed), me_)
                    : std::string()});
    }
  }
  return out;
}

int report_unobserved_errors(event_table& table, int rank, rill::unobserved_policy policy, int exit_code) {
  if (policy == rill::unobserved_policy::ignore) return exit_code;
  const std::vector<event_table::unobserved_error> errors = table.unobserved_errors();
  if (errors.empty()) return exit_code;
  // One line per distinct error: a cause passed down a chain of events it poisoned is one error.
  std::set<std::tuple<int, std::string, std::string>> seen;
  std::string lines;
  std::size_t shown = 0;
  constexpr std::size_t most_shown = 10;
  for (const auto& u : errors) {
    if (!seen.emplace(u.cause->rank, u.cause->reason, u.cause->operation).second) continue;
    if (++shown > most_shown) continue;
    lines += fmt::format("\n  event {}{}: {} (on rank {}{})", event_name(u.e),
                         u.created_by.empty() ? "" : ", the " + u.created_by, u.cause->reason, u.cause->rank,
                         u.cause->operation.empty() ? "" : ", in " + u.cause->operation);
  }
  if (shown > most_shown) lines += fmt::format("\n  ... and {} more", shown - most_shown);
  const bool fatal_now = policy == rill::unobserved_policy::fatal;
  log().error(
      "rank {}: {} error(s) nobody observed -- poisoned events that no wait, query or dependent operation saw:{}\n"
      "  Wait on these events (or make something depend on them){}",
      rank, seen.size(), lines,
      fatal_now ? "; the run exits 3 (--rill:unobserved-errors=warn reports them and keeps the exit code)"
                : " (--rill:unobserved-errors=warn: the exit code is unchanged)");
  return fatal_now && exit_code == 0 ? rill::exit_fatal : exit_code;
}

int report_unknown_triggers(event_table& table, int rank, int exit_code) {
  const std::vector<std::string> triggers = table.unknown_triggers();
  if (triggers.empty()) return exit_code;
  std::string lines;
  for (const std::string& t : triggers) lines += "\n  " + t;
  log().error("rank {}: {} trigger(s) of events this rank never created were dropped:{}\n  The run exits 3.", rank,
              triggers.size(), lines);
  return exit_code == 0 ? rill::exit_fatal : exit_code;
}

}  // namespace rill::detail
