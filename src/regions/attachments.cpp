// External resources attached to regions (rill/attach.hpp; Iris §II-E, §II-F): the resource as one
// more instance of the tree, the only valid one of its points and fields while restricted; what
// launches do around it while restricted; acquire, release (release consistency, with lazy
// invalidation: copies of unchanged data stay usable) and detach. docs/external.md says why.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <span>

#include "regions/launch_analysis.hpp"
#include "regions/region_forest.hpp"
#include "rill/copy.hpp"
#include "rill/error.hpp"

namespace rill::detail {
namespace {

bool has_field(const attachment& a, field_id f) { return std::binary_search(a.fields.begin(), a.fields.end(), f); }

// Whether attachment a holds one of `fields` at a point of `space`.
bool meets(const attachment& a, const index_space<3>& space, std::span<const field_id> fields) {
  return std::any_of(fields.begin(), fields.end(), [&](field_id f) { return has_field(a, f); }) &&
         tree_state::spaces_meet(a.space, space);
}

// The attachment of the tree that holds one of `fields` at a point of `space`, or null.
const attachment* attached_over(const tree_state& tree, const index_space<3>& space, std::span<const field_id> fields) {
  for (const attachment& a : tree.attachments)
    if (meets(a, space, fields)) return &a;
  return nullptr;
}

// Instance `to` refreshed from the attachment's resource at `over` for field f (copied only if
// the resource changed since the state its mirrors hold), after `pre`: valid there from then on.
event refresh_into(tree_state& tree, const attachment& a, std::size_t to, field_id f, const index_space<3>& over,
                   int dims, event pre) {
  tracked_instance& ext = tree.instances[a.ext];
  valid_points& mine = tree.instances[to].valid[f];
  const event refreshed = external_refresh(
      ext.inst, tree.instances[to].inst, {f}, over, dims, a.slot,
      merge(pre, ext.made, tree.instances[to].made, ext.valid[f].ready, mine.ready, take_reads(mine), a.slot_taken));
  note_read(ext.valid[f], refreshed);
  mine.points = mine.points.unite(over);
  mine.ready = merge(mine.ready, refreshed);
  tree.note_change();
  return refreshed;
}

// What tells one resource from another: its file's canonical path (a relative path is the
// issuing rank's).
std::string identity_of(const external_resource& res) {
  if (const auto* objects = std::get_if<opaque_resource>(&res))
    return fmt::format("the opaque objects at {:#x} on rank {}", objects->objects, rank_me());
  const std::string path = std::visit(
      [](const auto& x) {
        if constexpr (requires { x.path; })
          return x.path;
        else
          return std::string();
      },
      res);
  std::error_code ignored;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ignored);
  return fmt::format("'{}'", canonical.empty() ? path : canonical.string());
}

// A part of a raw file shared with other parts (attach_options::within) must never write another
// part's bytes: each of its rects spans the whole bounds in every dimension but the slowest of
// the layout, so that its bytes of each field (of each group of fields) are a range of the file
// of its own points only -- file_store writes a range, or reads and writes back the bytes around
// scattered elements, which would be other parts'. And it is not write_discard (a file of its
// own, renamed over the path, would wipe the others' parts).
void check_part(const region_node& node, const rect<3>& bounds, const file_resource& file, const layout& l,
                const char* how) {
  if (file.mode == io_mode::write_discard)
    throw misuse_error(
        fmt::format("{}: region {:#x} is attached write_discard as a part of another (within): a "
                    "part writes into the file of the whole, read_write",
                    how, node.id));
  const std::vector<int>& order = l.dimension_order();
  const int slowest = order.empty() ? node.dims - 1 : order.back();
  for (const rect<3>& r : node.space.rects())
    for (int d = 0; d < node.dims; ++d)
      if (d != slowest && (r.lo[d] != bounds.lo[d] || r.hi[d] != bounds.hi[d]))
        throw misuse_error(fmt::format(
            "{}: region {:#x} is not made of whole rows of the region it is a part of (dimension {} spans {}..{}, "
            "not {}..{}): its bytes in the file would lie among another part's",
            how, node.id, d, r.lo[d], r.hi[d], bounds.lo[d], bounds.hi[d]));
}

}  // namespace

void launch_analysis::refuse_in_task(const char* how) {
  if (calling_body()) throw misuse_error(fmt::format("{}: called in a launched task", how));
}

launch_analysis::attached launch_analysis::attachment_of(region r, const char* how) {
  if (!r.exists()) throw misuse_error(fmt::format("{}: the region handle is empty", how));
  ctx_ = &top_;
  const region_path& path = path_to(r);
  const region_node& node = *path.back();
  auto tree = top_.trees.find(node.root);
  if (tree != top_.trees.end())
    for (attachment& a : tree->second.attachments)
      if (a.region == node.id) return {&tree->second, &a, &path};
  throw misuse_error(fmt::format("{}: region {:#x} is not attached (rill::attach)", how, r.id()));
}

std::vector<conflict> launch_analysis::uses_of(tree_state& tree, const region_path& path,
                                               std::span<const field_id> fields) {
  std::vector<conflict> out;
  tree.for_each_meeting(path, [&](node_state& s) {
    for (const region_user& u : s.users)
      if (std::any_of(u.fields.begin(), u.fields.end(),
                      [&](field_id f) { return std::binary_search(fields.begin(), fields.end(), f); }))
        out.push_back({&s, u.done});
  });
  return out;
}

void launch_analysis::record_own_use(tree_state& tree, const region_path& path, const attachment& a, privilege p,
                                     event done, std::span<const event> kept) {
  node_state& at = tree.at(path);
  tree.drop_covered(at, a.fields, kept);
  tree.record_use(at, region_user{{a.fields.begin(), a.fields.end()}, p, coherence::exclusive, a.ext, done, 0});
}

event launch_analysis::attach(region r, std::vector<field_id> fields, const external_resource& res, event after,
                              const attach_options& options) {
  constexpr const char* how = "rill::attach";
  if (!r.exists()) throw misuse_error(fmt::format("{}: the region handle is empty", how));
  if (calling_body())
    throw misuse_error(
        fmt::format("{}: region {:#x} attached in a launched task; attach it where its launches are "
                    "issued, outside launched tasks",
                    how, r.id()));
  turn in_turn(*this);
  ctx_ = &top_;
  const region_path& path = path_to(r);
  const region_node& node = *path.back();
  std::sort(fields.begin(), fields.end());
  if (fields.empty()) throw misuse_error(fmt::format("{}: no fields to attach to region {:#x}", how, r.id()));
  if (std::adjacent_find(fields.begin(), fields.end()) != fields.end())
    throw misuse_error(fmt::format("{}: a field is named twice", how));
  field_space attached_fields;
  for (field_id f : fields) {
    if (!node.fields.has(f)) throw misuse_error(fmt::format("{}: field {} is not in region {:#x}", how, f, r.id()));
    attached_fields.add(node.fields.info(f));
  }
  const int rank = options.rank < 0 ? rank_me() : options.rank;
  if (rank >= rank_n()) throw misuse_error(fmt::format("{}: no rank {} (of {})", how, rank, rank_n()));
  // The points the resource holds: r's own, or those of the region r is a part of.
  rect<3> bounds = node.space.bounds();
  std::uint64_t whole = 0;
  if (options.within.exists()) {
    const region_node& w = *path_to(options.within).back();
    if (w.root != node.root || !node.space.subtract(w.space).empty())
      throw misuse_error(fmt::format("{}: region {:#x} is not a part of region {:#x} (attach_options::within)", how,
                                     r.id(), options.within.id()));
    bounds = w.space.bounds();
    whole = w.id;
  }
  tree_state& tree = top_.trees[node.root];
  // acquire, release and detach name a region: it has one attachment (its fields, one resource).
  for (const attachment& a : tree.attachments)
    if (a.region == node.id)
      throw misuse_error(
          fmt::format("{}: region {:#x} is attached already (to {}); a region has one attachment: "
                      "attach its fields together, or detach it first",
                      how, r.id(), a.resource));
  if (const attachment* a = attached_over(tree, node.space, fields))
    throw misuse_error(
        fmt::format("{}: region {:#x} shares points and fields with region {:#x}, which is attached "
                    "already (detach it first)",
                    how, r.id(), a->region));

  // One resource, several attachments (two regions, two trees): only readers may share it --
  // or disjoint parts of one region's raw file, whose bytes never meet -- and an attach after a
  // detach of it comes after that detach (legion#316: a reader attached after a writer detached
  // read stale data).
  const std::string resource = identity_of(res);
  const bool writable = std::visit([](const auto& x) { return x.mode != io_mode::read_only; }, res);
  const auto* file = std::get_if<file_resource>(&res);
  const bool part = whole != 0 && file;
  if (part) check_part(node, bounds, *file, options.layout, how);
  // (Parts of one region are of one tree, whose attachments never share points and fields.)
  const resource_user me{node.id, writable, part ? whole : 0, fields, options.layout};
  if (auto in_use = attached_resources_.find(resource); in_use != attached_resources_.end())
    for (const resource_user& other : in_use->second) {
      const bool beside = part && other.whole == whole && other.fields == fields && other.lay == options.layout;
      if ((writable || other.writable) && !beside)
        throw misuse_error(fmt::format(
            "{}: {} is attached already (to region {:#x}), and one of the two attachments may write it; detach "
            "that one first{}",
            how, resource, other.region,
            whole != 0 ? " (parts of one region may share a raw file, with the same fields and layout)" : ""));
    }
  if (auto before = detached_resources_.find(resource); before != detached_resources_.end())
    after = merge(after, before->second);

  const created_instance made =
      attach_padded(memory::external(rank), node.dims, node.space, bounds, attached_fields, res, options.layout, after);
  attached_resources_[resource].push_back(me);  // (not before: a refused attach holds nothing)
  tracked_instance t;
  t.inst = made.inst;
  t.rank = rank;
  t.made = made.ready;
  t.region = node.id;
  t.external = true;
  tree.instances.push_back(std::move(t));
  const std::size_t k = tree.instances.size() - 1;
  tree.at(path).instances.push_back(k);
  tree.note_change();
  // The resource's data replaces the points' data wherever it was: later launches wait for the
  // attach, and no longer for what came before (nothing they see comes from it).
  for (field_id f : fields) {
    discard_pending(tree, node.space, f);
    tree.instances[k].valid[f].ready = made.ready;
    make_only_valid(tree, path, k, f, node.space);
  }
  attachment a;
  a.region = node.id;
  a.space = node.space;
  a.fields = std::move(fields);
  a.ext = k;
  a.resource = resource;
  a.read_only = !writable;
  a.part = part;
  const event ready = merge(made.ready, new_slot(a, made.inst, made.ready));
  record_own_use(tree, path, a, privilege::write_discard, ready);
  tree.attachments.push_back(std::move(a));
  return ready;
}

void launch_analysis::refuse_on_attached(const tree_state& tree, const region_node& node,
                                         const std::vector<field_id>& fields, privilege p, const char* how) {
  if (p == privilege::reduce) {
    if (const attachment* a = attached_over(tree, node.space, fields))
      throw misuse_error(
          fmt::format("{}: a reduction on region {:#x}, whose points are attached (region "
                      "{:#x}): reduce into a region that is not, and copy it",
                      how, node.id, a->region));
    return;
  }
  if (p == privilege::read_only) return;
  for (const attachment& a : tree.attachments)
    if (a.read_only && meets(a, node.space, fields))
      throw misuse_error(
          fmt::format("{}: a write of region {:#x}, whose points are attached read_only to "
                      "{} (region {:#x}): detach it first (its data stays)",
                      how, node.id, a.resource, a.region));
}

void launch_analysis::refresh_mirrors(tree_state& tree, const region_path& path, std::size_t home, field_id f,
                                      event after, std::span<const conflict> earlier) {
  const region_node& node = *path.back();
  for (attachment& a : tree.attachments) {
    if (a.acquired || !has_field(a, f)) continue;
    auto m = a.mirrors.find({home, f});
    if (m == a.mirrors.end() || !tree_state::spaces_meet(m->second, node.space)) continue;
    const index_space<3> over = m->second.intersect(node.space).subtract(tree.instances[home].valid[f].points);
    if (over.empty()) continue;
    small_vector<event, 8> pre{after};
    for (const conflict& c : earlier)
      if (tree_state::spaces_meet(c.at->space, over)) pre.push_back(c.done);
    std::vector<std::pair<index_space<3>, event>>& readers = a.readers[{home, f}];
    std::erase_if(readers, [](const auto& r) { return r.second.has_triggered(); });
    for (const auto& [points, done] : readers)
      if (tree_state::spaces_meet(points, over)) pre.push_back(done);
    refresh_into(tree, a, home, f, over, node.dims, merge(pre));
  }
}

void launch_analysis::give_back(tree_state& tree, const region_path& path, std::size_t home,
                                std::span<const field_id> fields, bool wrote, region_user& use) {
  const region_node& node = *path.back();
  for (attachment& a : tree.attachments) {
    if (a.acquired || !tree_state::spaces_meet(a.space, node.space)) continue;
    const index_space<3> points = a.space.intersect(node.space);
    bool written = false;
    for (field_id f : fields) {
      if (!has_field(a, f)) continue;
      tracked_instance& ext = tree.instances[a.ext];
      if (wrote) {
        // The task's data goes back to the resource once it has run; until then (and until the
        // copy has read it) nothing may write the task's instance or read the resource there.
        valid_points& to = ext.valid[f];
        const event flushed = transfer_padded(tree.instances[home].inst, {f}, ext.inst, {f}, &points, node.dims, {},
                                              merge(use.done, to.ready, take_reads(to)), "rill::launch");
        note_read(tree.instances[home].valid[f], flushed);
        to.ready = merge(to.ready, flushed);
        use.done = merge(use.done, flushed);
        copies_.fetch_add(1, std::memory_order_relaxed);
        bytes_copied_.fetch_add(points.volume() * node.fields.bytes_of(f), std::memory_order_relaxed);
        for (auto& [key, mirrored] : a.mirrors)
          if (key.second == f) mirrored = mirrored.subtract(points);
        written = true;
      }
      if (!wrote) a.readers[{home, f}].emplace_back(points, use.done);
      index_space<3>& mirror = a.mirrors[{home, f}];
      mirror = mirror.unite(points);
      make_only_valid(tree, path, a.ext, f, points);
    }
    if (!written) continue;
    // The resource changed (by the runtime): mirrors now hold its state after the writes back.
    std::vector<event> landed;
    for (field_id g : a.fields) landed.push_back(tree.instances[a.ext].valid[g].ready);
    use.done = merge(use.done, new_slot(a, tree.instances[a.ext].inst, merge(landed)));
  }
}

event launch_analysis::acquire(region r, event after) {
  constexpr const char* how = "rill::acquire";
  refuse_in_task(how);
  turn in_turn(*this);
  auto [tree, a, path] = attachment_of(r, how);
  if (a->acquired) throw misuse_error(fmt::format("{}: region {:#x} is acquired already", how, r.id()));
  const region_node& node = *path->back();
  std::vector<event> before{after};
  for (const conflict& c : uses_of(*tree, *path, a->fields)) before.push_back(c.done);
  const event earlier = merge(before);
  tracked_instance& ext = tree->instances[a->ext];
  std::vector<event> done;
  // Copies of the resource's data made while restricted are valid again: refreshed, which reads
  // nothing when the resource is as they hold it.
  for (const auto& [key, mirrored] : a->mirrors) {
    if (!tree->instances[key.first].live) continue;
    const index_space<3> over = mirrored.subtract(tree->instances[key.first].valid[key.second].points);
    if (!over.empty()) done.push_back(refresh_into(*tree, *a, key.first, key.second, over, node.dims, earlier));
  }
  a->mirrors.clear();
  a->readers.clear();  // (the acquire waited for every earlier use)
  a->acquired = true;
  a->acquired_slot = next_slot_++;
  done.push_back(external_snapshot(ext.inst, a->acquired_slot, earlier));
  tree->note_change();
  const event acquired = merge(done);
  record_own_use(*tree, *path, *a, privilege::read_write, acquired);
  return acquired;
}

event launch_analysis::write_back(tree_state& tree, attachment& a, const region_path& path, event after,
                                  std::vector<event>& kept) {
  std::vector<event> before{after, tree.instances[a.ext].made};
  // Early release: once the writes have ended, the resource gets the data they leave whatever
  // reads still run on copies, which keep theirs (nothing copies into an instance before the
  // reads noted on it end, and the launches that write it wait for its kept uses).
  std::vector<conflict> earlier;
  std::vector<std::size_t> still_read;  // the instances of those reads
  tree.for_each_meeting(path, [&](node_state& s) {
    for (const region_user& u : s.users) {
      if (!std::any_of(u.fields.begin(), u.fields.end(), [&](field_id f) { return has_field(a, f); })) continue;
      if (war_ && u.priv == privilege::read_only && u.instance != a.ext && u.instance != no_instance &&
          !u.done.has_triggered()) {
        for (field_id f : u.fields)
          if (auto v = tree.instances[u.instance].valid.find(f);
              has_field(a, f) && v != tree.instances[u.instance].valid.end())
            note_read(v->second, u.done);
        kept.push_back(u.done);
        still_read.push_back(u.instance);
        continue;
      }
      earlier.push_back({&s, u.done});
    }
  });
  for (const conflict& c : earlier) before.push_back(c.done);
  // Another program's write since the acquire poisons the check, and through it every copy.
  const event checked =
      a.part ? merge(before)
             : external_unchanged(tree.instances[a.ext].inst, a.acquired_slot, merge(before), "rill::release");
  std::vector<event> landed{checked};
  for (field_id f : a.fields) {
    bring_in(tree, path, a.ext, f, checked, earlier, still_read);
    landed.push_back(tree.instances[a.ext].valid[f].ready);
  }
  // Every instance holding the points valid now holds what the resource will: mirrors of it.
  a.mirrors.clear();
  for (std::size_t k = 0; k < tree.instances.size(); ++k) {
    const tracked_instance& t = tree.instances[k];
    if (k == a.ext || !t.live) continue;
    for (field_id f : a.fields) {
      auto v = t.valid.find(f);
      if (v == t.valid.end() || !tree_state::spaces_meet(v->second.points, a.space)) continue;
      a.mirrors[{k, f}] = v->second.points.intersect(a.space);
    }
  }
  for (field_id f : a.fields) make_only_valid(tree, path, a.ext, f, a.space);
  const event held = merge(landed);
  a.acquired = false;
  tree.note_change();
  return merge(held, new_slot(a, tree.instances[a.ext].inst, held));
}

event launch_analysis::new_slot(attachment& a, instance ext, event after) {
  a.slot = next_slot_++;
  a.slot_taken = external_snapshot(ext, a.slot, after);
  return a.slot_taken;
}

event launch_analysis::release(region r, event after) {
  constexpr const char* how = "rill::release";
  refuse_in_task(how);
  turn in_turn(*this);
  auto [tree, a, path] = attachment_of(r, how);
  if (!a->acquired) throw misuse_error(fmt::format("{}: region {:#x} is not acquired (rill::acquire)", how, r.id()));
  std::vector<event> kept;
  const event released = write_back(*tree, *a, *path, after, kept);
  record_own_use(*tree, *path, *a, privilege::read_only, released, kept);
  return released;
}

event launch_analysis::detach(region r, event after) {
  constexpr const char* how = "rill::detach";
  refuse_in_task(how);
  turn in_turn(*this);
  auto [tree, a, path] = attachment_of(r, how);
  const region_node& node = *path->back();
  std::vector<event> kept;  // (the detach waits for every use: below)
  const event released = a->acquired ? write_back(*tree, *a, *path, after, kept) : after;
  std::vector<event> ends{after, released};
  for (const conflict& c : uses_of(*tree, *path, a->fields)) ends.push_back(c.done);
  tracked_instance& ext = tree->instances[a->ext];
  // What launches wrote back: a failed write back fails the detach (the data is not in the file).
  std::vector<event> written{ext.made};
  for (const auto& [f, v] : ext.valid) written.push_back(v.ready);
  // Mirrors keep the data: refreshed first (the resource may have changed), then valid.
  std::vector<event> refreshed;
  const event earlier = merge(ends);
  for (const auto& [key, mirrored] : a->mirrors)
    if (tree->instances[key.first].live && !mirrored.empty())
      refreshed.push_back(refresh_into(*tree, *a, key.first, key.second, mirrored, node.dims, earlier));
  add_instance_ends(ext, ends);
  ends.insert(ends.end(), refreshed.begin(), refreshed.end());
  // Closed even after a failure (a poisoned write back): a file left open would never be synced.
  // (A failed attach has nothing to close: the detach fails for its cause, below.)
  const event closed = external_close(ext.inst, all_ended(ends));
  ext.valid.clear();
  ext.live = false;
  if (node_state* n = tree->find(ext.region)) std::erase(n->instances, a->ext);
  tree->note_change();
  // After failed launches on its points the detach fails too (their data may not be written back).
  const event detached = merge(closed, earlier, merge(written), merge(refreshed));
  const std::uint64_t region_id = a->region;  // (clang 14 takes no structured binding into a lambda)
  std::vector<resource_user>& users = attached_resources_[a->resource];
  std::erase_if(users, [&](const resource_user& u) { return u.region == region_id; });
  if (users.empty()) attached_resources_.erase(a->resource);
  event& last = detached_resources_[a->resource];
  last = all_ended(std::vector<event>{last, closed});
  std::erase_if(tree->attachments, [&](const attachment& x) { return x.region == region_id; });
  // (Later launches wait for the refreshes through the mirrors' ready events.)
  return detached;
}

}  // namespace rill::detail

namespace rill {

event attach(region r, std::vector<field_id> fields, const external_resource& res, event after,
             const attach_options& options) {
  return detail::analysis_here("rill::attach").attach(r, std::move(fields), res, after, options);
}
event acquire(region r, event after) { return detail::analysis_here("rill::acquire").acquire(r, after); }
event release(region r, event after) { return detail::analysis_here("rill::release").release(r, after); }
event detach(region r, event after) { return detail::analysis_here("rill::detach").detach(r, after); }

}  // namespace rill
