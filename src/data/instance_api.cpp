// The non-template half of rill/instance.hpp: deferred creation and destruction on the instance's
// rank, and accessors' lookup of a field.
#include <fmt/format.h>

#include "data/data_module.hpp"
#include "data/started_at.hpp"
#include "rill/instance.hpp"
#include "rill/proc.hpp"

namespace rill {

created_instance instance::create_padded(memory m, int dims, const index_space<3>& space, const field_space& fields,
                                         const layout& l, event after) {
  detail::data_module& here = detail::data_here("rill::instance::create");
  if (!m.exists() || m.owner() < 0 || m.owner() >= rank_n())
    throw misuse_error(fmt::format("rill::instance::create: no such memory (rank {} of {})", m.owner(), rank_n()));
  if (m.kind() == memory_kind::external)
    throw misuse_error(
        fmt::format("rill::instance::create: the external memory of rank {} holds attached resources "
                    "only (rill::attach_instance)",
                    m.owner()));
  if (fields.fields().empty()) throw misuse_error("rill::instance::create: the field space has no fields");
  // A layout that does not fit the fields is the caller's mistake: said here, not through the event.
  (void)detail::lay_out(dims, space.bounds(), fields, l);
  const instance inst(m, dims, here.next_instance_id());
  const event ready = proc(m.owner()).spawn(
      rill::after(after),
      [](instance i, const index_space<3>& s, const field_space& f, const layout& lay) {
        detail::data_here("rill::instance::create").create(i, s, f, lay);
      },
      inst, space, fields, l);
  return {inst, ready};
}

event instance::destroy(event after) const {
  if (!exists()) throw misuse_error("rill::instance::destroy: no instance (a default-constructed handle)");
  // An attached resource is synced and closed (or renamed into place) on an I/O thread; its
  // event is poisoned when what was written may not be durable.
  if (location().kind() == memory_kind::external)
    return detail::io_started_at(
        owner(), after,
        [](instance i, event done) {
          const auto rec = detail::data_here("rill::instance::destroy").destroy(i);
          rec->external->close();
          detail::event_trigger(done);
        },
        *this);
  return proc(owner()).spawn(
      rill::after(after), [](instance i) { detail::data_here("rill::instance::destroy").destroy(i); }, *this);
}

namespace detail {

field_address locate_field(instance inst, field_id f, int dims, std::size_t bytes, const char* what) {
  if (!inst.exists()) throw misuse_error(fmt::format("{}: no instance (a default-constructed handle)", what));
  const std::shared_ptr<const instance_record> rec = data_here(what).find(inst, what);
  if (inst.dimensions() != dims)
    throw misuse_error(fmt::format("{}: instance {:#x} has {} dimension(s), the accessor {}", what, inst.id(),
                                   inst.dimensions(), dims));
  const field_placement* p = rec->placement.find(f);
  if (!p) throw misuse_error(fmt::format("{}: instance {:#x} has no field {}", what, inst.id(), f));
  if (p->bytes != bytes)
    throw misuse_error(fmt::format("{}: field {} of instance {:#x} has {} bytes, the accessor's type {}", what, f,
                                   inst.id(), p->bytes, bytes));
  return {rec->data + p->offset, p->strides, rec->space.bounds()};
}

void accessor_out_of_bounds(const point<3>& p, int dims, const rect<3>& bounds) {
  const auto show = [dims](const point<3>& q) {
    std::string s = "(";
    for (int d = 0; d < dims; ++d) s += fmt::format("{}{}", d ? ", " : "", q[d]);
    return s + ")";
  };
  throw misuse_error(fmt::format("rill::accessor: point {} is outside the instance's bounds {} .. {}", show(p),
                                 show(bounds.lo), show(bounds.hi)));
}

}  // namespace detail
}  // namespace rill
