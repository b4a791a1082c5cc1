// A rank's region-tree nodes: ids, the nodes made here, and copies of others' fetched on demand.
#include "regions/region_forest.hpp"

#include <fmt/format.h>

#include <utility>

#include "rill/error.hpp"
#include "rill/future.hpp"

namespace rill::detail {
namespace {

constexpr int maker_shift = 40;

int maker_of(std::uint64_t id) { return static_cast<int>(id >> maker_shift); }

}  // namespace

region_forest::region_forest(int rank) : rank_module("regions"), rank_(rank) {}

std::uint64_t region_forest::reserve_ids(std::uint64_t n) {
  std::lock_guard g(lock_);
  const std::uint64_t first = next_sequence_;
  if (n >= (std::uint64_t{1} << maker_shift) - first)
    throw misuse_error(fmt::format("rill::region: rank {} has no room for {} more region ids", rank_, n));
  next_sequence_ += n;
  return (static_cast<std::uint64_t>(rank_) << maker_shift) | first;
}

void region_forest::add(std::shared_ptr<const region_node> node) {
  std::lock_guard g(lock_);
  nodes_.emplace(node->id, std::move(node));
}

std::shared_ptr<const region_node> region_forest::known(std::uint64_t id) const {
  std::lock_guard g(lock_);
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second;
}

std::shared_ptr<const region_node> region_forest::node(std::uint64_t id, const char* what) {
  if (auto n = known(id)) return n;
  const int maker = maker_of(id);
  if (id == 0 || maker == rank_ || maker >= rank_n())
    throw misuse_error(
        fmt::format("{}: no region has id {:#x} (a handle not made by rill::region::create or a "
                    "partition)",
                    what, id));
  region_node copy;
  try {
    copy = rpc(
               maker,
               [](std::uint64_t wanted) {
                 auto n = forest_here("rill::region").known(wanted);
                 if (!n) throw misuse_error(fmt::format("rank {} made no region with id {:#x}", rank_me(), wanted));
                 return *n;
               },
               id)
               .get();
  } catch (const poisoned_error& e) {
    throw misuse_error(fmt::format("{}: {}", what, e.reason()));
  }
  if (copy.id != id || copy.dims < 1 || copy.dims > 3)
    throw misuse_error(fmt::format("{}: rank {} answered for region {:#x} with a malformed node", what, maker, id));
  auto n = std::make_shared<const region_node>(std::move(copy));
  std::lock_guard g(lock_);
  return nodes_.emplace(id, std::move(n)).first->second;
}

}  // namespace rill::detail
