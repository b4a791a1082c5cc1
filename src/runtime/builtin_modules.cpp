#include "runtime/builtin_modules.hpp"

#include "core/delivery_audit.hpp"
#include "data/data_module.hpp"
#include "events/events_module.hpp"
#include "global/global_module.hpp"
#include "machine/machine_module.hpp"
#include "regions/launch_analysis.hpp"
#include "regions/region_forest.hpp"
#include "runtime/termination.hpp"
#include "steal/remote_steal.hpp"
#include "sync/sync_module.hpp"

namespace rill::detail {

void add_builtin_modules(rank_core& core, const rill::config& cfg, std::shared_ptr<const rill::machine> machine) {
  module_table& m = core.modules();
  delivery_audit& audit = m.add<delivery_audit>(core.msgr(), cfg);
  events_module& events = m.add<events_module>(core.id(), core.size(), cfg, audit);
  m.add<sync_module>(core.id(), core.size(), core.pool(), events);
  global_module& global = m.add<global_module>(core.id(), core.size(), cfg);
  const rill::machine& model = m.add<machine_module>(std::move(machine)).model();
  m.add<remote_steal>(core, model, cfg);
  m.add<data_module>(core.id(), model, global, cfg);
  m.add<region_forest>(core.id());
  m.add<launch_analysis>(cfg);
  m.add<termination>(core, audit, cfg.tree_fanout);
  core.modules_ready();
}

}  // namespace rill::detail
