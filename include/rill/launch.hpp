// Task launches on logical regions (Iris §II-B/C): a task says which regions it uses, which of
// their fields and how (its privilege); the runtime finds what it must wait for, where it runs,
// and the data it needs there, and returns without waiting for any of it (the issuer waits only
// for its rank's analysis to be free, a node of another rank's tree the first time, or room to
// send).
//
//   constexpr rill::field<double> t{1};
//   rill::event a = rill::launch(init, {rill::req(grid, {t}, rill::privilege::write_discard)});
//   rill::event b = rill::index_launch(step, strips, {rill::req(strips, {t}, rill::privilege::read_write)});
//   rill::event c = rill::launch(sum, {rill::req(grid, {t}, rill::privilege::read_only)});  // after b
//   rill::index_launch(spread, ghosts, {rill::req(ghosts, {t}, rill::reduce_with<rill::reduce::sum<double>>())});
//
//   void step(const rill::physical_regions& rs, std::size_t color) {
//     auto v = rs[0].write<double, 2>(t);                     // an accessor over its points
//     ...                                                     // (rs[0].reduce<Op, 2>(t) under reduce)
//   }
//
// Launches are analysed in the order the issuing rank makes them (program order): a launch waits
// for the earlier ones whose regions share points with its own (found through the region tree,
// rill::regions_overlap), whose fields meet its own, and whose privileges conflict with its own
// (two reads never do, nor two reductions with the same operator) -- unless both use one instance
// with atomic coherence (then they only exclude each other, through a reservation of the
// instance) or with simultaneous coherence. A reduction folds into an instance of its own, filled
// with the operator's identity; the runtime applies it to the region's data when a later launch
// needs that data (or reduces with another operator), so reductions into shared points from many
// tasks run at once and move only their results.
// Each requirement is mapped to an instance on the rank the task runs on: one made there for the
// region or a region above it is reused, and only points it does not hold valid data for are
// copied in, from instances that do (rill/copy.hpp). A write makes the instance it went to the
// only valid one for its points. Two requirements of one launch that share points and fields,
// one of them writing, must map to one instance (else rill::misuse_error). Where a task runs is
// the mapper's choice (rill::set_mapper): by default the rank whose instances hold most of its
// data valid, else the issuing rank (a single launch) or color modulo the ranks (a point of an
// index launch). A launched task's own launches are its sub-launches: analysed on its rank,
// within its regions, fields and privileges, and it ends when they have. See docs/regions.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rill/detail/type_id.hpp"
#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/field_space.hpp"
#include "rill/instance.hpp"
#include "rill/proc.hpp"
#include "rill/reduction.hpp"
#include "rill/region.hpp"
#include "rill/reservation.hpp"

namespace rill {

enum class privilege : std::uint8_t {
  read_only,      // reads; commutes with other reads
  read_write,     // reads and writes
  write_discard,  // writes every point it keeps; what was there before is not brought in
  reduce,         // folds values into the points with an operator; commutes with the same operator's
};

namespace detail {
// A reduction operator as the analysis handles it: its code behind plain pointers.
struct redop_info {
  std::uint64_t id;  // from the operator's type name: the same on every rank of one program
  std::size_t lhs_bytes;
  std::size_t rhs_bytes;
  row_combiner apply;               // right-hand sides applied to elements, atomically
  row_combiner fold;                // right-hand sides folded into others (a fold instance's), atomically
  std::vector<std::byte> identity;  // Op::identity's bytes
};
template <bulk_reduction_op Op>
const redop_info* redop_of() {
  static const redop_info info{value_type_id<Op>(),           sizeof(typename Op::lhs),
                               sizeof(typename Op::rhs),      combiner_of<Op, true>(false),
                               combiner_of<Op, false>(false), bytes_of(typename Op::rhs(Op::identity))};
  return &info;
}
}  // namespace detail

// privilege::reduce with operator Op (a rill::bulk_reduction_op, such as rill::reduce::sum<double>).
struct reduce_privilege {
  const detail::redop_info* op;
};
template <bulk_reduction_op Op>
reduce_privilege reduce_with() {
  return {detail::redop_of<Op>()};
}

// How a launch may meet others that use the same data (Iris §II-B). Relaxed coherence applies
// between uses of the same instance only: uses mapped to different instances keep program order.
enum class coherence : std::uint8_t {
  exclusive,     // in program order with every launch it conflicts with
  atomic,        // may run before earlier atomic uses of the same instance, never at the same time
  simultaneous,  // may run at the same time as other simultaneous uses of the same instance
};

// What a task asks of a region: the region (or, in an index launch, a partition whose subregion of
// the point's color is meant), some of its fields, a privilege and a coherence.
struct requirement {
  region reg;
  partition part;
  std::vector<field_id> fields;
  privilege priv = privilege::read_write;
  coherence coh = coherence::exclusive;
  const detail::redop_info* redop = nullptr;  // the operator of privilege::reduce
};
inline requirement req(region r, std::vector<field_id> fields, privilege p, coherence c = coherence::exclusive) {
  return {r, {}, std::move(fields), p, c};
}
inline requirement req(partition part, std::vector<field_id> fields, privilege p, coherence c = coherence::exclusive) {
  return {{}, part, std::move(fields), p, c};
}
inline requirement req(region r, std::vector<field_id> fields, reduce_privilege p, coherence c = coherence::exclusive) {
  return {r, {}, std::move(fields), privilege::reduce, c, p.op};
}
inline requirement req(partition part, std::vector<field_id> fields, reduce_privilege p,
                       coherence c = coherence::exclusive) {
  return {{}, part, std::move(fields), privilege::reduce, c, p.op};
}

// Element T of a field, read only.
template <class T, int N>
class read_accessor {
 public:
  explicit read_accessor(accessor<T, N> a) : a_(a) {}
  const T& operator[](const point<N>& p) const { return a_[p]; }
  const T* ptr(const point<N>& p) const { return a_.ptr(p); }
  const rect<N>& bounds() const { return a_.bounds(); }
  // Bytes between neighbouring points in dimension d.
  std::ptrdiff_t stride(int d) const { return a_.stride(d); }

 private:
  accessor<T, N> a_;
};

// A region as a task holds it: the region, the instance its data is in on the task's rank (under
// privilege::reduce, the task's own fold instance), and the privilege the task has.
struct physical_region {
  region reg;
  instance inst;
  privilege priv = privilege::read_only;
  std::uint64_t redop = 0;  // the operator's id under privilege::reduce
  // The fields the task has: bit i for the i-th field (by ascending id) of the region's field
  // space (the first 64; sub-launches may use only those).
  std::uint64_t field_bits = 0;

  // Throws rill::misuse_error under reduce (the instance holds partial reductions, not the data).
  template <class T, int N>
  read_accessor<T, N> read(field<T> f) const {
    if (priv == privilege::reduce) refuse("read", "reduce-only");
    return read_accessor<T, N>(accessor<T, N>(inst, f));
  }
  // Throws rill::misuse_error under read_only and reduce.
  template <class T, int N>
  accessor<T, N> write(field<T> f) const {
    if (priv == privilege::read_only) refuse("write", "read-only");
    if (priv == privilege::reduce) refuse("write", "reduce-only");
    return accessor<T, N>(inst, f);
  }
  // Folds values into field f (elements of Op::lhs) with Op; atomic unless Exclusive (the
  // promise that one thread reduces at a time). Throws rill::misuse_error unless the task has
  // the region with privilege::reduce and this operator.
  template <bulk_reduction_op Op, int N, bool Exclusive = false>
  reducer<Op, N, Exclusive> reduce(field<typename Op::lhs> f) const {
    if (priv != privilege::reduce || redop != detail::redop_of<Op>()->id) refuse("reduce", "without this operator");
    return reducer<Op, N, Exclusive>(inst, f.id);
  }

 private:
  [[noreturn]] void refuse(const char* how, const char* held) const {
    throw misuse_error(std::string("rill::physical_region::") + how + ": the task has region " +
                       std::to_string(reg.id()) + " " + held);
  }
};
static_assert(std::is_trivially_copyable_v<physical_region>);
using physical_regions = std::vector<physical_region>;

// Where a task runs. `valid_bytes[r]`: bytes of its requirements' fields that instances of rank r
// hold valid now; `color`: the point's color in an index launch (-1 for a single launch).
struct mapping_query {
  const std::vector<requirement>& reqs;
  std::span<const std::size_t> valid_bytes;  // one per rank
  std::int64_t color;
};
class mapper {
 public:
  virtual ~mapper() = default;
  // The rank to run the task on (0 .. rank_n()-1). Called during the rank's analysis: it must not
  // launch or set a mapper itself.
  virtual int map_task(const mapping_query& q) = 0;
};
// The mapper a rank uses unless set otherwise: the rank with the most valid bytes; with none
// anywhere, the issuing rank for a single launch and color % rank_n() for a point of an index
// launch. A program's mapper can extend it, deciding some tasks itself and leaving it the others.
class default_mapper : public mapper {
 public:
  int map_task(const mapping_query& q) override;
};
// The mapper of the calling rank's launches from now on (null: the default).
void set_mapper(std::shared_ptr<mapper> m);
// Whether the calling rank's launches from now on let a write run beside earlier reads of other
// instances of its points (Iris's write-after-read; --rill:write-after-read sets the default).
void set_write_after_read(bool on);

// What the calling rank's launches have done so far.
struct launch_counts {
  std::uint64_t launches = 0;             // tasks and region copies launched (points of index ones each count)
  std::uint64_t launches_repeated = 0;    // of them, planned as a remembered analysis (--rill:launch-memo)
  std::uint64_t instances_made = 0;       // instances made for them
  std::uint64_t copies = 0;               // copies issued to bring data where a task runs
  std::uint64_t bytes_copied = 0;         // bytes those copies move
  std::uint64_t reductions = 0;           // applications of reductions to the regions' data
  std::uint64_t instances_collected = 0;  // instances destroyed to keep under --rill:instance-budget
};
launch_counts launch_counts_here();

namespace detail {
// A task's physical regions, made once and shared: by its plan, its task and a remembered
// analysis (a repeated launch copies no list, and the task's callable, holding this pointer,
// stays small enough for its pooled record). A task mapped to another rank is sent the list.
using shared_regions = std::shared_ptr<const physical_regions>;

// What a launch's analysis decided: the rank, what the task waits for, its physical regions,
// the task's event, which the launch's uses are recorded under (made by spawn_event), and the
// launch's: the task's, or after it the writes back of what it wrote to attached resources.
struct launch_plan {
  int rank;
  event pre;
  shared_regions regions;
  event done;
  event finished;
};
// Analyses a launch of `reqs` (regions, not partitions) in program order on the calling rank.
// `travels`: the task's callable can run on another rank (else a mapper's choice of another rank
// is refused before anything is recorded).
launch_plan plan_launch(const std::vector<requirement>& reqs, event after, bool travels);
// Analyses the points of an index launch over `over` in color order, each point's requirements on
// partitions replaced by their subregions of its color, and calls spawn(plan, color) for each;
// returns the event of all of them. Refuses requirements' partitions with fewer colors than
// `over` before any point is planned.
event plan_index_launch(partition over, const std::vector<requirement>& reqs, event after, bool travels,
                        const std::function<void(launch_plan&, std::size_t)>& spawn);
// Poisons a planned task's event when the task could not be spawned, so that later launches that
// wait for it fail instead of hanging.
void refuse_planned(event done, const char* reason);

struct launch_context;
// Around a launched task's body: the launches the body makes are its sub-launches, analysed on
// its rank within its regions (docs/regions.md, "Sub-launches"), and the task ends once they
// have, with what they wrote in its instances.
class launched_body {
 public:
  // Makes the calling fiber's launches sub-launches of the task that has `regions`.
  explicit launched_body(const physical_regions& regions);
  ~launched_body();
  launched_body(const launched_body&) = delete;
  launched_body& operator=(const launched_body&) = delete;
  // After the body: waits for the sub-launches, with their results brought into the task's
  // instances, and rethrows `error` (what the body threw) or else what poisoned them.
  void end(std::exception_ptr error);

  const physical_regions& regions() const { return regions_; }
  // The analysis state of the sub-launches: made by the first one, in its rank's analysis.
  std::unique_ptr<launch_context> context;

 private:
  const physical_regions& regions_;
  void* outer_;  // the fiber's launch parent before (a task run nested on the fiber has none)
};

// A launched task's callable: the body, between launched_body's start and end. (A function
// pointer is held as its offset in the program's code, as proc::spawn sends one.)
template <class F>
class launched_task {
 public:
  explicit launched_task(F fn) : held_(hold(std::move(fn))) {}

  template <class... Rest>
  requires std::is_invocable_v<F&, const physical_regions&, Rest&&...>
  void operator()(shared_regions shared, Rest&&... rest) { run(*shared, std::forward<Rest>(rest)...); }
  template <class... Rest>
  requires std::is_invocable_v<F&, const physical_regions&, Rest&&...>
  void operator()(physical_regions sent, Rest&&... rest) { run(sent, std::forward<Rest>(rest)...); }

 private:
  template <class... Rest>
  void run(const physical_regions& regions, Rest&&... rest) {
    launched_body body(regions);
    std::exception_ptr error;
    try {
      if constexpr (std::is_pointer_v<F>)
        reinterpret_cast<F>(const_cast<void*>(code_address(held_)))(regions, std::forward<Rest>(rest)...);
      else
        held_(regions, std::forward<Rest>(rest)...);
    } catch (...) {
      error = std::current_exception();
    }
    body.end(std::move(error));
  }

  using held = std::conditional_t<std::is_pointer_v<F>, std::intptr_t, F>;
  static held hold(F fn) {
    if constexpr (std::is_pointer_v<F>)
      return code_offset(reinterpret_cast<const void*>(fn));
    else
      return fn;
  }
  [[no_unique_address]] held held_;  // (an empty lambda keeps the task empty: nothing is sent)
};

template <class F, class... Args>
event spawn_planned(launch_plan& plan, F&& fn, Args&&... args) {
  try {
    launched_task<std::decay_t<F>> task(std::forward<F>(fn));
    // On the issuing rank the task shares the plan's list (spawned as proc::spawn does there:
    // proc::spawn itself would ask every argument to be sendable); elsewhere it is sent a copy.
    if (plan.rank == rank_me()) {
      spawn_when(
          plan.pre, plan.done,
          [task, regions = std::move(plan.regions), tup = std::make_tuple(std::forward<Args>(args)...)]() mutable {
            std::apply([&](auto&&... a) { task(std::move(regions), std::move(a)...); }, std::move(tup));
          });
    } else {
      proc(plan.rank).spawn_into(plan.done, after(plan.pre), std::move(task), *plan.regions,
                                 std::forward<Args>(args)...);
    }
  } catch (const std::exception& e) {
    refuse_planned(plan.done, e.what());
    throw;
  }
  return plan.finished;
}
}  // namespace detail

// Runs fn(regions, args...) once the earlier launches it conflicts with, its data and `pre` are
// ready; returns its completion event at once.
template <class F, class... Args>
event launch(after pre, F&& fn, const std::vector<requirement>& reqs, Args&&... args) {
  detail::launch_plan plan = detail::plan_launch(reqs, pre.ev, detail::shippable<std::decay_t<F>>);
  return detail::spawn_planned(plan, std::forward<F>(fn), std::forward<Args>(args)...);
}
template <class F, class... Args>
requires(!std::is_same_v<std::decay_t<F>, after>) event
    launch(F&& fn, const std::vector<requirement>& reqs, Args&&... args) {
  return launch(after(event::none()), std::forward<F>(fn), reqs, std::forward<Args>(args)...);
}

// Runs fn(regions, color, args...) for every color of `over`, each point with its requirements'
// partitions replaced by their subregions of that color; returns the event of all of them.
template <class F, class... Args>
event index_launch(after pre, F fn, partition over, const std::vector<requirement>& reqs, const Args&... args) {
  return detail::plan_index_launch(
      over, reqs, pre.ev, detail::shippable<F>,
      [&](detail::launch_plan& plan, std::size_t c) { detail::spawn_planned(plan, fn, c, args...); });
}
template <class F, class... Args>
requires(!std::is_same_v<std::decay_t<F>, after>) event
    index_launch(F fn, partition over, const std::vector<requirement>& reqs, const Args&... args) {
  return index_launch(after(event::none()), fn, over, reqs, args...);
}

}  // namespace rill
