// Copies between regions (rill/region_copy.hpp; Legion's copy operation): in program order with the
// launches, analysed as a launch of a source read and a destination write (or reduction), mapped
// as a task would be, but the data moves by a transfer, on a channel or an I/O thread, and no task
// runs. In a launched task, a copy is one of its sub-launches (sub_launches.cpp): within its
// regions, and what it writes is the task's when the task ends. Into points attached to a resource
// and not acquired, the transfer writes the resource itself: a snapshot copied into an attached
// file is one write from the source's instance, made by an I/O thread, with no copy in memory
// first.
#include <fmt/format.h>

#include <utility>
#include <vector>

#include "regions/launch_analysis.hpp"
#include "regions/region_forest.hpp"
#include "rill/copy.hpp"
#include "rill/error.hpp"
#include "rill/region_copy.hpp"

namespace rill::detail {
namespace {

// Refuses a point of a copy whose fields do not pair by size (a reduction copy's source holds the
// operator's right-hand sides), or whose destination has points the source lacks.
void check_pair(const requirement& src, const region_node& from, const requirement& dst, const region_node& to,
                const char* how) {
  if (from.dims != to.dims)
    throw misuse_error(fmt::format("{}: the source region {:#x} has {} dimensions and the destination {:#x} {}", how,
                                   from.id, from.dims, to.id, to.dims));
  for (std::size_t k = 0; k < src.fields.size(); ++k) {
    const std::size_t wanted = dst.priv == privilege::reduce ? dst.redop->rhs_bytes : to.fields.bytes_of(dst.fields[k]);
    if (from.fields.bytes_of(src.fields[k]) != wanted)
      throw misuse_error(fmt::format("{}: source field {} has {} bytes and destination field {} {}{}", how,
                                     src.fields[k], from.fields.bytes_of(src.fields[k]), dst.fields[k],
                                     dst.priv == privilege::reduce ? "reduces by values of " : "", wanted));
  }
  if (!from.space.contains(to.space))
    throw misuse_error(
        fmt::format("{}: destination region {:#x} has points that source region {:#x} has not", how, to.id, from.id));
}

}  // namespace

std::vector<std::vector<field_id>> launch_analysis::check_copy(const requirement& src, const requirement& dst,
                                                               const char* how) {
  if (src.priv != privilege::read_only)
    throw misuse_error(fmt::format("{}: the source's privilege must be read_only", how));
  if (dst.priv == privilege::read_only)
    throw misuse_error(fmt::format("{}: the destination's privilege must be write_discard, read_write or reduce", how));
  if (src.fields.empty() || src.fields.size() != dst.fields.size())
    throw misuse_error(fmt::format("{}: the source names {} fields and the destination {}: they pair in order", how,
                                   src.fields.size(), dst.fields.size()));
  return sorted_fields({src, dst});
}

void launch_analysis::move_planned(launch_plan& plan, const requirement& src, const requirement& dst) {
  const physical_regions& rs = *plan.regions;
  const region_node& to = *path_to(dst.reg).back();
  // (Under a reduction the destination is the copy's fold instance, applied when the data is next
  // needed, as a reducing task's is: the source's values fold into it.)
  const row_combiner how = dst.priv == privilege::reduce ? dst.redop->fold : row_combiner{};
  const event moved =
      transfer_padded(rs[0].inst, src.fields, rs[1].inst, dst.fields, &to.space, to.dims, how, plan.pre, "rill::copy");
  event_trigger_after(plan.done, moved);
}

event launch_analysis::copy(const requirement& src, const requirement& dst, event after) {
  constexpr const char* how = "rill::copy";
  if (!src.reg.exists() || !dst.reg.exists())
    throw misuse_error(fmt::format("{}: a requirement names no region (rill::index_copy copies over partitions)", how));
  turn in_turn(*this);
  caller_context();
  const std::vector<std::vector<field_id>> fields = check_copy(src, dst, how);
  const region_node& from = *path_to(src.reg).back();
  const region_node& to = *path_to(dst.reg).back();
  check_fields(src, from, fields[0]);
  check_fields(dst, to, fields[1]);
  check_pair(src, from, dst, to, how);
  launch_plan plan = plan_point({src, dst}, fields, after, -1, true, nullptr, true);
  move_planned(plan, src, dst);
  return plan.finished;
}

event launch_analysis::index_copy(partition over, const requirement& src, const requirement& dst, event after) {
  constexpr const char* how = "rill::index_copy";
  check_index_over(over, {src, dst}, how);
  turn in_turn(*this);
  caller_context();
  const std::vector<std::vector<field_id>> fields = check_copy(src, dst, how);
  // Each point's pair of requirements, all checked before any is planned.
  std::vector<std::pair<requirement, requirement>> pairs;
  for (std::size_t c = 0; c < over.colors(); ++c) {
    requirement s = src, d = dst;
    s.part = d.part = partition();
    if (src.part.exists()) s.reg = src.part.subregion(c);
    if (dst.part.exists()) d.reg = dst.part.subregion(c);
    const region_node& from = *path_to(s.reg).back();
    const region_node& to = *path_to(d.reg).back();
    if (c == 0) {
      check_fields(s, from, fields[0]);
      check_fields(d, to, fields[1]);
    }
    check_pair(s, from, d, to, how);
    // (plan_point checks these too, but a point refused there would leave the earlier ones issued.)
    check_place(s, from, ctx_->trees[from.root], fields[0], 0, true);
    check_place(d, to, ctx_->trees[to.root], fields[1], 1, true);
    pairs.emplace_back(std::move(s), std::move(d));
  }
  std::vector<event> points;
  for (std::size_t c = 0; c < pairs.size(); ++c) {
    const auto& [s, d] = pairs[c];
    launch_plan plan = plan_point({s, d}, fields, after, static_cast<std::int64_t>(c), true, nullptr, true);
    move_planned(plan, s, d);
    points.push_back(plan.finished);
  }
  return merge(points);
}

}  // namespace rill::detail

namespace rill {

event copy(const requirement& src, const requirement& dst, event after) {
  return detail::analysis_here("rill::copy").copy(src, dst, after);
}
event index_copy(partition over, const requirement& src, const requirement& dst, event after) {
  return detail::analysis_here("rill::index_copy").index_copy(over, src, dst, after);
}

}  // namespace rill
