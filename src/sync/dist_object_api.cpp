// rill/dist_object.hpp's non-template half: the calling rank's dist_object table.
#include "rill/dist_object.hpp"

#include "sync/sync_module.hpp"

namespace rill::detail {

std::uint64_t dist_object_add(void* object, const std::type_info& type) {
  return sync_here("rill::dist_object").dist_objects().add(object, type);
}

void dist_object_remove(std::uint64_t number) { sync_here("rill::~dist_object").dist_objects().remove(number); }

void* dist_object_find(std::uint64_t number, const std::type_info& type) {
  dist_object_table& table = sync_here("rill::dist_id::here").dist_objects();
  for (;;) {
    const dist_object_table::found f = table.find(number, type);
    if (f.object != nullptr) return f.object;
    f.constructed.wait();
  }
}

}  // namespace rill::detail
