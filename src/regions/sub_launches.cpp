// Sub-launches: the launches a launched task makes from its body. They are analysed on the task's
// rank, where its data is, in a context of their own that starts with the task's instances
// holding its regions' data; each may use only points, fields and privileges the task has. When
// the body returns, what they wrote is copied back into the task's instances, and the task ends
// once that and they have ended. So a program whose top level launches one task per piece has its
// analysis done piece by piece on the pieces' ranks.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "regions/launch_analysis.hpp"
#include "regions/region_forest.hpp"
#include "rill/copy.hpp"
#include "rill/error.hpp"
#include "scheduler/worker.hpp"

namespace rill::detail {
namespace {

const char* name_of(privilege p) {
  switch (p) {
    case privilege::read_only: return "read_only";
    case privilege::read_write: return "read_write";
    case privilege::write_discard: return "write_discard";
    case privilege::reduce: break;
  }
  return "reduce";
}

// The tree's index of instance `inst` (one the task was given), or no_instance.
std::size_t index_of(const tree_state& tree, instance inst) {
  for (std::size_t k = 0; k < tree.instances.size(); ++k)
    if (tree.instances[k].inst == inst) return k;
  return no_instance;
}

// The fields of `node`'s space named by `bits` (physical_region::field_bits).
template <class F>
void for_each_field(const region_node& node, std::uint64_t bits, F&& f) {
  const auto& all = node.fields.fields();
  for (std::size_t o = 0; o < all.size() && o < 64; ++o)
    if ((bits >> o) & 1) f(all[o].id);
}

}  // namespace

launched_body::launched_body(const physical_regions& regions) : regions_(regions) {
  void*& parent = current_worker()->current_fiber()->task.launch_parent;
  outer_ = parent;
  parent = this;
}

launched_body::~launched_body() = default;

void launched_body::end(std::exception_ptr error) {
  // (A task resumes on the fiber it started on.)
  current_worker()->current_fiber()->task.launch_parent = outer_;
  if (context) {
    launch_analysis& analysis = analysis_here(launch_api);
    const event closed = analysis.close(*this, error != nullptr);
    try {
      closed.wait();
    } catch (const std::exception&) {
      if (!error) error = std::current_exception();  // a sub-launch failed: so does the task
    }
    // Nothing made for the sub-launches outlives the task's event. After a failure some may still
    // run: one that holds an instance keeps its memory until it returns, and one that has not
    // started fails on finding it gone (its event is merged into the failed ones').
    std::vector<event> gone;
    for (auto& [inst, made] : analysis.retire(*this)) {
      try {
        made.wait();
      } catch (const std::exception&) {
        continue;  // it was never made: the sub-launch that needed it failed with that
      }
      gone.push_back(inst.destroy());
    }
    merge(gone).wait();
  }
  if (error) std::rethrow_exception(error);
}

launched_body* launch_analysis::calling_body() {
  worker* w = current_worker();
  return w ? static_cast<launched_body*>(w->current_fiber()->task.launch_parent) : nullptr;
}

launch_context& launch_analysis::caller_context() {
  launched_body* body = calling_body();
  if (!body) return *(ctx_ = &top_);
  if (!body->context) {
    body->context = std::make_unique<launch_context>();
    body->context->parent = body;
    adopt_parent(*body->context);
  }
  return *(ctx_ = body->context.get());
}

void launch_analysis::adopt_parent(launch_context& ctx) {
  for (const physical_region& held : ctx.parent->regions()) {
    if (held.priv == privilege::reduce) continue;  // its fold instance holds no data
    const region_path& path = path_to(held.reg);
    const region_node& node = *path.back();
    tree_state& tree = ctx.trees[node.root];
    std::size_t k = index_of(tree, held.inst);
    if (k == no_instance) {
      tracked_instance t;
      t.inst = held.inst;
      t.rank = rank_me();
      t.region = node.id;
      t.borrowed = true;
      tree.instances.push_back(std::move(t));
      k = tree.instances.size() - 1;
    }
    std::vector<std::size_t>& at = tree.at(path).instances;
    if (std::find(at.begin(), at.end(), k) == at.end()) at.push_back(k);
    for_each_field(node, held.field_bits, [&](field_id f) {
      valid_points& v = tree.instances[k].valid[f];
      v.points = v.points.unite(node.space);
    });
  }
}

void launch_analysis::check_within_parent(const launched_body& parent, const requirement& r, const region_node& node,
                                          const std::vector<field_id>& fields, std::size_t index, bool copy) {
  const std::uint64_t wanted = field_bits(node.fields, fields);
  const bool representable = static_cast<std::size_t>(std::popcount(wanted)) == fields.size();
  const bool reduces = r.priv == privilege::reduce;
  bool within = false, within_writable = false;
  const physical_region* read_only_met = nullptr;
  for (const physical_region& held : parent.regions()) {
    const region_node& mine = *path_to(held.reg).back();
    if (mine.root != node.root) continue;
    if (reduces && held.priv == privilege::read_only && (held.field_bits & wanted) != 0 &&
        tree_state::spaces_meet(mine.space, node.space))
      read_only_met = &held;
    if (!representable || (held.field_bits & wanted) != wanted || !mine.space.contains(node.space)) continue;
    switch (held.priv) {
      case privilege::read_only: within = within || (!reduces && r.priv == privilege::read_only); break;
      case privilege::reduce: within = within || (reduces && r.redop->id == held.redop); break;
      default: within = within_writable = true; break;
    }
  }
  // A sibling's read applies a sub-launch's pending reduction to the instance it reads: that must
  // be one the parent may write. Under a writable region it is; under a reduction alone, the
  // values are meant for the parent's fold, and a read-only instance must not receive them.
  const char* const how = copy ? "rill::copy" : launch_api;
  const char* const kind = copy ? "copy in a launched task" : "sub-launch";
  if (within && reduces && !within_writable && read_only_met)
    throw misuse_error(
        fmt::format("{}: requirement {} of a {} (reduce on region {:#x}) shares points and fields with the launching "
                    "task's read_only region {:#x}: outside its parent's writable regions, a {} may reduce only on "
                    "points its parent does not read",
                    how, index, kind, r.reg.id(), read_only_met->reg.id(), kind));
  if (within) return;
  throw misuse_error(
      fmt::format("{}: requirement {} of a {} ({} on region {:#x}) is not within the launching task's regions: a "
                  "launched task may launch and copy only on points and fields it has, read_only under read_only, and "
                  "under a reduction only reductions by the same operator{}",
                  how, index, kind, name_of(r.priv), r.reg.id(),
                  representable ? "" : " (and sub-launches can name only the first 64 fields of a tree)"));
}

event launch_analysis::close(launched_body& body, bool failed) {
  turn in_turn(*this);
  launch_context& ctx = *body.context;
  ctx_ = &ctx;
  const event children = merge(ctx.children);
  small_vector<event, 8> done{children};
  // What the sub-launches wrote (and reduced) into the task's writable regions, back in its
  // instances, after all of them; what they reduced where it only reduces, folded into its fold
  // instance.
  for (const physical_region& held : body.regions()) {
    if (failed || held.priv == privilege::read_only) continue;
    const region_path& path = path_to(held.reg);
    tree_state& tree = ctx.trees[path.back()->root];
    if (held.priv == privilege::reduce) {
      for_each_field(*path.back(), held.field_bits, [&](field_id f) {
        (void)apply_unapplied(
            tree, f, path.back()->space, [&](const pending_reduction& p) { return p.op->id == held.redop; },
            [&](const pending_reduction& p, const index_space<3>& over) {
              done.push_back(
                  transfer_padded(p.fold, {f}, held.inst, {f}, &over, p.dims, p.op->fold, p.ready, launch_api));
              return done.back();
            });
      });
      continue;
    }
    const std::size_t home = index_of(tree, held.inst);
    for_each_field(*path.back(), held.field_bits, [&](field_id f) {
      bring_in(tree, path, home, f, children, {});
      apply_pending(tree, path, home, f, 0);
      done.push_back(tree.instances[home].valid[f].ready);
    });
  }
  ctx_ = &top_;
  return merge(done);
}

std::vector<std::pair<instance, event>> launch_analysis::retire(launched_body& body) {
  turn in_turn(*this);
  std::vector<std::pair<instance, event>> made;
  for (auto& [root, tree] : body.context->trees) {
    for (tracked_instance& t : tree.instances) {
      if (!t.live || t.borrowed) continue;
      held_[t.rank] -= t.bytes;
      made.emplace_back(t.inst, t.made);
    }
    for (pending_reduction& p : tree.pending) made.emplace_back(p.fold, p.made);
    for (spare_fold& s : tree.spare_folds) made.emplace_back(s.fold, s.made);
  }
  ctx_ = &top_;  // (it may still name this context, from the body's last sub-launch)
  body.context.reset();
  return made;
}

}  // namespace rill::detail
