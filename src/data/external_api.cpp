// The non-template half of rill/external.hpp: attaching a resource as an instance (opened and
// checked on an I/O thread of its rank), and the rank's I/O counts.
#include <fmt/format.h>

#include "data/data_module.hpp"
#include "data/started_at.hpp"
#include "rill/copy.hpp"
#include "rill/error.hpp"
#include "rill/external.hpp"

namespace rill {
namespace detail {

struct instance_maker {
  static instance make(memory m, int dims, std::uint64_t id) { return instance(m, dims, id); }
};

// Opaque fields go with opaque_resource only, and it with one of them, in its holder's memory.
void check_opaque_fields(const field_space& fields, const external_resource& r, memory m, const char* what) {
  const auto* objects = std::get_if<opaque_resource>(&r);
  if (!objects) {
    for (const field_info& f : fields.fields())
      if (f.opaque)
        throw misuse_error(fmt::format(
            "{}: field {} holds opaque objects, which a file, an HDF5 file or a database cannot hold; attach "
            "objects with rill::opaque_resource",
            what, f.id));
    return;
  }
  if (fields.fields().size() != 1 || fields.fields()[0].opaque != objects->serialization)
    throw misuse_error(fmt::format(
        "{}: opaque objects are attached with one field, an opaque_field of their type and serialization; the "
        "field space has {} field(s){}",
        what, fields.fields().size(), fields.fields().size() == 1 ? " of another kind" : ""));
  if (m.owner() != rank_me())
    throw misuse_error(
        fmt::format("{}: opaque objects are attached in the external memory of the rank that holds them (rank {}), not "
                    "rank {}",
                    what, rank_me(), m.owner()));
}

created_instance attach_padded(memory m, int dims, const index_space<3>& space, const rect<3>& bounds,
                               const field_space& fields, const external_resource& r, const layout& l, event after) {
  constexpr const char* what = "rill::attach_instance";
  data_module& here = data_here(what);
  if (m.kind() != memory_kind::external || m.owner() < 0 || m.owner() >= rank_n())
    throw misuse_error(
        fmt::format("{}: resources are attached in a rank's external memory "
                    "(rill::memory::external(rank), rank < {})",
                    what, rank_n()));
  if (fields.fields().empty()) throw misuse_error(fmt::format("{}: the field space has no fields", what));
  if (!bounds.contains(space.bounds()))
    throw misuse_error(fmt::format("{}: the instance's points lie outside the bounds of the resource's layout", what));
  (void)lay_out(dims, bounds, fields, l);  // a layout that does not fit is said here
  check_opaque_fields(fields, r, m, what);
  const instance inst = instance_maker::make(m, dims, here.next_instance_id());
  const event ready = io_started_at(
      m.owner(), after,
      [](instance i, const index_space<3>& s, const rect<3>& b, const field_space& f, const layout& lay,
         const external_resource& res, event done) {
        data_module& at = data_here("rill::attach_instance");
        instance_layout placement = lay_out(i.dimensions(), b, f, lay);
        std::shared_ptr<external_store> store = std::visit(
            [&](const auto& kind) -> std::shared_ptr<external_store> {
              using kind_t = std::decay_t<decltype(kind)>;
              if constexpr (std::is_same_v<kind_t, file_resource>)
                return open_file_store(kind, placement, b, at.io(), at.direct_io_bytes());
              else if constexpr (std::is_same_v<kind_t, hdf5_resource>)
                return open_hdf5_store(kind, placement, b, i.dimensions(), at.io());
              else if constexpr (std::is_same_v<kind_t, sqlite_resource>)
                return open_sqlite_store(kind, placement, b, i.dimensions(), at.io());
              else
                return open_opaque_store(kind, placement, b, i.dimensions(), at.io());
            },
            res);
        at.attach(i, s, f, std::move(placement), std::move(store));
        event_trigger(done);
      },
      inst, space, bounds, fields, l, r);
  return {inst, ready};
}

event external_snapshot(instance ext, std::uint64_t slot, event after) {
  return io_started_at(
      ext.owner(), after,
      [](instance e, std::uint64_t s, event done) {
        data_here("rill::attach").find_any(e, "rill::attach")->external->snapshot(s);
        event_trigger(done);
      },
      ext, slot);
}

event external_refresh(instance ext, instance dst, std::vector<field_id> fields, const index_space<3>& over, int dims,
                       std::uint64_t slot, event after) {
  return io_started_at(
      ext.owner(), after,
      [](instance e, instance d, const std::vector<field_id>& f, const index_space<3>& o, int n, std::uint64_t s,
         event done) {
        external_store& store = *data_here("rill::acquire").find_any(e, "rill::acquire")->external;
        if (store.tracks_changes() && store.unchanged_since(s)) {
          event_trigger(done);
          return;
        }
        const event copied = transfer_padded(e, f, d, f, &o, n, {}, event::none(), "rill::copy");
        when_triggered(copied, [done](const poison_ptr& p) {
          if (p)
            event_poison(done, p);
          else
            event_trigger(done);
        });
      },
      ext, dst, std::move(fields), over, dims, slot);
}

event external_unchanged(instance ext, std::uint64_t slot, event after, const char* what) {
  return io_started_at(
      ext.owner(), after,
      [](instance e, std::uint64_t s, const std::string& op, event done) {
        const auto rec = data_here("rill::release").find_any(e, "rill::release");
        if (rec->external->tracks_changes() && !rec->external->unchanged_since(s))
          throw misuse_error(
              fmt::format("{}: {} changed outside the runtime while it was acquired (another "
                          "program wrote it); its updates were not written over it",
                          op, rec->external->name()));
        event_trigger(done);
      },
      ext, slot, std::string(what));
}

event external_close(instance ext, event after) {
  return io_started_at(
      ext.owner(), after,
      [](instance e, event done) {
        data_module& here = data_here("rill::detach");
        if (here.has(e)) here.destroy(e)->external->close();
        event_trigger(done);
      },
      ext);
}

}  // namespace detail

io_counts io_counts_here() {
  const detail::io_counters& c = detail::data_here("rill::io_counts_here").io();
  const auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {get(c.attached),      get(c.reads),        get(c.writes),    get(c.bytes_read),
          get(c.bytes_written), get(c.syncs),        get(c.scheduled), get(c.seeks_back),
          get(c.most_running),  get(c.bytes_direct), get(c.fused)};
}

}  // namespace rill
