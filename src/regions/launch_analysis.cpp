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

// Fold instances kept per tree for reuse: enough for a few index launches' worth of reductions.
constexpr std::size_t max_spare_folds = 256;

bool fields_meet(std::span<const field_id> a, std::span<const field_id> b) {
  for (field_id f : a)
    if (std::binary_search(b.begin(), b.end(), f)) return true;
  return false;
}

bool writes(privilege p) { return p != privilege::read_only; }
bool overwrites(privilege p) { return p == privilege::read_write || p == privilege::write_discard; }

// Whether a later requirement must wait for an earlier use: reads commute with reads, and
// reductions with reductions by the same operator.
// A read of an instance other than `home`, still running: a write to `home` need not wait for it.
// The attachment not acquired that holds every one of `fields` at every point of `node`, or null.
const attachment* restricted_over(const tree_state& tree, const region_node& node,
                                  const std::vector<field_id>& fields) {
  for (const attachment& a : tree.attachments)
    if (!a.acquired && a.space.contains(node.space) &&
        std::includes(a.fields.begin(), a.fields.end(), fields.begin(), fields.end()))
      return &a;
  return nullptr;
}

bool read_elsewhere(const region_user& u, std::size_t home) {
  return u.priv == privilege::read_only && u.coh == coherence::exclusive && u.instance != home &&
         u.instance != no_instance && !u.done.has_triggered();
}

bool conflicts(const region_user& u, const requirement& r, const std::vector<field_id>& fields) {
  if (!writes(u.priv) && !writes(r.priv)) return false;
  if (u.priv == privilege::reduce && r.priv == privilege::reduce && u.redop == r.redop->id) return false;
  return fields_meet(as_span(u.fields), fields);
}

template <int N>
created_instance create_unpadded(memory m, const index_space<3>& space, const field_space& fields) {
  return instance::create(m, unpadded_from_3d<N>(space), fields);
}

// Whether every point instance k holds valid is valid in another instance too (for each field).
bool replicated(const tree_state& tree, std::size_t k) {
  for (const auto& [f, mine] : tree.instances[k].valid) {
    index_space<3> alone = mine.points;
    for (std::size_t j = 0; j < tree.instances.size() && !alone.empty(); ++j) {
      if (j == k || !tree.instances[j].live) continue;
      auto other = tree.instances[j].valid.find(f);
      if (other != tree.instances[j].valid.end() && other->second.points.bounds().overlaps(alone.bounds()))
        alone = alone.subtract(other->second.points);
    }
    if (!alone.empty()) return false;
  }
  return true;
}

// The merge of many events (an index launch's points), made a group at a time. (A merge of a
// thousand events would need blocks of tens of kilobytes, and glibc's malloc answers each such
// request by first consolidating every small block freed since: as many as the tasks freed.)
class merged_in_groups {
 public:
  void add(event e) {
    group_.push_back(e);
    if (group_.size() == width) flush();
  }
  event all() {
    flush();
    while (merged_.size() > 1) {
      std::vector<event> up;
      for (std::size_t i = 0; i < merged_.size(); i += width)
        up.push_back(merge(std::span(merged_).subspan(i, std::min(width, merged_.size() - i))));
      merged_ = std::move(up);
    }
    return merged_.empty() ? event::none() : merged_.front();
  }

 private:
  static constexpr std::size_t width = 16;
  void flush() {
    if (group_.empty()) return;
    merged_.push_back(merge(group_));
    group_.clear();
  }
  small_vector<event, width> group_;
  std::vector<event> merged_;
};

}  // namespace

launch_analysis::launch_analysis(const rill::config& cfg)
    : rank_module("regions"), budget_(cfg.instance_budget), memo_(cfg.launch_memo), war_(cfg.write_after_read) {}

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

void launch_analysis::set_write_after_read(bool on) {
  turn t(*this);
  war_ = on;
}

event launch_analysis::destroy_tree(region root, event after) {
  constexpr const char* how = "rill::region::destroy";
  if (!root.exists()) throw misuse_error(fmt::format("{}: the region handle is empty", how));
  // (Sub-launches name their parent's regions: a tree is its issuer's, outside launched tasks.)
  if (calling_body())
    throw misuse_error(
        fmt::format("{}: region {:#x} destroyed in a launched task; its tree belongs to the "
                    "launches' issuer, which destroys it outside launched tasks",
                    how, root.id()));
  turn in_turn(*this);
  ctx_ = &top_;
  if (destroyed_.contains(root.id()))
    throw misuse_error(fmt::format("{}: region {:#x} was destroyed already", how, root.id()));
  const region_node& node = *path_to(root).back();
  if (node.root != node.id)
    throw misuse_error(
        fmt::format("{}: region {:#x} is a subregion; destroy its tree's root {:#x}", how, root.id(), node.root));
  if (auto t = top_.trees.find(root.id()); t != top_.trees.end() && !t->second.attachments.empty())
    throw misuse_error(fmt::format("{}: region {:#x} of the tree is attached to {}; detach it first", how,
                                   t->second.attachments.front().region, "an external resource"));
  destroyed_.insert(root.id());
  std::erase_if(paths_, [&](const auto& p) { return p.second.front()->id == root.id(); });
  // Remembered analyses point into the tree states (launch_memo.hpp): the others are analysed again.
  top_.memos = launch_memos();
  auto at = top_.trees.find(root.id());
  if (at == top_.trees.end()) return after;  // (nothing launched on it: nothing to free)
  tree_state& tree = at->second;

  std::vector<event> ends{after};
  tree.for_each_node([&](const node_state& n) {
    for (const region_user& u : n.users) ends.push_back(u.done);
  });
  for (const tracked_instance& t : tree.instances)
    if (t.live && !t.borrowed) add_instance_ends(t, ends);
  for (const pending_reduction& p : tree.pending) {
    ends.push_back(p.made);
    ends.push_back(p.ready);
    ends.insert(ends.end(), p.applied.begin(), p.applied.end());
  }
  for (const spare_fold& s : tree.spare_folds) ends.push_back(s.free);
  const event ended = all_ended(ends);

  std::vector<event> gone;
  for (tracked_instance& t : tree.instances) {
    if (!t.live || t.borrowed) continue;
    gone.push_back(t.inst.destroy(ended));
    if (t.atomic_lock != reservation()) t.atomic_lock.destroy(ended);
    held_[t.rank] -= t.bytes;
  }
  for (const pending_reduction& p : tree.pending) gone.push_back(p.fold.destroy(ended));
  for (const spare_fold& s : tree.spare_folds) gone.push_back(s.fold.destroy(ended));
  top_.trees.erase(at);
  return gone.empty() ? ended : merge(gone);
}

launch_counts launch_analysis::counts() const {
  return {launches_.load(),     repeated_.load(),   instances_made_.load(), copies_.load(),
          bytes_copied_.load(), reductions_.load(), collected_.load()};
}

void launch_analysis::report_counters(counter_report& out) {
  const launch_counts c = counts();
  out.add("launches", c.launches);
  out.add("launches_repeated", c.launches_repeated);
  out.add("launch_instances_made", c.instances_made);
  out.add("launch_copies", c.copies);
  out.add("launch_bytes_copied", c.bytes_copied);
  out.add("launch_reductions", c.reductions);
  out.add("launch_instances_collected", c.instances_collected);
}

const region_path& launch_analysis::path_to(region r) {
  if (!r.exists()) throw misuse_error(fmt::format("{}: a requirement names no region", launch_api));
  if (auto known = paths_.find(r.id()); known != paths_.end()) return known->second;
  auto& forest = forest_here(launch_api);
  // (Overlap tests later need no fetch: every node up to the root is here.)
  region_path path{forest.node(r.id(), launch_api)};
  while (path.back()->parent_region != 0) path.push_back(forest.node(path.back()->parent_region, launch_api));
  std::reverse(path.begin(), path.end());
  if (destroyed_.contains(path.front()->id))
    throw misuse_error(fmt::format("{}: region {:#x} is in the tree of region {:#x}, which was destroyed", launch_api,
                                   r.id(), path.front()->id));
  return paths_.emplace(r.id(), std::move(path)).first->second;
}

int launch_analysis::choose_rank(const std::vector<requirement>& reqs, std::span<const region_path* const> paths,
                                 const std::vector<std::vector<field_id>>& fields, std::int64_t color) {
  const int n = rank_n();
  valid_bytes_.assign(static_cast<std::size_t>(n), 0);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].priv == privilege::reduce) continue;  // it brings in no data
    const region_node& node = *paths[i]->back();
    auto tree = ctx_->trees.find(node.root);
    if (tree == ctx_->trees.end()) continue;
    tree->second.for_each_meeting(*paths[i], [&](node_state& s) {
      for (std::size_t k : s.instances) {
        const tracked_instance& t = tree->second.instances[k];
        if (t.external) continue;  // (an attached file draws no task to its rank)
        for (field_id f : fields[i]) {
          auto v = t.valid.find(f);
          if (v == t.valid.end() || !v->second.points.bounds().overlaps(node.space.bounds())) continue;
          const index_space<3>& valid = v->second.points;
          const std::size_t points =
              valid.contains(node.space) ? node.space.volume() : valid.intersect(node.space).volume();
          valid_bytes_[static_cast<std::size_t>(t.rank)] += points * node.fields.bytes_of(f);
        }
      }
    });
  }
  const mapping_query query{reqs, valid_bytes_, color};
  if (!mapper_) return default_mapper().map_task(query);
  const int rank = mapper_->map_task(query);
  if (rank < 0 || rank >= n) throw misuse_error(fmt::format("{}: the mapper chose rank {} of {}", launch_api, rank, n));
  return rank;
}

std::size_t launch_analysis::instance_for(tree_state& tree, const region_path& path, int rank) {
  const region_node& node = *path.back();
  // The largest instance on `rank` whose region holds the requirement's points: an ancestor's,
  // or an aliased region's that contains it (a stencil's ghost region holds its strip). Taking the
  // largest makes uses of nested regions converge on one instance, so that the points they share
  // are not copied between two instances on one rank step after step.
  std::size_t best = no_instance, best_volume = 0;
  tree.for_each_meeting_holding(path, [&](node_state& s, bool holds) {
    if (!holds) return;
    auto here = std::find_if(s.instances.begin(), s.instances.end(), [&](std::size_t k) {
      return tree.instances[k].rank == rank && !tree.instances[k].external;
    });
    if (here == s.instances.end()) return;
    const std::size_t volume = s.space.volume();
    if (best == no_instance || volume > best_volume) best = *here, best_volume = volume;
  });
  // (An empty region meets nothing: any instance of an ancestor holds it.)
  for (auto up = path.rbegin(); up != path.rend() && node.space.empty() && best == no_instance; ++up)
    if (node_state* s = tree.find((*up)->id))
      for (std::size_t k : s->instances)
        if (tree.instances[k].rank == rank && !tree.instances[k].external) best = k;
  if (best != no_instance) {
    tree.instances[best].last_chosen = clock_;
    return best;
  }
  return make_instance(tree, path, rank);
}

std::size_t launch_analysis::make_instance(tree_state& tree, const region_path& path, int rank) {
  const region_node& node = *path.back();
  const std::size_t bytes = node.space.volume() * node.fields.bytes_per_point();
  if (budget_ > 0) collect(rank, bytes);
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
  t.region = node.id;
  t.bytes = bytes;
  t.last_chosen = clock_;
  held_[rank] += bytes;
  tree.instances.push_back(std::move(t));
  const std::size_t k = tree.instances.size() - 1;
  tree.at(path).instances.push_back(k);
  tree.note_change();
  return k;
}

bool launch_analysis::takes_war(const tree_state& tree, const std::vector<requirement>& reqs,
                                std::span<const region_path* const> paths, std::span<const std::size_t> homes,
                                std::size_t i) const {
  if (!war_ || ctx_->parent || !overwrites(reqs[i].priv) || reqs[i].coh != coherence::exclusive ||
      homes[i] == no_instance)
    return false;
  if (!std::all_of(tree.attachments.begin(), tree.attachments.end(), [](const attachment& a) { return a.acquired; }))
    return false;  // (restricted launches give their data back at once)
  for (std::size_t j = 0; j < reqs.size(); ++j)
    if (j != i && paths[j]->back()->root == paths[i]->back()->root) return false;
  return true;
}

bool launch_analysis::read_unfinished(tree_state& tree, const region_path& path, std::size_t home,
                                      const std::vector<field_id>& fields) {
  bool found = false;
  tree.for_each_meeting(path, [&](node_state& s) {
    for (const region_user& u : s.users)
      found = found || (u.instance == home && u.priv == privilege::read_only &&
                        fields_meet(as_span(u.fields), fields) && !u.done.has_triggered());
  });
  return found;
}

std::size_t launch_analysis::spare_instance(tree_state& tree, const region_path& path, int rank, std::size_t busy) {
  for (std::size_t k : tree.at(path).instances) {
    const tracked_instance& t = tree.instances[k];
    if (k == busy || t.rank != rank || t.external || !t.live || t.borrowed) continue;
    bool in_use = false;
    tree.for_each_meeting(path, [&](node_state& s) {
      for (const region_user& u : s.users) in_use = in_use || (u.instance == k && !u.done.has_triggered());
    });
    if (!in_use) {
      tree.instances[k].last_chosen = clock_;
      return k;
    }
  }
  return make_instance(tree, path, rank);
}

void launch_analysis::bring_in(tree_state& tree, const region_path& path, std::size_t home, field_id f, event after,
                               std::span<const conflict> earlier, std::span<const std::size_t> last_resort) {
  const region_node& node = *path.back();
  if (tree.instances[home].valid[f].points.contains(node.space)) return;
  index_space<3> missing = node.space.subtract(tree.instances[home].valid[f].points);
  const auto copy_from = [&](node_state& s, bool resorting) {
    for (std::size_t k : s.instances) {
      if (k == home || missing.empty()) continue;
      if (std::find(last_resort.begin(), last_resort.end(), k) != last_resort.end() && !resorting) continue;
      tracked_instance& from = tree.instances[k];
      auto v = from.valid.find(f);
      if (v == from.valid.end()) continue;
      const index_space<3> over = v->second.points.intersect(missing);
      if (over.empty()) continue;
      tracked_instance& to = tree.instances[home];
      valid_points& mine = to.valid[f];
      // After what `home` was last given too (a reduction applied by a launch this one need not
      // wait for may still be landing there).
      small_vector<event, 8> pre{after, from.made, to.made, v->second.ready, mine.ready, take_reads(mine)};
      for (const conflict& c : earlier)
        if (tree_state::spaces_meet(c.at->space, over)) pre.push_back(c.done);
      const event copied = transfer_padded(from.inst, {f}, to.inst, {f}, &over, node.dims, {}, merge(pre), launch_api);
      note_use(tree, k, copied);
      note_read(v->second, copied);
      copies_.fetch_add(1, std::memory_order_relaxed);
      bytes_copied_.fetch_add(over.volume() * node.fields.bytes_of(f), std::memory_order_relaxed);
      mine.points = mine.points.unite(over);
      mine.ready = merge(mine.ready, copied);
      tree.note_change();
      missing = missing.subtract(over);
    }
  };
  tree.for_each_meeting(path, [&](node_state& s) { copy_from(s, false); });
  if (!missing.empty() && !last_resort.empty()) tree.for_each_meeting(path, [&](node_state& s) { copy_from(s, true); });
}

void launch_analysis::note_use(tree_state& tree, std::size_t k, event until) {
  if (budget_ == 0) return;  // (nothing is collected: no need to know)
  tracked_instance& t = tree.instances[k];
  t.last_use = merge(t.last_use, until);
}

void launch_analysis::collect(int rank, std::size_t needed) {
  std::size_t& held = held_[rank];
  if (held + needed <= budget_) return;
  struct candidate {
    std::uint64_t chosen;
    tree_state* tree;
    std::size_t k;
  };
  std::vector<candidate> oldest_first;
  for (auto& [root, tree] : ctx_->trees)
    for (std::size_t k = 0; k < tree.instances.size(); ++k) {
      const tracked_instance& t = tree.instances[k];
      if (t.live && !t.borrowed && !t.external && t.rank == rank && t.last_chosen != clock_)
        oldest_first.push_back({t.last_chosen, &tree, k});
    }
  std::sort(oldest_first.begin(), oldest_first.end(),
            [](const candidate& a, const candidate& b) { return a.chosen < b.chosen; });
  for (const candidate& c : oldest_first) {
    if (held + needed <= budget_) return;
    if (!replicated(*c.tree, c.k)) continue;
    tracked_instance& t = c.tree->instances[c.k];
    std::vector<event> used;
    add_instance_ends(t, used);
    t.inst.destroy(merge(used));
    t.valid.clear();
    t.live = false;
    held -= t.bytes;
    if (node_state* n = c.tree->find(t.region)) std::erase(n->instances, c.k);
    c.tree->note_change();
    collected_.fetch_add(1, std::memory_order_relaxed);
  }
}

void launch_analysis::make_only_valid(tree_state& tree, const region_path& path, std::size_t home, field_id f,
                                      const index_space<3>& points) {
  valid_points& mine = tree.instances[home].valid[f];
  if (!mine.points.contains(points)) {
    mine.points = mine.points.unite(points);
    tree.note_change();
  }
  tree.for_each_meeting(path, [&](node_state& s) {
    for (std::size_t k : s.instances) {
      if (k == home) continue;
      auto v = tree.instances[k].valid.find(f);
      if (v == tree.instances[k].valid.end() || !v->second.points.bounds().overlaps(points.bounds())) continue;
      index_space<3> left = v->second.points.subtract(points);
      if (left.volume() == v->second.points.volume()) continue;
      v->second.points = std::move(left);
      tree.note_change();
    }
  });
}

void launch_analysis::apply_pending(tree_state& tree, const region_path& path, std::size_t home, field_id f,
                                    std::uint64_t except_op) {
  const index_space<3> reduced = apply_unapplied(
      tree, f, path.back()->space, [&](const pending_reduction& p) { return p.op->id != except_op; },
      [&](const pending_reduction& p, const index_space<3>& over) {
        tracked_instance& to = tree.instances[home];
        valid_points& v = to.valid[f];
        const event applied = transfer_padded(p.fold, {f}, to.inst, {f}, &over, p.dims, p.op->apply,
                                              merge(p.ready, to.made, v.ready, take_reads(v)), launch_api);
        v.ready = merge(v.ready, applied);
        return applied;
      });
  // The reduced points are newer in `home` than wherever else they were valid.
  if (!reduced.empty()) make_only_valid(tree, path, home, f, reduced);
}

void launch_analysis::discard_pending(tree_state& tree, const index_space<3>& space, field_id f) {
  for (pending_reduction& p : tree.pending) {
    auto un = p.unapplied.find(f);
    if (un == p.unapplied.end() || !un->second.bounds().overlaps(space.bounds())) continue;
    un->second = un->second.subtract(space);
    if (un->second.empty()) p.unapplied.erase(un);
    tree.note_change();
  }
  retire_applied(tree);
}

void launch_analysis::retire_applied(tree_state& tree) {
  std::erase_if(tree.pending, [&](pending_reduction& p) {
    if (!p.unapplied.empty()) return false;
    p.applied.push_back(p.ready);
    const event free = merge(p.applied);
    if (tree.spare_folds.size() < max_spare_folds)
      tree.spare_folds.push_back({p.fold, p.made, p.region, p.rank, p.op->id, std::move(p.fields), free});
    else
      p.fold.destroy(free);
    return true;
  });
}

created_instance launch_analysis::make_fold(tree_state& tree, const region_node& node,
                                            const std::vector<field_id>& fields, const redop_info& op, int rank) {
  created_instance made;
  auto spare = std::find_if(tree.spare_folds.begin(), tree.spare_folds.end(), [&](const spare_fold& s) {
    return s.region == node.id && s.rank == rank && s.op == op.id && s.fields == fields;
  });
  if (spare != tree.spare_folds.end()) {
    made = {spare->fold, spare->free};
    tree.spare_folds.erase(spare);
  } else {
    field_space rhs;
    for (field_id f : fields) rhs.add(f, op.rhs_bytes);
    switch (node.dims) {
      case 1: made = create_unpadded<1>(memory::system(rank), node.space, rhs); break;
      case 2: made = create_unpadded<2>(memory::system(rank), node.space, rhs); break;
      default: made = create_unpadded<3>(memory::system(rank), node.space, rhs); break;
    }
  }
  std::vector<event> filled;
  for (field_id f : fields) filled.push_back(fill_padded(made.inst, f, op.identity, nullptr, node.dims, made.ready));
  return {made.inst, merge(filled)};
}

std::vector<std::vector<field_id>> launch_analysis::sorted_fields(const std::vector<requirement>& reqs) {
  std::vector<std::vector<field_id>> fields;
  fields.reserve(reqs.size());
  for (const requirement& r : reqs) {
    const std::uint64_t id = r.reg.exists() ? r.reg.id() : r.part.id();
    std::vector<field_id> f = r.fields;
    std::sort(f.begin(), f.end());
    if (f.empty()) throw misuse_error(fmt::format("{}: a requirement on {:#x} names no field", launch_api, id));
    if (std::adjacent_find(f.begin(), f.end()) != f.end())
      throw misuse_error(fmt::format("{}: a requirement on {:#x} names a field twice", launch_api, id));
    if (r.priv == privilege::reduce && !r.redop)
      throw misuse_error(fmt::format(
          "{}: a reduce requirement on {:#x} names no operator (use rill::reduce_with<Op>())", launch_api, id));
    fields.push_back(std::move(f));
  }
  return fields;
}

void launch_analysis::check_fields(const requirement& r, const region_node& node, const std::vector<field_id>& fields) {
  for (field_id id : fields) {
    if (!node.fields.has(id))
      throw misuse_error(fmt::format("{}: field {} is not in region {:#x}", launch_api, id, r.reg.id()));
    if (r.priv == privilege::reduce && node.fields.bytes_of(id) != r.redop->lhs_bytes)
      throw misuse_error(
          fmt::format("{}: field {} of region {:#x} holds {} bytes, but the reduction operator reduces into {}",
                      launch_api, id, r.reg.id(), node.fields.bytes_of(id), r.redop->lhs_bytes));
  }
}

launch_plan launch_analysis::plan(const std::vector<requirement>& reqs, event after, bool travels) {
  for (const requirement& r : reqs)
    if (r.part.exists() && !r.reg.exists())
      throw misuse_error(fmt::format("{}: a requirement on a partition belongs in an index launch", launch_api));
  turn in_turn(*this);
  caller_context();
  const std::vector<std::vector<field_id>> fields = sorted_fields(reqs);
  launch_memo* memo = nullptr;
  if (const std::uint32_t shape = shape_of(reqs, fields)) {
    memo_key key{shape, {}};
    for (const requirement& r : reqs) key.names.push_back(r.reg.id());
    memo = &ctx_->memos.single(key);
  }
  return plan_point(reqs, fields, after, -1, travels, memo);
}

void launch_analysis::check_index_over(partition over, const std::vector<requirement>& reqs, const char* how) {
  if (!over.exists()) throw misuse_error(fmt::format("{}: the partition handle is empty", how));
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (!reqs[i].part.exists() && !reqs[i].reg.exists())
      throw misuse_error(fmt::format("{}: requirement {} names no region or partition", how, i));
    if (reqs[i].part.exists() && reqs[i].part.colors() < over.colors())
      throw misuse_error(fmt::format("{}: requirement {} names a partition of {} colors for a launch over {}", how, i,
                                     reqs[i].part.colors(), over.colors()));
  }
}

void launch_analysis::check_place(const requirement& r, const region_node& node, const tree_state& tree,
                                  const std::vector<field_id>& fields, std::size_t index, bool copy) {
  if (ctx_->parent) check_within_parent(*ctx_->parent, r, node, fields, index, copy);
  if (!tree.attachments.empty()) refuse_on_attached(tree, node, fields, r.priv, copy ? "rill::copy" : launch_api);
}

event launch_analysis::plan_index(partition over, const std::vector<requirement>& reqs, event after, bool travels,
                                  const std::function<void(launch_plan&, std::size_t)>& spawn) {
  check_index_over(over, reqs, "rill::index_launch");
  // One turn and one check of the fields for all the points: only their regions differ.
  turn in_turn(*this);
  caller_context();
  const std::vector<std::vector<field_id>> fields = sorted_fields(reqs);
  std::vector<launch_memo>* memos = nullptr;
  if (const std::uint32_t shape = shape_of(reqs, fields)) {
    memo_key key{shape, {over.id()}};
    for (const requirement& r : reqs) key.names.push_back(r.part.exists() ? r.part.id() : r.reg.id());
    memos = &ctx_->memos.points(key, over.colors());
  }
  std::vector<requirement> point_reqs = reqs;
  for (requirement& r : point_reqs) r.part = partition();
  // The points to be analysed (not repeated) are checked against the launching task's regions and
  // the attachments before any is spawned: a refused point must leave no other running.
  for (std::size_t c = 0; c < over.colors(); ++c) {
    if (memos && (*memos)[c].known) continue;
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      if (reqs[i].part.exists()) point_reqs[i].reg = reqs[i].part.subregion(c);
      const region_node& node = *path_to(point_reqs[i].reg).back();
      check_place(point_reqs[i], node, ctx_->trees[node.root], fields[i], i, false);
    }
  }
  merged_in_groups points;
  for (std::size_t c = 0; c < over.colors(); ++c) {
    if (memos) prefetch_ahead(*memos, c);
    for (std::size_t i = 0; i < reqs.size(); ++i)
      if (reqs[i].part.exists()) point_reqs[i].reg = reqs[i].part.subregion(c);
    launch_plan plan =
        plan_point(point_reqs, fields, after, static_cast<std::int64_t>(c), travels, memos ? &(*memos)[c] : nullptr);
    points.add(plan.finished);
    spawn(plan, c);
  }
  return points.all();
}

launch_plan launch_analysis::plan_point(const std::vector<requirement>& reqs,
                                        const std::vector<std::vector<field_id>>& fields, event after,
                                        std::int64_t color, bool travels, launch_memo* remembered, bool copy) {
  ++clock_;
  if (remembered && remembered->known)
    if (std::optional<launch_plan> again = repeat(*remembered, after, travels)) return std::move(*again);
  small_vector<const region_path*> paths;
  small_vector<tree_state*> trees;  // each requirement's
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    paths.push_back(&path_to(reqs[i].reg));
    trees.push_back(&ctx_->trees[paths.back()->back()->root]);
    // (An index launch's points name regions of the same trees: their fields are checked once.)
    if (color <= 0) check_fields(reqs[i], *paths.back()->back(), fields[i]);
    check_place(reqs[i], *paths.back()->back(), *trees.back(), fields[i], i, copy);
  }
  const int rank = choose_rank(reqs, as_span(paths), fields, color);
  if (!travels && rank != rank_me())
    throw misuse_error(
        fmt::format("{}: the task was mapped to rank {}, but its callable has captures that are not "
                    "trivially copyable and can run only on the calling rank",
                    launch_api, rank));

  launch_plan out{rank, event::none(), {}, spawn_event(rank), event::none()};
  small_vector<event> given_back{out.done};  // the task, then its writes back
  // What the analysis finds, to be remembered if it leaves the data where it is.
  launch_memo memo;
  bool remember = remembered != nullptr;
  for (tree_state* t : trees) {
    if (!t->pending.empty()) remember = false;
    if (std::none_of(memo.trees.begin(), memo.trees.end(),
                     [&](const launch_memo::tree_seen& s) { return s.tree == t; }))
      memo.trees.push_back({t, t->uses_hash(), t->changes()});
  }
  // The instance of each requirement on that rank (coherence relaxes order only within one).
  // (A reduction folds into an instance of its own.)
  small_vector<std::size_t> homes;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    // A copy into points attached and not acquired writes the resource itself (a task would get
    // a copy of them in memory, given back after it). (One that reduces is refused there.)
    if (copy && i == 1 && reqs[i].priv != privilege::reduce)
      if (const attachment* a = restricted_over(*trees[1], *paths[1]->back(), fields[1])) {
        homes.push_back(a->ext);
        continue;
      }
    homes.push_back(reqs[i].priv == privilege::reduce ? no_instance : instance_for(*trees[i], *paths[i], rank));
  }
  // Two of its requirements on the same points and fields, one writing, in two instances: each
  // instance would be marked valid while the task updates only one of them. (A reduction applies
  // after the task, on top of what it wrote; two with different operators would not commute.)
  for (std::size_t i = 0; i < reqs.size(); ++i)
    for (std::size_t j = i + 1; j < reqs.size(); ++j) {
      if (paths[i]->back()->root != paths[j]->back()->root || !fields_meet(fields[i], fields[j])) continue;
      const bool reduce_i = reqs[i].priv == privilege::reduce, reduce_j = reqs[j].priv == privilege::reduce;
      const bool clash = reduce_i || reduce_j ? reduce_i && reduce_j && reqs[i].redop->id != reqs[j].redop->id
                                              : homes[i] != homes[j] && (writes(reqs[i].priv) || writes(reqs[j].priv));
      if (clash && regions_overlap(reqs[i].reg, reqs[j].reg))
        throw misuse_error(fmt::format("{}: requirements {} and {} share points and fields, and {}", launch_api, i, j,
                                       reduce_i && reduce_j
                                           ? "reduce with different operators"
                                           : "one of them writes, but they map to different instances"));
    }

  // Write after read (Iris §IV-B): a write need not wait for reads of other instances -- they
  // keep their data -- so a write whose own instance is being read moves to another.
  small_vector<bool> war(reqs.size(), false);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    war[i] = takes_war(*trees[i], reqs, as_span(paths), as_span(homes), i);
    if (war[i] && read_unfinished(*trees[i], *paths[i], homes[i], fields[i])) {
      homes[i] = spare_instance(*trees[i], *paths[i], rank, homes[i]);
      remember = false;
    }
  }

  small_vector<event, 8> waits{after};
  // Who it waits for, before any of its own requirements is recorded (they never wait for each
  // other): conflicting uses, but those of the same instance with the same relaxed coherence,
  // and, for a write after read, unfinished reads of other instances (kept as uses, and noted as
  // reads of their instance: nothing copies into it before they end).
  small_vector<small_vector<conflict>> earlier(reqs.size());
  small_vector<small_vector<event>> kept_reads(reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i)
    trees[i]->for_each_meeting(*paths[i], [&](node_state& s) {
      trees[i]->drop_finished(s);  // (the only pass over uses: the others look at instances)
      for (const region_user& u : s.users) {
        if (!conflicts(u, reqs[i], fields[i])) continue;
        if (reqs[i].coh != coherence::exclusive && u.coh == reqs[i].coh && homes[i] != no_instance &&
            u.instance == homes[i])
          continue;
        if (war[i] && read_elsewhere(u, homes[i])) {
          for (field_id f : u.fields)
            if (std::binary_search(fields[i].begin(), fields[i].end(), f))
              note_read(trees[i]->instances[u.instance].valid[f], u.done);
          kept_reads[i].push_back(u.done);
          remember = false;
          continue;
        }
        waits.push_back(u.done);
        earlier[i].push_back({&s, u.done});
        if (remember) memo.waits.push_back({&s, {u.fields, u.priv, u.coh, u.instance, event::none(), u.redop, u.hash}});
      }
    });

  // Its data, reductions last: a reduction of this launch applies on top of what it writes.
  physical_regions regions(reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].priv == privilege::reduce) continue;
    const region_node& node = *paths[i]->back();
    tree_state& tree = *trees[i];
    const std::size_t home = homes[i];
    waits.push_back(unless_done(tree.instances[home].made));
    for (field_id f : fields[i]) {
      // A write after read waits for the copies out of its instance itself: it no longer waits
      // for the launches they were made for.
      if (war[i] && !tree.instances[home].valid[f].reads.empty())
        waits.push_back(merge(tree.instances[home].valid[f].reads));
      if (reqs[i].priv == privilege::write_discard) {
        discard_pending(tree, node.space, f);
      } else {
        if (!tree.attachments.empty()) refresh_mirrors(tree, *paths[i], home, f, after, as_span(earlier[i]));
        bring_in(tree, *paths[i], home, f, after, as_span(earlier[i]));
        apply_pending(tree, *paths[i], home, f, 0);
      }
      waits.push_back(unless_done(tree.instances[home].valid[f].ready));
      // A write: its instance is the only one that holds these points valid.
      if (writes(reqs[i].priv)) make_only_valid(tree, *paths[i], home, f, node.space);
    }
    regions[i] = {reqs[i].reg, tree.instances[home].inst, reqs[i].priv, 0, field_bits(node.fields, fields[i])};
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].priv != privilege::reduce) continue;
    const region_node& node = *paths[i]->back();
    tree_state& tree = *trees[i];
    const redop_info& op = *reqs[i].redop;
    // Pending reductions with another operator are applied first, to an instance here.
    for (field_id f : fields[i]) {
      const bool other_op = std::any_of(tree.pending.begin(), tree.pending.end(), [&](const pending_reduction& p) {
        auto un = p.unapplied.find(f);
        return p.op->id != op.id && un != p.unapplied.end() && un->second.bounds().overlaps(node.space.bounds()) &&
               !un->second.intersect(node.space).empty();
      });
      if (!other_op) continue;
      const std::size_t home = instance_for(tree, *paths[i], rank);
      bring_in(tree, *paths[i], home, f, after, as_span(earlier[i]));
      apply_pending(tree, *paths[i], home, f, op.id);
      waits.push_back(tree.instances[home].valid[f].ready);
    }
    const created_instance fold = make_fold(tree, node, fields[i], op, rank);
    waits.push_back(fold.ready);
    pending_reduction p{fold.inst, fold.ready, &op, node.dims, out.done, {}, {}, node.id, rank, fields[i]};
    for (field_id f : fields[i]) p.unapplied.emplace(f, node.space);
    tree.pending.push_back(std::move(p));
    regions[i] = {reqs[i].reg, fold.inst, privilege::reduce, op.id, field_bits(node.fields, fields[i])};
  }
  out.regions = std::make_shared<const physical_regions>(std::move(regions));

  // Record its uses. An exclusive write first drops the uses it covers: it waits for all of them.
  // (A relaxed one does not wait for the uses it may run before, so they stay.)
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    tree_state& tree = *trees[i];
    node_state& at = tree.at(*paths[i]);
    const bool overwrite = overwrites(reqs[i].priv) && reqs[i].coh == coherence::exclusive;
    if (overwrite) tree.drop_covered(at, fields[i], as_span(kept_reads[i]));
    if (homes[i] != no_instance) note_use(tree, homes[i], out.done);
    region_user use{{fields[i].begin(), fields[i].end()}, reqs[i].priv, reqs[i].coh, homes[i], out.done,
                    reqs[i].redop ? reqs[i].redop->id : 0};
    const std::size_t k = tree.record_use(at, std::move(use));
    if (!tree.attachments.empty() && homes[i] != no_instance && !tree.instances[homes[i]].external) {
      give_back(tree, *paths[i], homes[i], fields[i], writes(reqs[i].priv), at.users[k]);
      if (at.users[k].done != out.done) given_back.push_back(at.users[k].done);
    }
    if (remember) {
      region_user shape = at.users[k];
      shape.done = event::none();
      memo.uses.push_back({&tree, &at, std::move(shape), overwrite});
    }
  }
  out.pre = merge(waits);
  out.finished = given_back.size() == 1 ? out.done : merge(given_back);
  // Atomic uses hold their instances' reservations from the start of the task to its end, taken
  // in one order (by reservation id) so that two launches never hold one each and wait for the other.
  std::vector<reservation> locks;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].coh != coherence::atomic || homes[i] == no_instance) continue;
    tracked_instance& t = trees[i]->instances[homes[i]];
    if (t.atomic_lock == reservation()) t.atomic_lock = reservation::create();
    locks.push_back(t.atomic_lock);
  }
  std::sort(locks.begin(), locks.end(), [](const reservation& a, const reservation& b) { return a.id() < b.id(); });
  locks.erase(std::unique(locks.begin(), locks.end()), locks.end());
  hold_and_count(out, locks);
  // Remembered if it changed nothing but uses (a new region's state, an instance, a copy, a
  // dropped finished use, a pending reduction: the next launch would not find what it found).
  if (remember && std::all_of(memo.trees.begin(), memo.trees.end(), [](const launch_memo::tree_seen& t) {
        return t.tree->changes() == t.changes && t.tree->pending.empty();
      })) {
    memo.known = true;
    memo.rank = rank;
    memo.regions = out.regions;
    memo.locks = std::move(locks);
    *remembered = std::move(memo);
  }
  return out;
}

void launch_analysis::hold_and_count(launch_plan& out, std::span<const reservation> locks) {
  for (const reservation& r : locks) out.pre = r.acquire(out.pre);
  for (const reservation& r : locks) r.release(out.done);
  launches_.fetch_add(1, std::memory_order_relaxed);
  if (ctx_->parent) note_child(*ctx_, out.done);
}

std::optional<launch_plan> launch_analysis::repeat(const launch_memo& m, event after, bool travels) {
  for (const launch_memo::tree_seen& t : m.trees)
    if (t.tree->uses_hash() != t.uses_hash || t.tree->changes() != t.changes || !t.tree->pending.empty())
      return std::nullopt;
  if (!travels && m.rank != rank_me()) return std::nullopt;  // (refused by the analysis)
  small_vector<event, 8> waits{after};
  for (const launch_memo::waited& w : m.waits) {
    const std::size_t before = waits.size();
    for (const region_user& u : w.at->users)
      if (same_shape(u, w.shape)) waits.push_back(u.done);
    if (waits.size() == before) return std::nullopt;  // (only if two states' uses hashed alike)
  }
  // Its instances' making and the copies into them (none since: the tree's changes would count them).
  for (const launch_memo::own_use& u : m.uses) {
    tracked_instance& t = u.tree->instances[u.use.instance];
    waits.push_back(unless_done(t.made));
    for (field_id f : u.use.fields) waits.push_back(unless_done(t.valid[f].ready));
  }
  launch_plan out{m.rank, event::none(), m.regions, spawn_event(m.rank), event::none()};
  out.finished = out.done;
  for (const launch_memo::own_use& u : m.uses) {
    if (u.overwrites) u.tree->drop_covered(*u.at, as_span(u.use.fields));
    region_user use = u.use;
    use.done = out.done;
    u.tree->record_use(*u.at, std::move(use));
  }
  out.pre = merge(waits);
  hold_and_count(out, m.locks);
  repeated_.fetch_add(1, std::memory_order_relaxed);
  return out;
}

std::uint32_t launch_analysis::shape_of(const std::vector<requirement>& reqs,
                                        const std::vector<std::vector<field_id>>& fields) {
  if (!memo_ || mapper_ || budget_ > 0) return 0;
  std::vector<std::uint64_t> shape;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].priv == privilege::reduce) return 0;
    shape.push_back(static_cast<std::uint64_t>(reqs[i].priv) | static_cast<std::uint64_t>(reqs[i].coh) << 8 |
                    std::uint64_t{fields[i].size()} << 16);
    shape.insert(shape.end(), fields[i].begin(), fields[i].end());
  }
  return shapes_.try_emplace(std::move(shape), static_cast<std::uint32_t>(shapes_.size() + 1)).first->second;
}

launch_plan plan_launch(const std::vector<requirement>& reqs, event after, bool travels) {
  return analysis_here(launch_api).plan(reqs, after, travels);
}

event plan_index_launch(partition over, const std::vector<requirement>& reqs, event after, bool travels,
                        const std::function<void(launch_plan&, std::size_t)>& spawn) {
  return analysis_here("rill::index_launch").plan_index(over, reqs, after, travels, spawn);
}

void refuse_planned(event done, const char* reason) {
  event_poison(done, std::make_shared<const poison_info>(
                         poison_info{std::string("the task could not be spawned: ") + reason, rank_me(), launch_api}));
}

}  // namespace rill::detail

namespace rill {

int default_mapper::map_task(const mapping_query& q) {
  const auto most = std::max_element(q.valid_bytes.begin(), q.valid_bytes.end());
  if (most != q.valid_bytes.end() && *most > 0) return static_cast<int>(most - q.valid_bytes.begin());
  return q.color >= 0 ? static_cast<int>(q.color % rank_n()) : rank_me();
}

event region::destroy(event after) const {
  return detail::analysis_here("rill::region::destroy").destroy_tree(*this, after);
}

void set_mapper(std::shared_ptr<mapper> m) { detail::analysis_here("rill::set_mapper").set_mapper(std::move(m)); }
void set_write_after_read(bool on) { detail::analysis_here("rill::set_write_after_read").set_write_after_read(on); }
launch_counts launch_counts_here() { return detail::analysis_here("rill::launch_counts_here").counts(); }

}  // namespace rill
