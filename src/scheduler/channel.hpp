// Work for the calling rank's data-movement channels (--rill:channels, worker_pool.hpp): what moves
// data (copies, fills, reductions) runs there, not on a worker, so that it neither waits behind the
// workers' tasks nor keeps a worker from them. Without channels, it runs on the calling worker.
#pragma once

#include "rill/detail/task_record.hpp"

namespace rill::detail {

// Queues `t` for a channel of the calling worker's rank. Call from a worker or channel.
void channel_submit(task_record* t);

// Queues `t` for an I/O thread of the calling worker's rank (--rill:io-threads): work that may
// block in the kernel -- external I/O -- and so never runs on a worker or a channel.
void io_submit(task_record* t);

}  // namespace rill::detail
