// Laying out an instance: fields into groups, groups into arrays one after another, points into
// each array in the layout's dimension order.
#include "data/instance_layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "rill/error.hpp"

namespace rill::detail {
namespace {

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// A field's alignment: the largest power of two dividing its size, up to 16.
std::size_t alignment_of(std::size_t bytes) {
  std::size_t a = 1;
  while (a < 16 && bytes % (a * 2) == 0) a *= 2;
  return a;
}

std::size_t checked_multiply(std::size_t a, std::size_t b) {
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b)
    throw misuse_error("rill::instance::create: the instance's bytes overflow a size_t");
  return a * b;
}

// The groups of fields stored together, each a list of ids in storage order.
std::vector<std::vector<field_id>> groups_of(const field_space& fields, const layout& l) {
  std::vector<std::vector<field_id>> groups;
  if (l.what() == layout::kind::aos) {
    groups.emplace_back();
    for (const field_info& f : fields.fields()) groups.back().push_back(f.id);
    return groups;
  }
  std::vector<field_id> placed;
  if (l.what() == layout::kind::grouped) {
    for (const auto& g : l.groups()) {
      for (field_id id : g) {
        if (!fields.has(id))
          throw misuse_error(
              fmt::format("rill::layout: group {} names field {}, which the field space does not have", g, id));
        if (std::find(placed.begin(), placed.end(), id) != placed.end())
          throw misuse_error(fmt::format("rill::layout: field {} is in two groups", id));
        placed.push_back(id);
      }
      if (!g.empty()) groups.push_back(g);
    }
  }
  for (const field_info& f : fields.fields())
    if (std::find(placed.begin(), placed.end(), f.id) == placed.end()) groups.push_back({f.id});
  return groups;
}

std::vector<int> order_of(int dims, const layout& l) {
  std::vector<int> order = l.dimension_order();
  if (order.empty())
    for (int d = 0; d < dims; ++d) order.push_back(d);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = static_cast<int>(sorted.size()) == dims;
  for (int d = 0; permutation && d < dims; ++d) permutation = sorted[static_cast<std::size_t>(d)] == d;
  if (!permutation)
    throw misuse_error(
        fmt::format("rill::layout::order: {} is not an order of the {} dimension(s) 0..{}", order, dims, dims - 1));
  return order;
}

}  // namespace

const field_placement* instance_layout::find(field_id id) const {
  const auto at =
      std::lower_bound(fields.begin(), fields.end(), id, [](const field_placement& f, field_id v) { return f.id < v; });
  return at != fields.end() && at->id == id ? &*at : nullptr;
}

bool instance_layout::has_opaque() const {
  return std::any_of(fields.begin(), fields.end(), [](const field_placement& f) { return f.opaque != 0; });
}

instance_layout lay_out(int dims, const rect<3>& bounds, const field_space& fields, const layout& l) {
  const std::vector<int> order = order_of(dims, l);
  std::array<std::size_t, 3> extent{1, 1, 1};
  std::size_t points = 1;
  if (bounds.empty()) {
    points = 0;
  } else {
    for (int d = 0; d < dims; ++d) {
      extent[static_cast<std::size_t>(d)] = static_cast<std::size_t>(bounds.hi[d] - bounds.lo[d]) + 1;
      points = checked_multiply(points, extent[static_cast<std::size_t>(d)]);
    }
  }
  instance_layout out;
  for (const std::vector<field_id>& group : groups_of(fields, l)) {
    // The group's element: its fields side by side, each at its alignment.
    std::size_t element = 0, widest = 1;
    std::vector<std::pair<field_id, std::size_t>> at;
    for (field_id id : group) {
      const std::size_t bytes = fields.bytes_of(id), align = alignment_of(bytes);
      element = round_up(element, align);
      at.emplace_back(id, element);
      element += bytes;
      widest = std::max(widest, align);
    }
    element = round_up(element, widest);
    const std::size_t start = round_up(out.bytes, instance_alignment);
    std::array<std::ptrdiff_t, 3> strides{};
    std::size_t step = element;
    for (int d : order) {
      strides[static_cast<std::size_t>(d)] = static_cast<std::ptrdiff_t>(step);
      step = checked_multiply(step, extent[static_cast<std::size_t>(d)]);
    }
    const std::size_t array = checked_multiply(element, points);
    if (array > std::numeric_limits<std::size_t>::max() - start)
      throw misuse_error("rill::instance::create: the instance's bytes overflow a size_t");
    for (const auto& [id, offset] : at)
      out.fields.push_back({id, fields.bytes_of(id), start + offset, strides, fields.info(id).opaque});
    out.bytes = start + array;
  }
  std::sort(out.fields.begin(), out.fields.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

}  // namespace rill::detail
