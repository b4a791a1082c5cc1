// Field spaces: a sorted list of (id, size), kept sorted so that two spaces with the same fields
// compare equal and a lookup is a binary search.
#include "rill/field_space.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "rill/error.hpp"
#include "rill/serialization.hpp"

namespace rill {

field_space& field_space::add(const field_info& f) {
  const field_id id = f.id;
  if (f.bytes == 0) throw misuse_error(fmt::format("rill::field_space::add: field {} has a size of 0 bytes", id));
  const auto at =
      std::lower_bound(fields_.begin(), fields_.end(), id, [](const field_info& f, field_id v) { return f.id < v; });
  if (at != fields_.end() && at->id == id)
    throw misuse_error(
        fmt::format("rill::field_space::add: field {} is already in the space ({} bytes)", id, at->bytes));
  fields_.insert(at, f);
  return *this;
}

const field_info* field_space::find(field_id id) const {
  const auto at =
      std::lower_bound(fields_.begin(), fields_.end(), id, [](const field_info& f, field_id v) { return f.id < v; });
  return at != fields_.end() && at->id == id ? &*at : nullptr;
}

std::size_t field_space::bytes_of(field_id id) const {
  if (const field_info* f = find(id)) return f->bytes;
  throw misuse_error(fmt::format("rill::field_space: no field {} in the space", id));
}

const field_info& field_space::info(field_id id) const {
  if (const field_info* f = find(id)) return *f;
  throw misuse_error(fmt::format("rill::field_space: no field {} in the space", id));
}

std::size_t field_space::bytes_per_point() const {
  std::size_t sum = 0;
  for (const field_info& f : fields_) sum += f.bytes;
  return sum;
}

void field_space::check_sent() const {
  for (std::size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].bytes == 0 || (i > 0 && fields_[i - 1].id >= fields_[i].id) ||
        (fields_[i].opaque != 0 && fields_[i].bytes != sizeof(void*)))
      throw decode_error("field space with a field of 0 bytes, fields out of order, or an opaque field not a pointer");
}

}  // namespace rill
