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
#include "rill/reservation.hpp"

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

// The nodes from the root of r's tree down to r (so that overlap tests later need no fetch).
region_path path_of(region_forest& forest, region r) {
  if (!r.exists()) throw misuse_error(fmt::format("{}: a requirement names no region", what));
  region_path path{forest.node(r.id(), what)};
  while (path.back()->parent_region != 0) path.push_back(forest.node(path.back()->parent_region, what));
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace

launch_analysis::launch_analysis() : rank_module("regions") {}

launch_analysis::turn::turn(launch_analysis& a) : a_(a) {
  user_event mine;
  {
    std::lock_guard g(a.turns_lock_);
    if (!a.turn_taken_) {
      a.turn_taken_ = true;
      return;
    }
    mine = user_event::create();
    a.waiting_turns_.push_back(mine);
  }
  mine.wait();  // the turn is handed over with the trigger
}

launch_analysis::turn::~turn() {
  user_event next;
  {
    std::lock_guard g(a_.turns_lock_);
    if (a_.waiting_turns_.empty()) {
      a_.turn_taken_ = false;
      return;
    }
    next = a_.waiting_turns_.front();
    a_.waiting_turns_.pop_front();
  }
  next.trigger();
}

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

int launch_analysis::choose_rank(const std::vector<requirement>& reqs, const std::vector<region_path>& paths,
                                 const std::vector<std::vector<field_id>>& fields, std::int64_t color) {
  const int n = rank_n();
  std::vector<std::size_t> bytes(static_cast<std::size_t>(n), 0);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const region_node& node = *paths[i].back();
    auto tree = trees_.find(node.root);
    if (tree == trees_.end()) continue;
    tree->second.for_each_meeting(paths[i], [&](node_state& s) {
      for (std::size_t k : s.instances) {
        const tracked_instance& t = tree->second.instances[k];
        for (field_id f : fields[i]) {
          auto v = t.valid.find(f);
          if (v == t.valid.end() || v->second.points.empty()) continue;
          const std::size_t points = v->second.points.intersect(node.space).volume();
          bytes[static_cast<std::size_t>(t.rank)] += points * node.fields.bytes_of(f);
        }
      }
    });
  }
  if (mapper_) {
    const int rank = mapper_->map_task(mapping_query{reqs, bytes, color});
    if (rank < 0 || rank >= n) throw misuse_error(fmt::format("{}: the mapper chose rank {} of {}", what, rank, n));
    return rank;
  }
  const auto most = std::max_element(bytes.begin(), bytes.end());
  if (*most > 0) return static_cast<int>(most - bytes.begin());
  return color >= 0 ? static_cast<int>(color % n) : rank_me();
}

std::size_t launch_analysis::instance_for(tree_state& tree, const region_path& path, int rank) {
  for (auto up = path.rbegin(); up != path.rend(); ++up)
    if (node_state* s = tree.find((*up)->id))
      for (std::size_t k : s->instances)
        if (tree.instances[k].rank == rank) return k;
  const region_node& node = *path.back();
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
  t.made = made.ready;
  tree.instances.push_back(std::move(t));
  const std::size_t k = tree.instances.size() - 1;
  tree.at(path).instances.push_back(k);
  return k;
}

void launch_analysis::bring_in(tree_state& tree, const region_path& path, std::size_t home, field_id f, event earlier) {
  const region_node& node = *path.back();
  if (tree.instances[home].valid[f].points.contains(node.space)) return;
  index_space<3> missing = node.space.subtract(tree.instances[home].valid[f].points);
  tree.for_each_meeting(path, [&](node_state& s) {
    for (std::size_t k : s.instances) {
      if (k == home || missing.empty()) continue;
      const tracked_instance& from = tree.instances[k];
      auto v = from.valid.find(f);
      if (v == from.valid.end()) continue;
      const index_space<3> over = v->second.points.intersect(missing);
      if (over.empty()) continue;
      tracked_instance& to = tree.instances[home];
      const event copied = transfer_padded(from.inst, {f}, to.inst, {f}, &over, node.dims, {},
                                           merge(earlier, from.made, to.made, v->second.ready), what);
      copies_.fetch_add(1, std::memory_order_relaxed);
      bytes_copied_.fetch_add(over.volume() * node.fields.bytes_of(f), std::memory_order_relaxed);
      valid_points& mine = to.valid[f];
      mine.points = mine.points.unite(over);
      mine.ready = merge(mine.ready, copied);
      missing = missing.subtract(over);
    }
  });
}

launch_plan launch_analysis::plan(const std::vector<requirement>& reqs, event after, std::int64_t color, bool travels) {
  turn in_turn(*this);
  auto& forest = forest_here(what);
  std::vector<region_path> paths;
  std::vector<std::vector<field_id>> fields;
  for (const requirement& r : reqs) {
    if (r.part.exists() && !r.reg.exists())
      throw misuse_error(fmt::format("{}: a requirement on a partition belongs in an index launch", what));
    paths.push_back(path_of(forest, r.reg));
    std::vector<field_id> f = r.fields;
    std::sort(f.begin(), f.end());
    if (f.empty())
      throw misuse_error(fmt::format("{}: a requirement on region {:#x} names no field", what, r.reg.id()));
    if (std::adjacent_find(f.begin(), f.end()) != f.end())
      throw misuse_error(fmt::format("{}: a requirement on region {:#x} names a field twice", what, r.reg.id()));
    for (field_id id : f)
      if (!paths.back().back()->fields.has(id))
        throw misuse_error(fmt::format("{}: field {} is not in region {:#x}", what, id, r.reg.id()));
    fields.push_back(std::move(f));
  }
  const int rank = choose_rank(reqs, paths, fields, color);
  if (!travels && rank != rank_me())
    throw misuse_error(
        fmt::format("{}: the task was mapped to rank {}, but its callable has captures that are not "
                    "trivially copyable and can run only on the calling rank",
                    what, rank));

  launch_plan out{rank, event::none(), {}, spawn_event(rank)};
  // The instance of each requirement on that rank (coherence relaxes order only within one).
  std::vector<std::size_t> homes;
  for (std::size_t i = 0; i < reqs.size(); ++i)
    homes.push_back(instance_for(trees_[paths[i].back()->root], paths[i], rank));
  // Two of its requirements on the same points and fields, one writing, in two instances: each
  // instance would be marked valid while the task updates only one of them.
  for (std::size_t i = 0; i < reqs.size(); ++i)
    for (std::size_t j = i + 1; j < reqs.size(); ++j)
      if (paths[i].back()->root == paths[j].back()->root && homes[i] != homes[j] &&
          (writes(reqs[i].priv) || writes(reqs[j].priv)) && fields_meet(fields[i], fields[j]) &&
          regions_overlap(reqs[i].reg, reqs[j].reg))
        throw misuse_error(
            fmt::format("{}: requirements {} and {} share points and fields, one of them writes, and "
                        "they map to different instances",
                        what, i, j));

  std::vector<event> waits{after};
  // Who it waits for, before any of its own requirements is recorded (they never wait for each
  // other): conflicting uses, but those of the same instance with the same relaxed coherence.
  for (std::size_t i = 0; i < reqs.size(); ++i)
    trees_[paths[i].back()->root].for_each_meeting(paths[i], [&](node_state& s) {
      for (const region_user& u : s.users) {
        if (!(writes(u.priv) || writes(reqs[i].priv)) || !fields_meet(u.fields, fields[i])) continue;
        if (reqs[i].coh != coherence::exclusive && u.coh == reqs[i].coh && u.instance == homes[i]) continue;
        waits.push_back(u.done);
      }
    });
  const event earlier = merge(waits);

  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const region_node& node = *paths[i].back();
    tree_state& tree = trees_[node.root];
    const std::size_t home = homes[i];
    waits.push_back(tree.instances[home].made);
    for (field_id f : fields[i]) {
      if (reqs[i].priv != privilege::write_discard) bring_in(tree, paths[i], home, f, earlier);
      waits.push_back(tree.instances[home].valid[f].ready);
      if (!writes(reqs[i].priv)) continue;
      // A write: its instance is the only one that holds these points valid.
      valid_points& mine = tree.instances[home].valid[f];
      if (!mine.points.contains(node.space)) mine.points = mine.points.unite(node.space);
      tree.for_each_meeting(paths[i], [&](node_state& s) {
        for (std::size_t k : s.instances) {
          if (k == home) continue;
          auto v = tree.instances[k].valid.find(f);
          if (v != tree.instances[k].valid.end() && v->second.points.bounds().overlaps(node.space.bounds()))
            v->second.points = v->second.points.subtract(node.space);
        }
      });
    }
    out.regions.push_back({reqs[i].reg, tree.instances[home].inst, reqs[i].priv});
  }

  // Record its uses. An exclusive write first drops the uses it covers: it waits for all of them.
  // (A relaxed one does not wait for the uses it may run before, so they stay.)
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    tree_state& tree = trees_[paths[i].back()->root];
    if (writes(reqs[i].priv) && reqs[i].coh == coherence::exclusive) tree.drop_covered(paths[i].back()->id, fields[i]);
    tree.at(paths[i]).users.push_back({fields[i], reqs[i].priv, reqs[i].coh, homes[i], out.done});
  }
  out.pre = merge(waits);
  // Atomic uses hold their instances' reservations from the start of the task to its end, taken
  // in one order (by reservation id) so that two launches never hold one each and wait for the other.
  std::vector<reservation> locks;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].coh != coherence::atomic) continue;
    tracked_instance& t = trees_[paths[i].back()->root].instances[homes[i]];
    if (t.atomic_lock == reservation()) t.atomic_lock = reservation::create();
    locks.push_back(t.atomic_lock);
  }
  std::sort(locks.begin(), locks.end(), [](const reservation& a, const reservation& b) { return a.id() < b.id(); });
  locks.erase(std::unique(locks.begin(), locks.end()), locks.end());
  for (const reservation& r : locks) out.pre = r.acquire(out.pre);
  for (const reservation& r : locks) r.release(out.done);
  launches_.fetch_add(1, std::memory_order_relaxed);
  return out;
}

launch_plan plan_launch(const std::vector<requirement>& reqs, event after, std::int64_t color, bool travels) {
  return analysis_here(what).plan(reqs, after, color, travels);
}

void check_index_launch(partition over, const std::vector<requirement>& reqs) {
  if (!over.exists()) throw misuse_error("rill::index_launch: the partition handle is empty");
  for (std::size_t i = 0; i < reqs.size(); ++i)
    if (reqs[i].part.exists() && reqs[i].part.colors() < over.colors())
      throw misuse_error(
          fmt::format("rill::index_launch: requirement {} names a partition of {} colors for a launch "
                      "over {}",
                      i, reqs[i].part.colors(), over.colors()));
}

void refuse_planned(event done, const char* reason) {
  event_poison(done, std::make_shared<const poison_info>(
                         poison_info{std::string("the task could not be spawned: ") + reason, rank_me(), what}));
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
