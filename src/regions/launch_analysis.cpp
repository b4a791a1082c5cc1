// A launch's analysis: its requirements checked, the rank chosen, the earlier launches it waits
// for, an instance per requirement on that rank (reused, or made with every field of the tree),
// the copies that bring in the points it lacks, and the bookkeeping of what is valid where.
#include "regions/launch_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "regions/region_forest.hpp"
#include "rill/copy.hpp"
#include "rill/error.hpp"

namespace rill::detail {
namespace {

constexpr const char* what = "rill::launch";

bool fields_meet(const std::vector<field_id>& a, const std::vector<field_id>& b) {
  for (field_id f : a)
    if (std::binary_search(b.begin(), b.end(), f)) return true;
  return false;
}

bool writes(privilege p) { return p != privilege::read_only; }

template <int N>
created_instance create_unpadded(memory m, const index_space<3>& space, const field_space& fields) {
  return instance::create(m, unpadded_from_3d<N>(space), fields);
}

// The node of r and of every region above it, so that overlap tests later need no fetch.
std::shared_ptr<const region_node> resolve(region_forest& forest, region r) {
  if (!r.exists()) throw misuse_error(fmt::format("{}: a requirement names no region", what));
  auto node = forest.node(r.id(), what);
  for (auto up = node; up->parent_region != 0;) up = forest.node(up->parent_region, what);
  return node;
}

}  // namespace

launch_analysis::launch_analysis() : rank_module("regions") {}

launch_analysis::turn::turn(launch_analysis& a) : mine_(user_event::create()) {
  event before;
  {
    std::lock_guard g(a.turns_lock_);
    before = a.last_turn_;
    a.last_turn_ = mine_;
  }
  before.wait();
}

launch_analysis::turn::~turn() { mine_.trigger(); }

void launch_analysis::set_mapper(std::shared_ptr<mapper> m) {
  turn t(*this);
  mapper_ = std::move(m);
}

launch_counts launch_analysis::counts() const {
  return {launches_.load(), instances_made_.load(), copies_.load(), bytes_copied_.load()};
}

void launch_analysis::report_counters(counter_report& out) {
  const launch_counts c = counts();
  out.add("launches", c.launches);
  out.add("launch_instances_made", c.instances_made);
  out.add("launch_copies", c.copies);
  out.add("launch_bytes_copied", c.bytes_copied);
}

int launch_analysis::choose_rank(const std::vector<requirement>& reqs,
                                 const std::vector<std::shared_ptr<const region_node>>& nodes, std::int64_t color) {
  const int n = rank_n();
  std::vector<std::size_t> bytes(static_cast<std::size_t>(n), 0);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    auto tree = trees_.find(nodes[i]->root);
    if (tree == trees_.end()) continue;
    for (const tracked_instance& t : tree->second.instances)
      for (field_id f : reqs[i].fields) {
        auto v = t.valid.find(f);
        if (v != t.valid.end() && !v->second.points.empty())
          bytes[static_cast<std::size_t>(t.rank)] +=
              v->second.points.intersect(nodes[i]->space).volume() * nodes[i]->fields.bytes_of(f);
      }
  }
  int rank;
  if (mapper_) {
    rank = mapper_->map_task(mapping_query{reqs, bytes, color});
    if (rank < 0 || rank >= n) throw misuse_error(fmt::format("{}: the mapper chose rank {} of {}", what, rank, n));
  } else {
    const auto most = std::max_element(bytes.begin(), bytes.end());
    if (*most > 0)
      rank = static_cast<int>(most - bytes.begin());
    else
      rank = color >= 0 ? static_cast<int>(color % n) : rank_me();
  }
  return rank;
}

tracked_instance& launch_analysis::instance_for(tree_state& tree, const region_node& node, int rank) {
  for (tracked_instance& t : tree.instances)
    if (t.rank == rank && t.space.contains(node.space)) return t;
  created_instance made;
  switch (node.dims) {
    case 1: made = create_unpadded<1>(memory::system(rank), node.space, node.fields); break;
    case 2: made = create_unpadded<2>(memory::system(rank), node.space, node.fields); break;
    default: made = create_unpadded<3>(memory::system(rank), node.space, node.fields); break;
  }
  instances_made_.fetch_add(1, std::memory_order_relaxed);
  tracked_instance t;
  t.inst = made.inst;
  t.rank = rank;
  t.space = node.space;
  t.made = made.ready;
  tree.instances.push_back(std::move(t));
  return tree.instances.back();
}

launch_plan launch_analysis::plan(const std::vector<requirement>& reqs, event after, std::int64_t color) {
  turn in_turn(*this);
  auto& forest = forest_here(what);
  std::vector<std::shared_ptr<const region_node>> nodes;
  std::vector<std::vector<field_id>> fields;
  for (const requirement& r : reqs) {
    if (r.part.exists() && !r.reg.exists())
      throw misuse_error(fmt::format("{}: a requirement on a partition belongs in an index launch", what));
    nodes.push_back(resolve(forest, r.reg));
    std::vector<field_id> f = r.fields;
    std::sort(f.begin(), f.end());
    if (f.empty())
      throw misuse_error(fmt::format("{}: a requirement on region {:#x} names no field", what, r.reg.id()));
    if (std::adjacent_find(f.begin(), f.end()) != f.end())
      throw misuse_error(fmt::format("{}: a requirement on region {:#x} names a field twice", what, r.reg.id()));
    for (field_id id : f)
      if (!nodes.back()->fields.has(id))
        throw misuse_error(fmt::format("{}: field {} is not in region {:#x}", what, id, r.reg.id()));
    fields.push_back(std::move(f));
  }
  const int rank = choose_rank(reqs, nodes, color);

  launch_plan out{rank, event::none(), {}, user_event::create()};
  std::vector<event> waits{after};
  // Who it waits for, before any of its own requirements is recorded (they never wait for each other).
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    tree_state& tree = trees_[nodes[i]->root];
    for (const region_user& u : tree.users)
      if ((writes(u.priv) || writes(reqs[i].priv)) && fields_meet(u.fields, fields[i]) &&
          regions_overlap(u.reg, reqs[i].reg))
        waits.push_back(u.done);
  }
  const event earlier = merge(waits);

  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const region_node& node = *nodes[i];
    tree_state& tree = trees_[node.root];
    tracked_instance& home = instance_for(tree, node, rank);
    const std::size_t home_index = static_cast<std::size_t>(&home - tree.instances.data());
    waits.push_back(home.made);
    for (field_id f : fields[i]) {
      valid_points& mine = home.valid[f];
      if (reqs[i].priv != privilege::write_discard) {
        index_space<3> missing = node.space.subtract(mine.points);
        for (std::size_t j = 0; j < tree.instances.size() && !missing.empty(); ++j) {
          if (j == home_index) continue;
          const tracked_instance& from = tree.instances[j];
          auto v = from.valid.find(f);
          if (v == from.valid.end()) continue;
          const index_space<3> over = v->second.points.intersect(missing);
          if (over.empty()) continue;
          const event copied = transfer_padded(from.inst, {f}, home.inst, {f}, &over, node.dims, {},
                                               merge(earlier, from.made, home.made, v->second.ready), what);
          copies_.fetch_add(1, std::memory_order_relaxed);
          bytes_copied_.fetch_add(over.volume() * node.fields.bytes_of(f), std::memory_order_relaxed);
          mine.points = mine.points.unite(over);
          mine.ready = merge(mine.ready, copied);
          missing = missing.subtract(over);
        }
      }
      waits.push_back(mine.ready);
      if (writes(reqs[i].priv)) {
        mine.points = mine.points.unite(node.space);
        for (std::size_t j = 0; j < tree.instances.size(); ++j) {
          if (j == home_index) continue;
          auto v = tree.instances[j].valid.find(f);
          if (v != tree.instances[j].valid.end()) v->second.points = v->second.points.subtract(node.space);
        }
      }
    }
    out.regions.push_back({reqs[i].reg, home.inst, reqs[i].priv});
  }

  // Record its uses. A write makes earlier uses of points and fields it covers redundant: whoever
  // conflicts with them conflicts with it, and it waits for them.
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    tree_state& tree = trees_[nodes[i]->root];
    if (writes(reqs[i].priv)) {
      std::erase_if(tree.users, [&](const region_user& u) {
        return std::includes(fields[i].begin(), fields[i].end(), u.fields.begin(), u.fields.end()) &&
               nodes[i]->space.contains(u.space);
      });
    }
    std::erase_if(tree.users, [](const region_user& u) { return u.done.has_triggered(); });
    tree.users.push_back({reqs[i].reg, nodes[i]->space, fields[i], reqs[i].priv, out.done});
  }
  out.pre = merge(waits);
  launches_.fetch_add(1, std::memory_order_relaxed);
  return out;
}

launch_plan plan_launch(const std::vector<requirement>& reqs, event after, std::int64_t color) {
  return analysis_here(what).plan(reqs, after, color);
}

std::vector<requirement> project(const std::vector<requirement>& reqs, std::size_t color) {
  std::vector<requirement> out = reqs;
  for (requirement& r : out)
    if (r.part.exists()) r.reg = r.part.subregion(color), r.part = partition();
  return out;
}

}  // namespace rill::detail

namespace rill {

void set_mapper(std::shared_ptr<mapper> m) { detail::analysis_here("rill::set_mapper").set_mapper(std::move(m)); }
launch_counts launch_counts_here() { return detail::analysis_here("rill::launch_counts_here").counts(); }

}  // namespace rill
