// External resources attached to logical regions (Iris §II-E, §II-F): the runtime, not the
// tasks, reads and writes the file, on its I/O threads, deferred like everything else.
//
//   rill::attach(grid, {temperature.id}, rill::file_resource{"t.bin", rill::io_mode::read_write});
//   rill::index_launch(smooth, strips, {rill::req(strips, {temperature.id}, rill::privilege::read_write)});
//   rill::acquire(grid);                 // from here, copies in memory may stand for the file
//   for (int s = 0; s < steps; ++s) rill::index_launch(smooth, strips, {...});   // no I/O
//   rill::release(grid);                 // what the steps wrote goes to the file
//   rill::detach(grid).wait();           // synced: the file holds it
//
// Or each strip attached on its own rank, to its part of one file of the whole grid:
//
//   rill::attach(strips.subregion(i), {temperature.id}, rill::file_resource{"t.bin", rill::io_mode::read_write},
//                rill::event::none(), {.rank = owner(i), .within = grid});
//
// Each call is issued in program order with the launches of the calling rank (the issuer of the
// tree's launches, outside launched tasks), returns at once, and returns an event. See
// docs/external.md.
#pragma once
#include <vector>

#include "rill/event.hpp"
#include "rill/external.hpp"
#include "rill/layout.hpp"
#include "rill/region.hpp"

namespace rill {

struct attach_options {
  int rank = -1;                        // whose I/O threads reach the resource (-1: the calling rank)
  rill::layout layout = layout::soa();  // of the fields in a file (rill/external.hpp)
  // The region whose points the resource holds, when the attached region is a part of it (none:
  // the attached region itself): the resource is laid out as for `within`, and the attached
  // points are read and written at their place in it. Parts of one region made of whole rows of
  // it (every dimension but the layout's slowest spanning it), with the same fields and layout,
  // may then be attached to one raw file at once, read_write or read_only, each on the rank that
  // computes on it: every rank reads and writes its own part of the file, none of it crossing
  // ranks (docs/external.md, "Parts of one file").
  region within{};
};

// Makes the resource the only valid instance of `fields` of region r's points: instances in
// memory that held them are no longer valid for them (their data is discarded), and no data
// moves until a launch needs it. r's fields must not be attached already in a region that shares
// points with it. Until acquired, r has simultaneous coherence with the resource: every launch
// that uses those points gets the resource's data before it runs (a refresh of a copy it had,
// which reads nothing when the resource has not changed), and a launch that writes them gives its
// data back to the resource once it has run, before any later operation on them. Returns the
// event of the resource being opened and checked (poisoned naming it and what is wrong).
event attach(region r, std::vector<field_id> fields, const external_resource& res, event after = event::none(),
             const attach_options& options = {});
// Once every earlier launch on r has ended: copies in memory may stand for the resource (no other
// program writes it meanwhile). Copies made before, of data the resource still holds unchanged,
// are valid again without a byte read. Returns the event of those copies being valid.
event acquire(region r, event after = event::none());
// Writes back what launches wrote since the acquire, once they have ended, and makes the resource
// the only valid instance again (release consistency): its event triggers when the resource
// holds every update, and is poisoned -- writing nothing -- if another program changed the
// resource while it was acquired.
event release(region r, event after = event::none());
// Ends the attachment once every launch on r has ended (releasing it first if acquired): its
// event triggers when the resource is closed and what was written is durable (synced; a
// write_discard file renamed into place). Afterwards r's data is what instances in memory hold
// of it; points that only the resource held have no valid data.
event detach(region r, event after = event::none());

}  // namespace rill
