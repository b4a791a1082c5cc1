// rill::rank_me, rank_n, workers_here and stats: questions about the calling rank.
#include "core/rank_core.hpp"
#include "rill/rank.hpp"

namespace rill {

int rank_me() { return detail::current_messenger("rill::rank_me").id(); }
int rank_n() { return detail::current_messenger("rill::rank_n").size(); }
int workers_here() { return detail::current_core("rill::workers_here").pool().size(); }
rank_stats stats() { return detail::current_core("rill::stats").stats(); }
std::vector<counter> counters() { return detail::current_core("rill::counters").counters(); }

}  // namespace rill
