// Teams and the mailboxes of collectives (rill/team.hpp): each rank's table, and the non-template
// half of the public API.
#include "sync/team_table.hpp"

#include <fmt/format.h>

#include "common/demangle.hpp"
#include "common/hash_mix.hpp"
#include "common/log.hpp"
#include "messages/messenger.hpp"
#include "sync/sync_module.hpp"

namespace rill::detail {

namespace {

const char* kind_name(std::uint8_t k) {
  static constexpr const char* names[] = {"?",      "barrier",   "broadcast", "reduce",    "allreduce",
                                          "gather", "allgather", "alltoall",  "alltoallv", "split"};
  return k < std::size(names) ? names[k] : "?";
}

std::string name_of(const coll_header& h) { return fmt::format("collective #{} of team {:#x}", h.seq, h.team); }

// The names of the value types this process has used in collectives, by code: the same binary
// runs everywhere, so a code names the same type on every rank (a type only the sender used is
// shown as its code).
std::mutex type_names_lock;
std::unordered_map<std::uint32_t, std::string>& type_names() {
  static std::unordered_map<std::uint32_t, std::string> names;
  return names;
}

std::string type_name(std::uint32_t code) {
  std::lock_guard g(type_names_lock);
  auto it = type_names().find(code);
  return it != type_names().end() ? it->second : fmt::format("type #{:08x}", code);
}

// What a member called, for messages: "broadcast<long> (root 0)".
std::string call_of(const coll_signature& s) {
  std::string out = kind_name(static_cast<std::uint8_t>(s.kind));
  if (s.type != 0) out += "<" + type_name(s.type) + ">";
  if (s.root >= 0) out += fmt::format(" (root {})", s.root);
  if (s.op != 0) out += " with operator " + type_name(s.op);
  return out;
}

constexpr const char* same_calls =
    "members must call the same collectives, with the same root, value type and (checked in debug builds) "
    "operator, in the same order";

// Finished collectives of a team remembered with their signatures after all before them finished.
constexpr std::size_t recent_finished = 64;

}  // namespace

team_table::team_table(int me, int size) : me_(me) {
  auto world = std::make_shared<team_info>();
  world->id = world_team_id;
  world->me = me;
  for (int r = 0; r < size; ++r) world->members.push_back(r);
  teams_[world_team_id].info = std::move(world);
}

std::shared_ptr<const team_info> team_table::find(std::uint64_t id, const char* what) {
  if (id == no_team_id) throw misuse_error(fmt::format("{}: not a team (a default-constructed rill::team)", what));
  std::lock_guard g(m_);
  auto it = teams_.find(id);
  if (it == teams_.end()) throw misuse_error(fmt::format("{}: rank {} is not a member of team {:#x}", what, me_, id));
  return it->second.info;
}

void team_table::add(std::shared_ptr<const team_info> info) {
  std::lock_guard g(m_);
  auto [it, fresh] = teams_.try_emplace(info->id);
  if (!fresh) fatal("rank {}: two teams have the id {:#x} (a split's id collided)", me_, info->id);
  it->second.info = std::move(info);
}

coll_ticket team_table::issue(std::uint64_t id, event done, const char* what) {
  std::lock_guard g(m_);
  auto it = teams_.find(id);
  if (it == teams_.end()) throw misuse_error(fmt::format("{}: rank {} is not a member of team {:#x}", what, me_, id));
  team_state& t = it->second;
  coll_ticket ticket{t.info, t.next_seq++, t.last};
  t.last = done;
  return ticket;
}

void team_table::deliver(const coll_header& h, int from, std::unique_ptr<coll_box> value) {
  latch* wake = nullptr;
  {
    std::lock_guard g(m_);
    mailbox& mb = mailboxes_[{h.team, h.seq}];
    const message_key key{h.tag, from};
    if (auto f = finished_.find(h.team); f != finished_.end()) {
      const finished_collectives& done = f->second;
      if (auto a = done.above.find(h.seq); a != done.above.end()) late_message(h, from, &a->second);
      if (h.seq < done.below) {
        auto r = done.recent.find(h.seq);
        late_message(h, from, r == done.recent.end() ? nullptr : &r->second);
      }
    }
    if (mb.mine && *mb.mine != h.sig) mismatch(h, from, *mb.mine);
    auto [it, fresh] = mb.messages.try_emplace(key, held_message{h.sig, std::move(value)});
    if (!fresh) fatal("rank {}: {} received step {} from rank {} twice", me_, name_of(h), h.tag, from);
    if (mb.waiter && mb.wanted == key) std::swap(wake, mb.waiter);
  }
  if (wake) wake->count_down();
}

std::unique_ptr<coll_box> team_table::receive(const coll_header& h, int from) {
  const message_key key{h.tag, from};
  std::unique_lock g(m_);
  mailbox& mb = mailboxes_[{h.team, h.seq}];  // stays put: only this collective's task erases it
  auto it = mb.messages.find(key);
  if (it == mb.messages.end()) {
    latch arrived(1);
    mb.waiter = &arrived;
    mb.wanted = key;
    g.unlock();
    arrived.wait();
    g.lock();
    it = mb.messages.find(key);
  }
  if (it->second.sig != h.sig) mismatch(coll_header{h.team, h.seq, h.tag, it->second.sig}, from, h.sig);
  std::unique_ptr<coll_box> value = std::move(it->second.value);
  mb.messages.erase(it);
  return value;
}

std::string team_table::waiting_report() {
  std::lock_guard g(m_);
  std::string out;
  for (const auto& [name, mb] : mailboxes_) {
    if (!mb.waiter) continue;
    const auto& [team, seq] = name;
    out += fmt::format(
        "  collective #{} of team {:#x}: this rank called {} and waits for message {} of rank {} "
        "(a member that never calls it, or calls another one, leaves it waiting)\n",
        seq, team, mb.mine ? call_of(*mb.mine) : std::string("it"), mb.wanted.first, mb.wanted.second);
  }
  return out;
}

void team_table::started(const coll_header& h) {
  std::lock_guard g(m_);
  mailbox& mb = mailboxes_[{h.team, h.seq}];
  mb.mine = h.sig;
  for (const auto& [key, msg] : mb.messages)
    if (msg.sig != h.sig) mismatch(coll_header{h.team, h.seq, key.first, msg.sig}, key.second, h.sig);
}

void team_table::mismatch(const coll_header& theirs, int from, const coll_signature& mine) {
  fatal("{}: rank {} called {} where rank {} called {} ({})", name_of(theirs), from, call_of(theirs.sig), me_,
        call_of(mine), same_calls);
}

void team_table::finished(const coll_header& h) {
  std::lock_guard g(m_);
  finished_collectives& done = finished_[h.team];
  done.above.emplace(h.seq, h.sig);
  for (auto a = done.above.begin(); a != done.above.end() && a->first == done.below; a = done.above.erase(a)) {
    done.recent.insert(*a);
    ++done.below;
    if (done.recent.size() > recent_finished) done.recent.erase(done.recent.begin());
  }
  auto it = mailboxes_.find({h.team, h.seq});
  if (it == mailboxes_.end()) return;
  if (!it->second.messages.empty()) {
    const auto& [key, msg] = *it->second.messages.begin();
    late_message(coll_header{h.team, h.seq, key.first, msg.sig}, key.second, &h.sig);
  }
  mailboxes_.erase(it);
}

void team_table::late_message(const coll_header& h, int from, const coll_signature* mine) {
  fatal("{}: rank {} called {} and sent rank {} a message (step {}) that rank {}'s {} does not take ({})", name_of(h),
        from, call_of(h.sig), me_, h.tag, me_, mine ? call_of(*mine) : std::string("collective, finished since,"),
        same_calls);
}

// The public API's non-template half.

std::shared_ptr<const team_info> team_find(std::uint64_t id, const char* what) {
  return sync_here(what).teams().find(id, what);
}

void team_add(std::shared_ptr<const team_info> info) { sync_here("rill::team::split").teams().add(std::move(info)); }

std::uint64_t team_child_id(std::uint64_t parent, std::uint64_t seq, int color) {
  std::uint64_t id = hash_mix(hash_mix(hash_mix(parent) ^ seq) ^ static_cast<std::uint32_t>(color));
  if (id == no_team_id || id == world_team_id) id += 2;
  return id;
}

coll_ticket coll_issue(std::uint64_t id, event done, const char* what) {
  return sync_here(what).teams().issue(id, done, what);
}

void coll_deliver(const coll_header& h, int from, std::unique_ptr<coll_box> value) {
  sync_here("rill::team (a collective's message)").teams().deliver(h, from, std::move(value));
}

void coll_send_now(int to) { current_messenger("rill::team (a collective)").agg().flush(to); }

std::unique_ptr<coll_box> coll_receive(const coll_header& h, int from) {
  return sync_here("rill::team (a collective)").teams().receive(h, from);
}

void coll_started(const coll_header& h) { sync_here("rill::team (a collective)").teams().started(h); }

void coll_finished(const coll_header& h) { sync_here("rill::team (a collective)").teams().finished(h); }

std::uint32_t coll_type_code(const char* mangled_name) {
  std::uint32_t x = 2166136261u;  // FNV-1a
  for (const char* c = mangled_name; *c; ++c) x = (x ^ static_cast<unsigned char>(*c)) * 16777619u;
  if (x == 0) x = 1;
  std::lock_guard g(type_names_lock);
  type_names().try_emplace(x, demangled(mangled_name));
  return x;
}

void coll_type_mismatch(const coll_header& h, int from) {
  fatal(
      "{} ({}): rank {} sent step {} with another value type than rank {} expects (members must pass the same "
      "types)",
      name_of(h), call_of(h.sig), from, h.tag, rank_me());
}

void coll_failed(const coll_header& h, const char* what, const char* error) {
  fatal("{} on rank {} ({}) failed: {}", what, rank_me(), name_of(h), error);
}

void coll_wait_previous(event previous) {
  if (previous.has_triggered()) return;
  try {
    previous.wait();
  } catch (const poisoned_error&) {
  }
}

void coll_check_root(const team_info& info, int root, const char* what) {
  if (root < 0 || root >= static_cast<int>(info.members.size()))
    throw misuse_error(fmt::format("{}: root {} is not a rank of a team of {}", what, root, info.members.size()));
}

void world_barrier_wait() { team::world().barrier().wait(); }

}  // namespace rill::detail
