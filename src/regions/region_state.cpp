// A region tree's state for the analysis of launches: node states and their links, dropping uses.
#include "regions/region_state.hpp"

#include <algorithm>

namespace rill::detail {

node_state& tree_state::at(const region_path& path) {
  node_state* n = nullptr;
  for (std::size_t i = 0; i < path.size(); ++i) {
    auto [it, made] = nodes_.try_emplace(path[i]->id);
    n = &it->second;
    if (made) n->space = path[i]->space;
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

void tree_state::drop_covered(std::uint64_t id, const std::vector<field_id>& fields) {
  node_state* n = find(id);
  if (!n) return;
  std::erase_if(n->users, [&](const region_user& u) {
    return std::includes(fields.begin(), fields.end(), u.fields.begin(), u.fields.end());
  });
  for (auto& [partition_id, used] : n->below)
    for (auto& [color, child] : used.child_of_color) drop_covered(child, fields);
}

void tree_state::drop_finished(node_state& n) {
  std::erase_if(n.users, [](const region_user& u) { return u.done.has_triggered() && !u.done.poisoned(); });
}

bool tree_state::spaces_meet(const index_space<3>& a, const index_space<3>& b) {
  return a.bounds().overlaps(b.bounds()) && !a.intersect(b).empty();
}

}  // namespace rill::detail
