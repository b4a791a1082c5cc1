// The end-of-run report of errors nobody observed (unobserved_errors.cpp).
#pragma once

#include "events/event_table.hpp"
#include "rill/config.hpp"

namespace rill::detail {

// Reports the poisoned events owned by `rank` that nobody observed, as `policy` says, and returns
// the run's exit code: exit_fatal under policy fatal when there are any and `exit_code` was 0,
// else `exit_code`. Call when the rank's workers have stopped.
int report_unobserved_errors(event_table& table, int rank, rill::unobserved_policy policy, int exit_code);

}  // namespace rill::detail
