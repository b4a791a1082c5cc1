// The non-template half of rill/external.hpp: attaching a resource as an instance (opened and
// checked on an I/O thread of its rank), and the rank's I/O counts.
#include <fmt/format.h>

#include "data/data_module.hpp"
#include "data/started_at.hpp"
#include "rill/error.hpp"
#include "rill/external.hpp"

namespace rill {
namespace detail {

struct instance_maker {
  static instance make(memory m, int dims, std::uint64_t id) { return instance(m, dims, id); }
};

created_instance attach_padded(memory m, int dims, const index_space<3>& space, const field_space& fields,
                               const external_resource& r, const layout& l, event after) {
  constexpr const char* what = "rill::attach_instance";
  data_module& here = data_here(what);
  if (m.kind() != memory_kind::external || m.owner() < 0 || m.owner() >= rank_n())
    throw misuse_error(
        fmt::format("{}: resources are attached in a rank's external memory "
                    "(rill::memory::external(rank), rank < {})",
                    what, rank_n()));
  if (fields.fields().empty()) throw misuse_error(fmt::format("{}: the field space has no fields", what));
  (void)lay_out(dims, space.bounds(), fields, l);  // a layout that does not fit is said here
  const instance inst = instance_maker::make(m, dims, here.next_instance_id());
  const event ready = io_started_at(
      m.owner(), after,
      [](instance i, const index_space<3>& s, const field_space& f, const layout& lay, const external_resource& res,
         event done) {
        data_module& at = data_here("rill::attach_instance");
        instance_layout placement = lay_out(i.dimensions(), s.bounds(), f, lay);
        std::shared_ptr<external_store> store = open_store(res, placement, s.bounds(), at.io());
        at.attach(i, s, f, std::move(placement), std::move(store));
        event_trigger(done);
      },
      inst, space, fields, l, r);
  return {inst, ready};
}

}  // namespace detail

io_counts io_counts_here() {
  const detail::io_counters& c = detail::data_here("rill::io_counts_here").io();
  const auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {get(c.attached), get(c.reads), get(c.writes), get(c.bytes_read), get(c.bytes_written), get(c.syncs)};
}

}  // namespace rill
