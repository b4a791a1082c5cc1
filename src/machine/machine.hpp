// Building rill::machine at start-up (see include/rill/machine.hpp and docs/machine.md).
#pragma once

#include <memory>
#include <string>

#include "rill/machine.hpp"

namespace rill::detail {

class transport;

// This process's node as hwloc describes it, with the worker count of its ranks.
rank_description describe_this_process(int workers);
// Collective: every rank describes itself through the transport; the same model on every rank.
std::shared_ptr<const rill::machine> build_machine(transport& t, int workers, registered_memory_facts registered);

}  // namespace rill::detail
