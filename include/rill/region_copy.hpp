// Copies between logical regions (Legion's copy operation): the fields of one region's points
// into another's, in program order with the launches (rill/launch.hpp), as a launch reading the
// source and writing the destination would be ordered -- but no task runs: the runtime moves the
// data, on a data-movement channel or, for an attached resource, an I/O thread.
//
//   rill::copy(rill::req(grid, {now.id}, rill::privilege::read_only),
//              rill::req(snapshot, {saved.id}, rill::privilege::write_discard));
//
// Into points attached to a resource (rill/attach.hpp) and not acquired, the copy writes the
// resource itself, from the source's instance: a snapshot copied into an attached file costs no
// worker time and no copy in memory. Acquired, it writes a copy in memory, as a launch would.
#pragma once

#include "rill/event.hpp"
#include "rill/launch.hpp"

namespace rill {

// Copies src.fields[k] into dst.fields[k] (fields of the same size, paired in order) at every
// point of dst's region, which src's region must hold, once `after` and the earlier launches it
// conflicts with have ended; returns its event at once. src is read_only; dst write_discard,
// read_write, or a reduction (rill::reduce_with<Op>(): src's values, Op's right-hand sides, folded
// in by Op; reduction copies and launches by the same operator commute). In a launched task it is
// one of the task's sub-launches (rill/launch.hpp): on points and fields the task has (the source
// under any of its privileges but a reduction, the destination under a writable one or, for a
// reduction copy, a reduction by the same operator), and what it writes is in the task's regions
// when the task ends.
event copy(const requirement& src, const requirement& dst, event after = event::none());
// The same for every color of `over`: a requirement on a partition names its subregion of that
// color. Returns the event of all of them.
event index_copy(partition over, const requirement& src, const requirement& dst, event after = event::none());

}  // namespace rill
