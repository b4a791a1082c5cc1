// The analysis of launches on logical regions, per issuing rank, in program order: who each
// launch waits for, where it runs, and which instance holds each of its regions there
// (regions/region_state.hpp keeps what is known of each tree).
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "regions/launch_context.hpp"
#include "regions/region_state.hpp"
#include "rill/attach.hpp"
#include "rill/config.hpp"
#include "rill/event.hpp"
#include "rill/launch.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

// The name errors of launches and sub-launches give for the API that failed.
inline constexpr const char* launch_api = "rill::launch";

class launch_analysis final : public rank_module {
 public:
  explicit launch_analysis(const rill::config& cfg);

  // A single launch of `reqs` (regions, not partitions).
  launch_plan plan(const std::vector<requirement>& reqs, event after, bool travels);
  // The points of an index launch over `over`, in color order within one turn, each handed to
  // spawn(plan, color) as soon as it is planned; returns the event of all of them.
  event plan_index(partition over, const std::vector<requirement>& reqs, event after, bool travels,
                   const std::function<void(launch_plan&, std::size_t)>& spawn);
  // rill::copy between regions (region_copies.cpp): analysed as a launch of [src, dst] mapped as a
  // task would be, the data moved by a transfer instead of a task; into points attached to a
  // resource and not acquired, straight into the resource. Returns the copy's event.
  event copy(const requirement& src, const requirement& dst, event after);
  event index_copy(partition over, const requirement& src, const requirement& dst, event after);
  // After a launched task's body (docs/regions.md, "Sub-launches"): the event of its
  // sub-launches and of the copies that bring what they wrote into its instances (no copies when
  // the body failed).
  event close(launched_body& body, bool failed);
  // Once that event has triggered: forgets the body's sub-launches, and returns the instances
  // made for them (fold instances included), each with the event of its making, for the body to
  // destroy.
  std::vector<std::pair<instance, event>> retire(launched_body& body);
  void set_mapper(std::shared_ptr<mapper> m);
  void set_write_after_read(bool on);
  // region::destroy: forgets the tree of `root` in the calling rank's launches (later ones on it
  // are refused) and destroys its instances once `after` and every launch and copy recorded in
  // it have ended, failed or not; returns the event of their destruction.
  event destroy_tree(region root, event after);
  launch_counts counts() const;

  // rill::attach, acquire, release and detach (rill/attach.hpp, attachments.cpp): in program order
  // with the rank's top-level launches.
  event attach(region r, std::vector<field_id> fields, const external_resource& res, event after,
               const attach_options& options);
  event acquire(region r, event after);
  event release(region r, event after);
  event detach(region r, event after);

  void report_counters(counter_report& out) override;

 private:
  // One analysis at a time on a rank, first come first served. A turn may wait (for a node from
  // another rank, a message's room), so it is not a mutex held meanwhile: whoever finds the turn
  // taken queues an event and waits for it; the holder hands the turn over by triggering it.
  class turn {
   public:
    explicit turn(launch_analysis& a);
    ~turn();
    turn(const turn&) = delete;
    turn& operator=(const turn&) = delete;

   private:
    launch_analysis& a_;
  };

  // The state of the caller's launches, made for a launched task's first sub-launch; in turn.
  launch_context& caller_context();
  // The launched task whose body is calling, or null (the rank's top level).
  static launched_body* calling_body();
  // A launched task's context starts with its instances holding valid data for its regions and fields.
  void adopt_parent(launch_context& ctx);
  // Refuses a sub-launch's requirement (or a copy's, `copy`) that asks for points, fields or a
  // privilege its parent task does not have.
  void check_within_parent(const launched_body& parent, const requirement& r, const region_node& node,
                           const std::vector<field_id>& fields, std::size_t index, bool copy);
  // Refuses a point's requirement that its launching task does not hold (in a task), or that
  // the tree's attachments forbid (refuse_on_attached); `copy`: a copy's. Every point is checked
  // before it is planned -- an index launch's or copy's all before the first.
  void check_place(const requirement& r, const region_node& node, const tree_state& tree,
                   const std::vector<field_id>& fields, std::size_t index, bool copy);
  // Refuses an index launch or copy (`how`) over `over` when the handle is empty, or a
  // requirement names no region or partition, or a partition of fewer colors than `over`.
  static void check_index_over(partition over, const std::vector<requirement>& reqs, const char* how);
  // The requirements' fields, sorted, checked for what needs no region (none, twice, a reduction
  // without an operator).
  static std::vector<std::vector<field_id>> sorted_fields(const std::vector<requirement>& reqs);
  // Refuses fields of r that are not in its region, or whose size is not its reduction's.
  static void check_fields(const requirement& r, const region_node& node, const std::vector<field_id>& fields);
  // A task's analysis, in turn: `reqs` name regions, `fields` are theirs sorted and checked.
  // `memo`: what the last analysis of the same launch found, repeated if it may be, and replaced
  // by what this one finds (null: the launch is not remembered). `copy`: a copy's, [src, dst],
  // whose dst is the resource itself where it is attached and not acquired.
  launch_plan plan_point(const std::vector<requirement>& reqs, const std::vector<std::vector<field_id>>& fields,
                         event after, std::int64_t color, bool travels, launch_memo* memo, bool copy = false);
  // A copy's checks, in turn (region_copies.cpp); returns the fields of [src, dst], sorted.
  std::vector<std::vector<field_id>> check_copy(const requirement& src, const requirement& dst, const char* how);
  // Issues the transfer of a planned copy and triggers its task event after it.
  void move_planned(launch_plan& plan, const requirement& src, const requirement& dst);
  // The requirements' privileges, coherences, operators and fields as a number, the same for the
  // same ones (a remembered analysis's key); 0 when launches with them are not remembered
  // (a reduction, a program's mapper, an instance budget, --rill:launch-memo=off).
  std::uint32_t shape_of(const std::vector<requirement>& reqs, const std::vector<std::vector<field_id>>& fields);
  // Plans a launch as remembered, if the state is as the remembered analysis found it.
  std::optional<launch_plan> repeat(const launch_memo& m, event after, bool travels);
  // The end of a planned launch, analysed or repeated: its atomic requirements' reservations
  // (`locks`, sorted) held from its start to its end, counted, noted as its parent's sub-launch.
  void hold_and_count(launch_plan& out, std::span<const reservation> locks);
  // The nodes from the root of r's tree down to r, kept once made (nodes never change), so that a
  // launch on a region seen before takes no lock of the forest and copies no node pointer.
  const region_path& path_to(region r);
  int choose_rank(const std::vector<requirement>& reqs, std::span<const region_path* const> paths,
                  const std::vector<std::vector<field_id>>& fields, std::int64_t color);
  // An instance on `rank` covering the region at the end of `path`: the largest made for a region
  // that contains it (itself, an ancestor, an aliased region around it), else a new one.
  std::size_t instance_for(tree_state& tree, const region_path& path, int rank);
  // A new instance on `rank` for the region at the end of `path`.
  std::size_t make_instance(tree_state& tree, const region_path& path, int rank);
  // Write after read: whether requirement i of a launch may skip reads of other instances (an
  // exclusive write, at the top level, of a tree whose attachments are all acquired, the task's
  // only requirement on that tree); whether `home` has unfinished reads of `fields` of the points;
  // and an instance on `rank` for them other than `busy`, with no unfinished use (made if none).
  bool takes_war(const tree_state& tree, const std::vector<requirement>& reqs,
                 std::span<const region_path* const> paths, std::span<const std::size_t> homes, std::size_t i) const;
  bool read_unfinished(tree_state& tree, const region_path& path, std::size_t home,
                       const std::vector<field_id>& fields);
  std::size_t spare_instance(tree_state& tree, const region_path& path, int rank, std::size_t busy);
  // Copies into instance `home` the points of field f of the region at the end of `path` that it
  // does not hold valid, from instances that do: each copy after `after` and the conflicting
  // earlier uses of the points it copies (the writes that made them; they waited in turn for
  // whoever read the points where they are copied to). Instances in `last_resort` are copied from
  // only for points no other holds valid (a release avoids those of reads it does not wait for:
  // their data may have been copied there after the read's own precondition).
  void bring_in(tree_state& tree, const region_path& path, std::size_t home, field_id f, event after,
                std::span<const conflict> earlier, std::span<const std::size_t> last_resort = {});
  // Makes instance `home` the only one holding field f of `points` valid.
  void make_only_valid(tree_state& tree, const region_path& path, std::size_t home, field_id f,
                       const index_space<3>& points);
  // Applies to `home` the pending reductions of field f over the region at the end of `path`
  // (but those with operator `except_op`), once `home` holds those points' data.
  void apply_pending(tree_state& tree, const region_path& path, std::size_t home, field_id f, std::uint64_t except_op);
  // For each pending reduction of field f that take(p) accepts, the points of `space` it has not
  // been applied to yet: issue(p, points) applies them somewhere and returns the event, recorded
  // as one of p's applications. Returns the union of those points; retires the reductions then
  // applied everywhere. (Pending reductions reach an instance's data, or a parent's fold, this way.)
  template <class Take, class Issue>
  index_space<3> apply_unapplied(tree_state& tree, field_id f, const index_space<3>& space, Take&& take, Issue&& issue);
  // Forgets the pending reductions of field f over `space`: a write_discard replaces them.
  void discard_pending(tree_state& tree, const index_space<3>& space, field_id f);
  // Refuses acquire, release and detach from a launched task (an attachment is its issuer's, at
  // the top level); checked before the turn is taken.
  static void refuse_in_task(const char* how);
  // The tree, attachment and path of attached region r, in turn, at the top level (the caller's
  // context set to it); refused when r is not attached.
  struct attached {
    tree_state* tree;
    attachment* att;
    const region_path* path;
  };
  attached attachment_of(region r, const char* how);
  // Every recorded use of `fields` at points of the region at the end of `path`, with its end.
  static std::vector<conflict> uses_of(tree_state& tree, const region_path& path, std::span<const field_id> fields);
  // Records a use of the attachment's region by the attachment's own operation, which waited for
  // every earlier use (they are dropped) but those that ended in `kept`.
  static void record_own_use(tree_state& tree, const region_path& path, const attachment& a, privilege p, event done,
                             std::span<const event> kept = {});
  // A launch's instance `home` of the region at the end of `path`, under a restricted attachment:
  // the points of field f it mirrors are refreshed from the resource (before bring_in copies the
  // rest from it), and once the task has run -- `use` is its recorded use -- the resource is the
  // only valid instance again, given back what the task wrote first.
  void refresh_mirrors(tree_state& tree, const region_path& path, std::size_t home, field_id f, event after,
                       std::span<const conflict> earlier);
  void give_back(tree_state& tree, const region_path& path, std::size_t home, std::span<const field_id> fields,
                 bool wrote, region_user& use);
  // Refuses a reduction on attached points (its fold would apply to the resource's data), and a
  // write of points attached read_only; `how` names the launch or copy refused.
  static void refuse_on_attached(const tree_state& tree, const region_node& node, const std::vector<field_id>& fields,
                                 privilege p, const char* how);
  // release(): writes back into the resource what other instances hold newer, after `after`, then
  // restricts it again; returns the event of the resource holding it. With write after read on,
  // it does not wait for reads of other instances still running (Iris §IV-B, early release): their
  // ends go to `kept`, uses the caller must keep, and are noted as reads of their instances.
  event write_back(tree_state& tree, attachment& a, const region_path& path, event after, std::vector<event>& kept);
  // Gives `a` a new slot, the state its mirrors hold from now on: the resource's snapshot taken
  // after `after` (a.slot_taken, also returned).
  event new_slot(attachment& a, instance ext, event after);
  // Destroys instances on `rank` until `needed` more bytes fit in the budget there, least recently
  // chosen first, skipping those chosen by the launch being analysed and those that hold some
  // point of a field that no other instance holds valid. (Short of such instances, the budget is
  // exceeded.)
  void collect(int rank, std::size_t needed);
  // Notes a use of instance k that lasts until `until` (under a budget only).
  void note_use(tree_state& tree, std::size_t k, event until);
  // Drops the pending reductions applied everywhere, keeping their fold instances as spares (a
  // few per tree; the others are destroyed) once their last application is done.
  static void retire_applied(tree_state& tree);
  // A reduction's fold instance on `rank` over the region of `node`, a spare or a new one: its
  // fields hold the operator's identity once the event has triggered.
  static created_instance make_fold(tree_state& tree, const region_node& node, const std::vector<field_id>& fields,
                                    const redop_info& op, int rank);

  std::mutex turns_lock_;
  bool turn_taken_ = false;                               // under turns_lock_
  std::deque<user_event> waiting_turns_;                  // under turns_lock_
  std::shared_ptr<mapper> mapper_;                        // in turns
  launch_context top_;                                    // launches made outside launched tasks, in turns
  launch_context* ctx_ = &top_;                           // the caller's, in a turn
  std::unordered_map<std::uint64_t, region_path> paths_;  // by region id, in turns
  std::unordered_set<std::uint64_t> destroyed_;           // roots of destroyed trees, in turns
  std::vector<std::size_t> valid_bytes_;                  // choose_rank's, by rank, in turns
  const std::size_t budget_;                              // bytes per rank, 0: none
  const bool memo_;                                       // --rill:launch-memo
  bool war_;  // --rill:write-after-read, or set_write_after_read (in turn, as the mapper)
  std::map<std::vector<std::uint64_t>, std::uint32_t> shapes_;  // shape_of's numbers, in turns
  std::unordered_map<int, std::size_t> held_;                   // bytes of live instances by rank, in turns
  std::uint64_t clock_ = 0;                                     // launches analysed, in turns
  std::uint64_t next_slot_ = 1;                                 // attachments' snapshot slots, in turns
  // The resources attached, by identity (attachment::resource): by which attachments -- each its
  // region, whether it may write, and when it is a part of one region's raw file
  // (attach_options::within) that region, with its fields and layout (whole 0: not a part); and of
  // those detached, the detach's event, which a later attach of the same resource waits for (so
  // that it reads what was written). In turns.
  struct resource_user {
    std::uint64_t region = 0;
    bool writable = false;
    std::uint64_t whole = 0;
    std::vector<field_id> fields;
    layout lay = layout::soa();
  };
  std::unordered_map<std::string, std::vector<resource_user>> attached_resources_;
  std::unordered_map<std::string, event> detached_resources_;
  std::atomic<std::uint64_t> launches_{0}, repeated_{0}, instances_made_{0}, copies_{0}, bytes_copied_{0},
      reductions_{0}, collected_{0};
};

template <class Take, class Issue>
index_space<3> launch_analysis::apply_unapplied(tree_state& tree, field_id f, const index_space<3>& space, Take&& take,
                                                Issue&& issue) {
  index_space<3> applied;
  for (pending_reduction& p : tree.pending) {
    auto un = p.unapplied.find(f);
    if (un == p.unapplied.end() || !take(p) || !un->second.bounds().overlaps(space.bounds())) continue;
    const index_space<3> over = un->second.intersect(space);
    if (over.empty()) continue;
    p.applied.push_back(issue(p, over));
    reductions_.fetch_add(1, std::memory_order_relaxed);
    un->second = un->second.subtract(over);
    if (un->second.empty()) p.unapplied.erase(un);
    applied = applied.unite(over);
  }
  retire_applied(tree);
  return applied;
}

inline launch_analysis& analysis_here(const char* what) { return current_module<launch_analysis>(what); }

}  // namespace rill::detail
