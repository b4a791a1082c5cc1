// What the analysis of launches knows about one region tree: the uses that later launches may
// have to wait for (the logical state) and the instances holding its data, with the points each
// holds valid per field (the physical state), both hung on the regions they belong to. A launch on
// region R looks only at R's ancestors, R's subtree, and the subtrees partitions other than the
// disjoint ones on R's path lead to: launches on different subregions of a disjoint partition
// never meet, however many there are.
#pragma once
#include <boost/container/flat_map.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/small_vector.hpp"
#include "regions/region_forest.hpp"
#include "rill/event.hpp"
#include "rill/instance.hpp"
#include "rill/launch.hpp"
#include "rill/reservation.hpp"

namespace rill::detail {

// An earlier launch's use of a region, kept until a later write of the same points and fields
// makes it redundant or it has finished (a failed one stays, so that its poison reaches those
// that would have waited for it).
struct region_user {
  small_vector<field_id> fields;  // sorted
  privilege priv;
  coherence coh;
  std::size_t instance;  // the tree's instance it used (no_instance: a reduction's own)
  event done;
  std::uint64_t redop = 0;  // the operator of a reduction
  std::uint64_t hash = 0;   // of its shape at its region, once recorded there (tree_state::uses_hash)
};
inline constexpr std::size_t no_instance = static_cast<std::size_t>(-1);

// Whether two uses have the same shape: all but their events.
inline bool same_shape(const region_user& a, const region_user& b) {
  return a.priv == b.priv && a.coh == b.coh && a.instance == b.instance && a.redop == b.redop && a.fields == b.fields;
}

// A finished or running reduction not yet applied everywhere: the fold instance the task reduced
// into, and per field the points whose elements still lack its values. The data of a point is
// what an instance holding it valid has, with the pending reductions over it applied (all with
// one operator, so in any order).
struct pending_reduction {
  instance fold;
  event made;  // the fold instance exists, holding the operator's identity
  const redop_info* op;
  int dims;
  event ready;  // the reducing task's end
  std::map<field_id, index_space<3>> unapplied;
  std::vector<event> applied;  // its applications so far
  std::uint64_t region;        // what it was made for (to be reused)
  int rank;
  std::vector<field_id> fields;
};

// A fold instance applied everywhere, kept for the next reduction into the same region, on the
// same rank, by the same operator and fields (a program reduces the same way step after step).
struct spare_fold {
  instance fold;
  event made;
  std::uint64_t region;
  int rank;
  std::uint64_t op;
  std::vector<field_id> fields;
  event free;  // its last application (and its task) done
};

// Points of one field that an instance holds the latest data for, and the event after which the
// copies that brought them in are complete.
struct valid_points {
  index_space<3> points;
  event ready = event::none();
  // The copies out of the instance's field since the last copy or application into it: the next
  // one waits for them, and whatever writes after it waits for it (through `ready`). (The launch
  // that asked for such a copy may commute with the one that writes, a reduction by the same
  // operator as one pending there, so waiting for conflicting launches does not cover it.)
  std::vector<event> reads;
};

// Adds e to a list of events that matters only as a whole, merged into one every `every`
// events so that it stays short however long it runs.
inline void add_merged(std::vector<event>& list, event e, std::size_t every) {
  list.push_back(e);
  if (list.size() >= every) list.assign(1, merge(list));
}

// Notes a copy out of v (a field read step after step and written rarely).
inline void note_read(valid_points& v, event copied) { add_merged(v.reads, copied, 16); }

// The copies out of v that a copy or application into it must wait for, forgotten: it becomes
// part of v.ready, which every later one waits for.
inline event take_reads(valid_points& v) {
  const event all = merge(v.reads);
  v.reads.clear();
  return all;
}

// `e`, or none once it has triggered without failing, which is remembered: a later launch's
// merge need not ask for it again (an instance's making and copies are waited for by every launch
// that uses it).
inline event unless_done(event& e) {
  if (!e.is_none() && e.has_triggered() && !e.poisoned()) e = event::none();
  return e;
}

// An instance made for a region of the tree: on which rank, covering the region's points, with
// every field of the tree. Under an instance budget it may be collected (destroyed, `live` false,
// holding nothing valid); its index stays, never reused.
struct tracked_instance {
  instance inst;
  int rank = 0;
  event made;
  // By field, kept inline for the few fields a tree has most often (a launch looks at several
  // instances, and each map node elsewhere in memory would be one more cache miss).
  boost::container::flat_map<field_id, valid_points, std::less<>, small_vector<std::pair<field_id, valid_points>, 2>>
      valid;
  reservation atomic_lock;   // made for its first atomic use
  std::uint64_t region = 0;  // made for
  std::size_t bytes = 0;
  bool live = true;
  // A launched task's own instance, in its sub-launches' state: never collected or destroyed there.
  bool borrowed = false;
  // An attached resource (rill/attach.hpp): data is copied to and from it, no task maps to it.
  bool external = false;
  // Kept only under a budget: the tasks and copies that used it (reading or writing), and the
  // analysis's clock when a launch last chose it (least recently used goes first).
  event last_use;
  std::uint64_t last_chosen = 0;
};

// Adds to `out` what must end before instance t may be destroyed: its making, every task and copy
// that used it, every copy or reduction into it and out of it.
inline void add_instance_ends(const tracked_instance& t, std::vector<event>& out) {
  out.push_back(t.made);
  out.push_back(t.last_use);
  for (const auto& [f, v] : t.valid) {
    out.push_back(v.ready);
    out.insert(out.end(), v.reads.begin(), v.reads.end());
  }
}

// The root of a tree, down to a region.
using region_path = std::vector<std::shared_ptr<const region_node>>;

// One region's part of the state: its uses, the instances made for it, and the partitions below
// it under which some region has either.
struct node_state {
  std::uint64_t id = 0;  // the region's
  index_space<3> space;
  std::vector<region_user> users;
  std::vector<std::size_t> instances;  // indices in tree_state::instances
  struct used_partition {
    bool disjoint = false;
    std::unordered_map<std::uint64_t, std::uint64_t> child_of_color;
  };
  std::unordered_map<std::uint64_t, used_partition> below;  // by partition id
};

// An earlier use a requirement must wait for: the region it was recorded at, and its end. A copy
// for the requirement waits only for those of the points it copies.
struct conflict {
  const node_state* at;
  event done;
};

// An external resource attached to a region of the tree (rill/attach.hpp): its instance among the
// tree's, with the points and fields it holds. Restricted (not acquired), it is the only valid
// instance of them between launches: a task's instance is given their data before it runs and,
// if the task writes, gives it back after. Instances that hold the resource's data as it was at
// `slot` (the state a snapshot of it remembered) are its mirrors: a launch or an acquire refreshes
// a mirror -- copying only if the resource changed -- instead of reading the resource again.
struct attachment {
  std::uint64_t region = 0;
  index_space<3> space;
  std::vector<field_id> fields;  // sorted
  std::size_t ext = 0;           // in tree_state::instances
  std::string resource;          // its identity: the canonical path of its file
  bool read_only = false;        // attached io_mode::read_only: no launch may write its points
  // A part of a file that other parts may write (attach_options::within): a change of the file
  // may be theirs, so a release does not take one for another program's (a refresh copies when
  // the file changed, whoever changed it).
  bool part = false;
  bool acquired = false;
  std::uint64_t slot = 0;           // the state mirrors hold
  std::uint64_t acquired_slot = 0;  // the state at the acquire (a release checks it is unchanged)
  // The snapshot of `slot`: a refresh waits for it, as it checks against it -- and through it for
  // what it waited for, such as the reads of a mirror that a release ended (no use of the region
  // records them after the release; without this a refresh could write a mirror under them).
  event slot_taken;
  std::map<std::pair<std::size_t, field_id>, index_space<3>> mirrors;  // by instance and field
  // Restricted launches that read points of a mirror, and may still run: a refresh into those
  // points waits for them. (Reads do not conflict with one another, and the resource is made the
  // only valid instance again after each, so nothing else orders them: a refresh would replace
  // the data under a reader -- for opaque objects, destroy what it reads.)
  std::map<std::pair<std::size_t, field_id>, std::vector<std::pair<index_space<3>, event>>> readers;
};

class tree_state {
 public:
  // The state of the region at the end of `path`, made (with its ancestors' links) if new.
  node_state& at(const region_path& path);
  // The state of a region on `path` (nullptr: nothing recorded at it or below it).
  node_state* find(std::uint64_t id);

  // f(node_state&) for every region with state that may share points with the region at the end
  // of `path`.
  template <class F>
  void for_each_meeting(const region_path& path, F&& f) {
    for (node_state* n : meeting(path).nodes) f(*n);
  }
  // The same, with whether each region's points hold all of the region at the end of `path`
  // (an instance made for it holds that region's data): f(node_state&, bool).
  template <class F>
  void for_each_meeting_holding(const region_path& path, F&& f) {
    const meeting_list& m = meeting(path);
    for (std::size_t i = 0; i < m.nodes.size(); ++i) f(*m.nodes[i], m.holds[i]);
  }

  // Records a use at region n, merged into an earlier one it commutes with; returns its index
  // in n.users.
  std::size_t record_use(node_state& n, region_user use);
  // Drops the uses of region n and below whose fields are all in `fields` (sorted): a write of
  // them there waits for those uses, and whoever conflicts with them conflicts with it. Uses whose
  // event is in `keep` stay: reads of other instances that the write did not wait for.
  void drop_covered(node_state& n, std::span<const field_id> fields, std::span<const event> keep = {});
  // Drops n's uses that finished without failing once it has more than a few (a failed one
  // stays, so that its poison reaches those that would have waited for it). A short list keeps
  // them: waiting for a finished use costs little, and dropping it would change the list's shape,
  // which a remembered analysis depends on (launch_memo.hpp).
  void drop_finished(node_state& n);

  static bool spaces_meet(const index_space<3>& a, const index_space<3>& b);

  // f(const node_state&) for every region with state, in no order.
  template <class F>
  void for_each_node(F&& f) const {
    for (const auto& [id, n] : nodes_) f(n);
  }

  // What a remembered analysis of a launch depends on (launch_memo.hpp). The uses recorded, as
  // a hash of each region's uses without their events: two states with the same uses hash alike,
  // however they were reached (a program alternating two launches comes back to the same uses).
  std::uint64_t uses_hash() const { return uses_hash_; }
  // Everything else, as a count of its changes: regions with state (and so the regions meeting
  // each), instances made or collected, the points they hold valid.
  std::uint64_t changes() const { return changes_; }
  void note_change() { ++changes_; }

  tree_state() = default;
  tree_state(const tree_state&) = delete;  // (the meeting lists point into it)
  tree_state& operator=(const tree_state&) = delete;
  tree_state(tree_state&&) = default;
  tree_state& operator=(tree_state&&) = default;

  std::vector<tracked_instance> instances;  // never shrinks: node states hold indices
  std::vector<pending_reduction> pending;
  std::vector<spare_fold> spare_folds;
  std::vector<attachment> attachments;

 private:
  // The regions with state meeting the one at the end of `path`, in the order for_each_meeting
  // visits them, and whether each holds all its points. A launch asks several times for each of
  // its regions, and a program launches on the same regions again and again, so the list is kept
  // until a node is made (none is ever removed, and a node's space never changes).
  struct meeting_list {
    std::uint64_t generation = 0;
    std::vector<node_state*> nodes;
    std::vector<bool> holds;
  };
  const meeting_list& meeting(const region_path& path);
  void collect_meeting(const region_path& path, std::vector<node_state*>& out);
  void collect_subtree(std::uint64_t id, const index_space<3>& space, bool inside, std::vector<node_state*>& out);

  // (A sum, not an exclusive or: two alike uses at one region do not cancel out.)
  void use_dropped(const region_user& u) { uses_hash_ -= u.hash; }
  static std::uint64_t use_hash(const node_state& n, const region_user& u);

  std::uint64_t uses_hash_ = 0;
  std::uint64_t changes_ = 0;
  std::unordered_map<std::uint64_t, node_state> nodes_;      // by region id
  std::uint64_t generation_ = 1;                             // bumped when a node is made
  std::unordered_map<std::uint64_t, meeting_list> meeting_;  // by region id
  std::uint64_t last_region_ = 0;  // the last list asked for (a launch asks for it again at once)
  meeting_list* last_ = nullptr;
};

}  // namespace rill::detail
