// A region tree's state for the analysis of launches: node states and their links, dropping uses.
#include "regions/region_state.hpp"

#include <algorithm>

#include "common/hash_mix.hpp"

namespace rill::detail {

node_state& tree_state::at(const region_path& path) {
  // A node once made stays, and its making linked it under its ancestors.
  if (node_state* known = find(path.back()->id)) return *known;
  ++generation_;
  note_change();
  node_state* n = nullptr;
  for (std::size_t i = 0; i < path.size(); ++i) {
    auto [it, made] = nodes_.try_emplace(path[i]->id);
    n = &it->second;
    if (made) n->id = path[i]->id, n->space = path[i]->space;
    if (i + 1 < path.size()) {
      const region_node& child = *path[i + 1];
      node_state::used_partition& used = n->below[child.parent_partition];
      used.disjoint = (child.parent_flags & partition::disjoint_flag) != 0;
      used.child_of_color[child.color] = child.id;
    }
  }
  return *n;
}

node_state* tree_state::find(std::uint64_t id) {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second;
}

const tree_state::meeting_list& tree_state::meeting(const region_path& path) {
  const std::uint64_t id = path.back()->id;
  if (last_ && last_region_ == id && last_->generation == generation_) return *last_;
  meeting_list& m = meeting_[id];
  if (m.generation != generation_) {
    m.nodes.clear();
    collect_meeting(path, m.nodes);
    const index_space<3>& space = path.back()->space;
    m.holds.clear();
    for (const node_state* n : m.nodes) m.holds.push_back(n->space.contains(space));
    m.generation = generation_;
  }
  last_region_ = id;
  last_ = &m;
  return m;
}

void tree_state::collect_meeting(const region_path& path, std::vector<node_state*>& out) {
  const index_space<3>& space = path.back()->space;
  if (space.empty()) return;
  for (std::size_t i = 0; i < path.size(); ++i) {
    node_state* n = find(path[i]->id);
    if (!n) return;  // nothing at or below this region
    out.push_back(n);
    const bool last = i + 1 == path.size();
    for (auto& [partition_id, used] : n->below) {
      const bool on_path = !last && path[i + 1]->parent_partition == partition_id;
      if (on_path && used.disjoint) continue;
      for (auto& [color, child] : used.child_of_color)
        if (!on_path || child != path[i + 1]->id) collect_subtree(child, space, last, out);
    }
  }
}

void tree_state::collect_subtree(std::uint64_t id, const index_space<3>& space, bool inside,
                                 std::vector<node_state*>& out) {
  node_state* n = find(id);
  if (!n || (!inside && !spaces_meet(n->space, space))) return;
  out.push_back(n);
  for (auto& [partition_id, used] : n->below)
    for (auto& [color, child] : used.child_of_color) collect_subtree(child, space, inside, out);
}

std::size_t tree_state::record_use(node_state& n, region_user use) {
  // Uses that commute with each other (reads; reductions by one operator; relaxed uses of one
  // instance) are one use to whoever comes later: kept as one, with the merge of their events, a
  // region read step after step and never written keeps one use, not one per step.
  const bool commutes = use.priv == privilege::read_only || use.priv == privilege::reduce ||
                        (use.coh != coherence::exclusive && use.instance != no_instance);
  if (commutes)
    for (std::size_t i = 0; i < n.users.size(); ++i) {
      region_user& u = n.users[i];
      if (same_shape(u, use)) {
        u.done = merge(u.done, use.done);
        return i;
      }
    }
  if (use.hash == 0) use.hash = use_hash(n, use);
  uses_hash_ += use.hash;
  n.users.push_back(std::move(use));
  return n.users.size() - 1;
}

void tree_state::drop_covered(node_state& n, std::span<const field_id> fields, std::span<const event> keep) {
  std::erase_if(n.users, [&](const region_user& u) {
    if (!std::includes(fields.begin(), fields.end(), u.fields.begin(), u.fields.end())) return false;
    if (std::find(keep.begin(), keep.end(), u.done) != keep.end()) return false;
    use_dropped(u);
    return true;
  });
  for (auto& [partition_id, used] : n.below)
    for (auto& [color, child] : used.child_of_color)
      if (node_state* below = find(child)) drop_covered(*below, fields, keep);
}

void tree_state::drop_finished(node_state& n) {
  constexpr std::size_t kept_below = 8;
  if (n.users.size() < kept_below) return;
  const std::size_t before = n.users.size();
  std::erase_if(n.users, [&](const region_user& u) {
    if (!u.done.has_triggered() || u.done.poisoned()) return false;
    use_dropped(u);
    return true;
  });
  if (n.users.size() != before) note_change();
}

std::uint64_t tree_state::use_hash(const node_state& n, const region_user& u) {
  std::uint64_t h = hash_mix(n.id);
  h = hash_mix(h ^ (static_cast<std::uint64_t>(u.priv) | static_cast<std::uint64_t>(u.coh) << 8));
  h = hash_mix(h ^ u.instance);
  h = hash_mix(h ^ u.redop);
  for (field_id f : u.fields) h = hash_mix(h ^ f);
  return h;
}

bool tree_state::spaces_meet(const index_space<3>& a, const index_space<3>& b) {
  return a.bounds().overlaps(b.bounds()) && !a.intersect(b).empty();
}

}  // namespace rill::detail
