// The layers a rank runs, in the order they are added to its core: each layer's module after the
// modules of the layers it uses (Realm keeps such a list of its builtin modules too). A new layer
// adds one line here and nothing elsewhere.
#pragma once

#include <memory>

#include "core/rank_core.hpp"
#include "rill/config.hpp"
#include "rill/machine.hpp"

namespace rill::detail {

void add_builtin_modules(rank_core& core, const rill::config& cfg, std::shared_ptr<const rill::machine> machine);

}  // namespace rill::detail
