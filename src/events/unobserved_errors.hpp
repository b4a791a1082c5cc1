// What the events layer reports at the end of a run (unobserved_errors.cpp): errors nobody
// observed, and triggers of events that were never created.
#pragma once

#include "events/event_table.hpp"
#include "rill/config.hpp"

namespace rill::detail {

// Reports the poisoned events owned by `rank` that nobody observed, as `policy` says, and returns
// the run's exit code: exit_fatal under policy fatal when there are any and `exit_code` was 0,
// else `exit_code`. Call when the rank's workers have stopped.
int report_unobserved_errors(event_table& table, int rank, rill::unobserved_policy policy, int exit_code);
// Repeats, once more, the triggers from other ranks of events `rank` never created (each dropped
// when it came) and returns exit_fatal if there were any and `exit_code` was 0, else `exit_code`.
int report_unknown_triggers(event_table& table, int rank, int exit_code);

}  // namespace rill::detail
