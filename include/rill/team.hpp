// Teams and deferred collectives on them.
//
//   rill::team world = rill::team::world();
//   rill::future<long> total = world.allreduce(long{rill::rank_me()}, rill::reduce::sum<long>{});
//   rill::future<rill::team> half = world.split(rill::rank_me() % 2, rill::rank_me());
//   rill::team t = half.get();                       // the ranks of my parity, ordered by key
//   rill::future<std::vector<int>> all = t.gather(t.rank_me(), 0);
//   total.get();                                     // suspends the calling task's fiber only
//
// A team is an ordered set of ranks; a member knows its place (rank_me) and the size (rank_n).
// The handle is 8 bytes, trivially copyable, and valid on the team's members (the world team on
// every rank). Collectives are called by every member of the team, in the same order on every
// member (like MPI's); each returns a rill::future at once and never blocks the calling thread.
// Any number may be in flight; on each rank they complete in the order they were issued.
//
// Values are anything rill::am::send carries: trivially copyable types, std::string,
// std::vector, std::map, types with a serialize() member. Reductions take what barriers take
// (rill/reduce.hpp): rill::reduce::sum<T> and friends, a callable T(const T&, const T&) or a
// callable void(T& acc, const T& v); each rank passes its own operator, which must be the same
// everywhere, associative and (for a root other than 0) commutative.
//
// Misuse -- a root out of range, a call on a rank that is not a member -- throws
// rill::misuse_error at the call. Members calling different collectives at the same position of
// the sequence, or with different value types, stop the program with a message naming both. An
// exception thrown by a reduction operator stops the program too: a collective that failed on
// one member cannot complete on the others. See docs/collectives.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "rill/am.hpp"
#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/future.hpp"
#include "rill/rank.hpp"
#include "rill/reduce.hpp"
#include "rill/task.hpp"

namespace rill {

class team;

namespace detail {

inline constexpr std::uint64_t no_team_id = 0;
inline constexpr std::uint64_t world_team_id = 1;

// A rank's view of a team it belongs to.
struct team_info {
  std::uint64_t id = no_team_id;
  std::vector<int> members;  // world ranks, by team rank
  int me = -1;               // this rank's team rank
};

// A received value of a collective, type-erased until its task takes it.
struct coll_box {
  virtual ~coll_box() = default;
};
template <class T>
struct coll_value final : coll_box {
  explicit coll_value(T&& x) : v(std::move(x)) {}
  T v;
};

enum class coll_kind : std::uint8_t {
  barrier = 1,
  broadcast,
  reduce,
  allreduce,
  gather,
  allgather,
  alltoall,
  alltoallv,
  split
};

// What a member called: the kind of collective, its root (-1: none), the type of its values (a
// code of the type's name, 0: none) and, in a debug build of the program (NDEBUG unset), the type
// of a reduction's operator (0: not compared). Every message carries its sender's, and the
// receiver compares it with its own, so that members calling different collectives, or the same
// one with another root, value type or operator, stop the program instead of combining misread
// values. (The operator is left out of release builds: two lambdas that add are two types.)
struct coll_signature {
  coll_kind kind = coll_kind::barrier;
  std::int32_t root = -1;
  std::uint32_t type = 0;
  std::uint32_t op = 0;
  friend bool operator==(const coll_signature&, const coll_signature&) = default;
};

// The code of a value type: a hash of its (mangled) name, the same on every rank of one binary.
std::uint32_t coll_type_code(const char* mangled_name);
template <class T>
std::uint32_t coll_type_of() {
  static const std::uint32_t code = coll_type_code(typeid(T).name());
  return code;
}

// The operator's part of a reduction's signature: its type in a debug build, else nothing.
template <class Op>
std::uint32_t coll_op_of() {
#ifdef NDEBUG
  return 0;
#else
  return coll_type_of<Op>();
#endif
}

// What every message of a collective carries besides its value: the collective's name (team,
// sequence number), the step of its algorithm it belongs to (tag), and its sender's signature.
struct coll_header {
  std::uint64_t team = no_team_id;
  std::uint64_t seq = 0;
  std::uint32_t tag = 0;
  coll_signature sig;
};

// A collective issued on this rank: the team, its sequence number, and the completion event of
// the team's previous collective here (this one completes after it).
struct coll_ticket {
  std::shared_ptr<const team_info> info;
  std::uint64_t seq = 0;
  event previous;
};

// The calling rank's view of team `id`; throws misuse_error naming `what` unless it is a member.
std::shared_ptr<const team_info> team_find(std::uint64_t id, const char* what);
// Records a team the calling rank belongs to.
void team_add(std::shared_ptr<const team_info> info);
// The id of the team of `color` split from `parent` by its collective number `seq`: the same on
// every rank, with no communication.
std::uint64_t team_child_id(std::uint64_t parent, std::uint64_t seq, int color);
// Numbers a new collective of team `id` on the calling rank; `done` is its completion event.
coll_ticket coll_issue(std::uint64_t id, event done, const char* what);
// A collective's message from world rank `from` arrived.
void coll_deliver(const coll_header& h, int from, std::unique_ptr<coll_box> value);
// Sends the calling rank's buffered messages to world rank `to` now. A collective's steps are
// latency-bound, and its caller may compute right after its last send: left to the aggregation
// thresholds, that send would wait for the caller's next scheduling point.
void coll_send_now(int to);
// Waits (suspending the calling fiber) for the message (h.tag) of world rank `from`.
std::unique_ptr<coll_box> coll_receive(const coll_header& h, int from);
// The collective's task starts on this rank: messages for it are checked against its signature.
void coll_started(const coll_header& h);
// The collective took all its messages on this rank.
void coll_finished(const coll_header& h);
// Fatal errors, naming the collective and the ranks.
[[noreturn]] void coll_type_mismatch(const coll_header& h, int from);
[[noreturn]] void coll_failed(const coll_header& h, const char* what, const char* error);
// Waits for a previous collective's completion (poisoned or not).
void coll_wait_previous(event previous);

// A collective's task on one rank: who is who, and its messages (by team rank).
class coll_context {
 public:
  coll_context(const coll_ticket& t, coll_signature sig) : info_(t.info) {
    h_.team = t.info->id;
    h_.seq = t.seq;
    h_.sig = sig;
  }
  int n() const { return static_cast<int>(info_->members.size()); }
  int me() const { return info_->me; }
  const coll_header& header() const { return h_; }

  // Sends v to team rank `to` (never this rank) as step `tag` of the collective.
  template <class V>
  void send(int to, std::uint32_t tag, const V& v) const {
    coll_header h = h_;
    h.tag = tag;
    const int dest = info_->members[static_cast<std::size_t>(to)];
    am::send(
        dest,
        [](const coll_header& hh, V&& x) {
          coll_deliver(hh, am::sender(), std::make_unique<coll_value<V>>(std::move(x)));
        },
        h, v);
    coll_send_now(dest);
  }
  // The value team rank `from` sent as step `tag`: waits for it.
  template <class V>
  V recv(int from, std::uint32_t tag) const {
    coll_header h = h_;
    h.tag = tag;
    const int world_from = info_->members[static_cast<std::size_t>(from)];
    std::unique_ptr<coll_box> b = coll_receive(h, world_from);
    auto* v = dynamic_cast<coll_value<V>*>(b.get());
    if (!v) coll_type_mismatch(h, world_from);
    return std::move(v->v);
  }

 private:
  std::shared_ptr<const team_info> info_;
  coll_header h_;
};

// Binomial trees rooted at team rank `root`: in relative ranks (rel = me - root mod n), the
// parent of rel > 0 is rel with its lowest set bit cleared, and the children of rel are rel + m
// for the powers of two m below rel's lowest set bit (below n for the root). The subtree of
// child rel + m is [rel + m, rel + 2m), so children in increasing m cover increasing ranks.
inline int tree_rel(const coll_context& c, int root) { return (c.me() - root + c.n()) % c.n(); }
inline int tree_abs(const coll_context& c, int root, int rel) { return (rel + root) % c.n(); }

template <class T>
T tree_broadcast(const coll_context& c, std::uint32_t tag, int root, T value) {
  const int n = c.n(), rel = tree_rel(c, root);
  if (rel != 0) value = c.recv<T>(tree_abs(c, root, rel & (rel - 1)), tag);
  int m = 1;
  while (m < n && !(rel & m)) m <<= 1;
  for (m >>= 1; m >= 1; m >>= 1)  // the largest subtree first
    if (rel + m < n) c.send(tree_abs(c, root, rel + m), tag, value);
  return value;
}

// The reduction of the subtree's values, in relative rank order; the full one at the root.
template <class T, class Op>
T tree_reduce(const coll_context& c, std::uint32_t tag, int root, T acc, Op& op) {
  const int n = c.n(), rel = tree_rel(c, root);
  for (int m = 1; m < n && !(rel & m); m <<= 1) {
    if (rel + m >= n) break;
    const T v = c.recv<T>(tree_abs(c, root, rel + m), tag);
    apply_reduction(op, acc, v);
  }
  if (rel != 0) c.send(tree_abs(c, root, rel & (rel - 1)), tag, acc);
  return acc;
}

// Every member's value, by team rank, at the root; empty elsewhere.
template <class T>
std::vector<T> tree_gather(const coll_context& c, std::uint32_t tag, int root, T mine) {
  const int n = c.n(), rel = tree_rel(c, root);
  std::vector<T> sub;
  sub.push_back(std::move(mine));
  for (int m = 1; m < n && !(rel & m); m <<= 1) {
    if (rel + m >= n) break;
    std::vector<T> part = c.recv<std::vector<T>>(tree_abs(c, root, rel + m), tag);
    std::move(part.begin(), part.end(), std::back_inserter(sub));
  }
  if (rel != 0) {
    c.send(tree_abs(c, root, rel & (rel - 1)), tag, sub);
    return {};
  }
  // sub[i] is the value of relative rank i, team rank (i + root) mod n.
  std::rotate(sub.begin(), sub.begin() + (n - root) % n, sub.end());
  return sub;
}

// Direct exchange: element i goes to team rank i; the result holds what each rank sent here.
template <class T>
std::vector<T> exchange(const coll_context& c, std::vector<T> out) {
  const int n = c.n(), me = c.me();
  for (int k = 1; k < n; ++k) {  // starting after this rank, so that not all send to rank 0 first
    const int to = (me + k) % n;
    c.send(to, 0, out[static_cast<std::size_t>(to)]);
    out[static_cast<std::size_t>(to)] = T();  // release the sent data early
  }
  for (int k = 1; k < n; ++k) {
    const int from = (me - k + n) % n;
    out[static_cast<std::size_t>(from)] = c.recv<T>(from, 0);
  }
  return out;
}

// Starts a collective's task on this rank and returns its future: body(context) runs the
// algorithm; the future completes with its result after the team's previous collective here.
template <class R, class Body>
future<R> coll_launch(const std::shared_ptr<const team_info>& info, coll_signature sig, const char* what, Body&& body) {
  promise<R> p;
  future<R> f = p.get_future();
  coll_ticket t = coll_issue(info->id, f.as_event(), what);
  task_submit(make_task([p, t = std::move(t), sig, what, b = std::forward<Body>(body)]() mutable {
    coll_context c(t, sig);
    coll_started(c.header());
    std::optional<std::conditional_t<std::is_void_v<R>, bool, R>> result;
    try {
      if constexpr (std::is_void_v<R>) {
        b(c);
        result.emplace(true);
      } else {
        result.emplace(b(c));
      }
    } catch (const std::exception& e) {
      coll_failed(c.header(), what, e.what());
    }
    coll_finished(c.header());
    coll_wait_previous(t.previous);
    if constexpr (std::is_void_v<R>)
      p.put();
    else
      p.put(std::move(*result));
  }));
  return f;
}

// A team rank given as a root, checked.
void coll_check_root(const team_info& info, int root, const char* what);

// Messages of a dissemination barrier carry nothing but their header.
struct coll_nothing {};

// One rank's part of a split.
struct split_entry {
  int color;
  int key;
};

}  // namespace detail

class team {
 public:
  // No team.
  constexpr team() = default;
  // Every rank, in rank order.
  static constexpr team world() { return team(detail::world_team_id); }

  bool valid() const { return id_ != detail::no_team_id; }
  // The team's id: the same on every member.
  std::uint64_t id() const { return id_; }
  friend bool operator==(const team&, const team&) = default;

  // The calling rank's place in the team, and the team's size (on a member; misuse_error else).
  int rank_me() const { return id_ == detail::world_team_id ? rill::rank_me() : info("rill::team::rank_me")->me; }
  int rank_n() const {
    return id_ == detail::world_team_id ? rill::rank_n() : static_cast<int>(info("rill::team::rank_n")->members.size());
  }
  // The world rank of team rank i.
  int world_rank(int i) const {
    auto in = info("rill::team::world_rank");
    if (i < 0 || i >= static_cast<int>(in->members.size()))
      throw misuse_error("rill::team::world_rank: no team rank " + std::to_string(i));
    return in->members[static_cast<std::size_t>(i)];
  }

  // Collective: the members that pass the same color >= 0 form a new team, ordered by key, then
  // by world rank. Members passing a negative color get an invalid team (valid() == false).
  future<team> split(int color, int key) const {
    auto in = info("rill::team::split");
    return detail::coll_launch<team>(
        in, {detail::coll_kind::split}, "rill::team::split", [color, key](const detail::coll_context& c) {
          std::vector<detail::split_entry> all = detail::tree_gather(c, 0, 0, detail::split_entry{color, key});
          all = detail::tree_broadcast(c, 1, 0, std::move(all));
          if (color < 0) return team();
          auto parent = detail::team_find(c.header().team, "rill::team::split");
          std::vector<std::pair<detail::split_entry, int>> mine;  // (entry, world rank)
          for (int i = 0; i < c.n(); ++i)
            if (all[static_cast<std::size_t>(i)].color == color)
              mine.emplace_back(all[static_cast<std::size_t>(i)], parent->members[static_cast<std::size_t>(i)]);
          std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) {
            return std::tie(a.first.key, a.second) < std::tie(b.first.key, b.second);
          });
          auto child = std::make_shared<detail::team_info>();
          child->id = detail::team_child_id(c.header().team, c.header().seq, color);
          for (const auto& e : mine) {
            if (e.second == rill::rank_me()) child->me = static_cast<int>(child->members.size());
            child->members.push_back(e.second);
          }
          const std::uint64_t id = child->id;
          detail::team_add(std::move(child));
          return team(id);
        });
  }

  // Ready once every member has called barrier (dissemination: ceil(log2 n) rounds).
  future<void> barrier() const {
    auto in = info("rill::team::barrier");
    return detail::coll_launch<void>(in, {detail::coll_kind::barrier}, "rill::team::barrier",
                                     [](const detail::coll_context& c) {
                                       const int n = c.n(), me = c.me();
                                       std::uint32_t round = 0;
                                       for (int d = 1; d < n; d <<= 1, ++round) {
                                         c.send((me + d) % n, round, detail::coll_nothing{});
                                         (void)c.recv<detail::coll_nothing>((me - d + n) % n, round);
                                       }
                                     });
  }

  // Root's value, on every member (the others' `value` is ignored). Binomial tree.
  template <class T>
  future<T> broadcast(T value, int root) const {
    auto in = info("rill::team::broadcast");
    detail::coll_check_root(*in, root, "rill::team::broadcast");
    return detail::coll_launch<T>(in, {detail::coll_kind::broadcast, root, detail::coll_type_of<T>()},
                                  "rill::team::broadcast",
                                  [v = std::move(value), root](const detail::coll_context& c) mutable {
                                    return detail::tree_broadcast(c, 0, root, std::move(v));
                                  });
  }

  // At root: the members' values combined with op (in team rank order starting at root). On the
  // others: the partial combination of their subtree, ready once it has been passed on.
  template <class T, class Op>
  future<T> reduce(T value, Op op, int root) const {
    auto in = info("rill::team::reduce");
    detail::coll_check_root(*in, root, "rill::team::reduce");
    return detail::coll_launch<T>(
        in, {detail::coll_kind::reduce, root, detail::coll_type_of<T>(), detail::coll_op_of<Op>()},
        "rill::team::reduce", [v = std::move(value), op = std::move(op), root](const detail::coll_context& c) mutable {
          return detail::tree_reduce(c, 0, root, std::move(v), op);
        });
  }

  // The members' values combined with op (in team rank order), on every member: a reduce to team
  // rank 0, then a broadcast.
  template <class T, class Op>
  future<T> allreduce(T value, Op op) const {
    auto in = info("rill::team::allreduce");
    return detail::coll_launch<T>(
        in, {detail::coll_kind::allreduce, -1, detail::coll_type_of<T>(), detail::coll_op_of<Op>()},
        "rill::team::allreduce", [v = std::move(value), op = std::move(op)](const detail::coll_context& c) mutable {
          return detail::tree_broadcast(c, 1, 0, detail::tree_reduce(c, 0, 0, std::move(v), op));
        });
  }

  // At root: every member's value, by team rank (empty on the others). Binomial tree.
  template <class T>
  future<std::vector<T>> gather(T value, int root) const {
    auto in = info("rill::team::gather");
    detail::coll_check_root(*in, root, "rill::team::gather");
    return detail::coll_launch<std::vector<T>>(in, {detail::coll_kind::gather, root, detail::coll_type_of<T>()},
                                               "rill::team::gather",
                                               [v = std::move(value), root](const detail::coll_context& c) mutable {
                                                 return detail::tree_gather(c, 0, root, std::move(v));
                                               });
  }

  // Every member's value, by team rank, on every member: a gather to team rank 0, then a
  // broadcast.
  template <class T>
  future<std::vector<T>> allgather(T value) const {
    auto in = info("rill::team::allgather");
    return detail::coll_launch<std::vector<T>>(
        in, {detail::coll_kind::allgather, -1, detail::coll_type_of<T>()}, "rill::team::allgather",
        [v = std::move(value)](const detail::coll_context& c) mutable {
          return detail::tree_broadcast(c, 1, 0, detail::tree_gather(c, 0, 0, std::move(v)));
        });
  }

  // one_per_rank[i] goes to team rank i; the result's element i is what team rank i sent here.
  // one_per_rank must have rank_n() elements.
  template <class T>
  future<std::vector<T>> alltoall(std::vector<T> one_per_rank) const {
    auto in = info("rill::team::alltoall");
    check_per_rank(*in, one_per_rank.size(), "rill::team::alltoall");
    return detail::coll_launch<std::vector<T>>(in, {detail::coll_kind::alltoall, -1, detail::coll_type_of<T>()},
                                               "rill::team::alltoall",
                                               [v = std::move(one_per_rank)](const detail::coll_context& c) mutable {
                                                 return detail::exchange(c, std::move(v));
                                               });
  }

  // MPI_Alltoallv with the counts in the shape: per_rank[i] (any length, empty too) goes to team
  // rank i; the result's element i is the vector team rank i sent here. per_rank must have
  // rank_n() elements.
  template <class T>
  future<std::vector<std::vector<T>>> alltoallv(std::vector<std::vector<T>> per_rank) const {
    auto in = info("rill::team::alltoallv");
    check_per_rank(*in, per_rank.size(), "rill::team::alltoallv");
    return detail::coll_launch<std::vector<std::vector<T>>>(
        in, {detail::coll_kind::alltoallv, -1, detail::coll_type_of<T>()}, "rill::team::alltoallv",
        [v = std::move(per_rank)](const detail::coll_context& c) mutable { return detail::exchange(c, std::move(v)); });
  }

 private:
  explicit constexpr team(std::uint64_t id) : id_(id) {}
  std::shared_ptr<const detail::team_info> info(const char* what) const { return detail::team_find(id_, what); }
  static void check_per_rank(const detail::team_info& in, std::size_t size, const char* what) {
    if (size != in.members.size())
      throw misuse_error(std::string(what) + ": " + std::to_string(size) + " elements for a team of " +
                         std::to_string(in.members.size()) + " ranks (one per rank)");
  }

  std::uint64_t id_ = detail::no_team_id;
};
static_assert(std::is_trivially_copyable_v<team> && sizeof(team) == 8);

}  // namespace rill
