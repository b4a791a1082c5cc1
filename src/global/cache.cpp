// The non-template half of rill/cache.hpp.
#include "rill/cache.hpp"

#include "common/log.hpp"

namespace rill::detail {

void report_lost_write_back(const std::exception& e) {
  log().error("rill::cache: writing back a cache as it was destroyed failed, its updates are lost: {}", e.what());
}

}  // namespace rill::detail
