// One rank's teams and the mailboxes of its collectives in progress (rill/team.hpp). Part of the
// rank's sync module (sync_module.hpp): the local transport runs many ranks in one process.
//
// A collective is named by (team id, sequence number): each rank numbers its calls per team in
// the order it makes them, so the n-th collective of a team is the same on every member. Its
// messages carry (team, sequence, tag, sender) and wait in the mailbox of that name until the
// collective's task on this rank takes them -- whether or not this rank has issued that
// collective yet, or even learned of the team (a split that finished elsewhere first).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rill/event.hpp"
#include "rill/task.hpp"
#include "rill/team.hpp"

namespace rill::detail {

class team_table {
 public:
  // Knows the world team (every rank, in order) from the start.
  team_table(int me, int size);
  team_table(const team_table&) = delete;
  team_table& operator=(const team_table&) = delete;

  // This rank's view of team `id`; throws misuse_error naming `what` when it is not a member.
  std::shared_ptr<const team_info> find(std::uint64_t id, const char* what);
  // Records a team this rank belongs to (a split's result). Fatal if the id is taken.
  void add(std::shared_ptr<const team_info> info);
  // Numbers a new collective of team `id` on this rank; `done` is its completion event, which
  // the next collective of the team waits for before it completes.
  coll_ticket issue(std::uint64_t id, event done, const char* what);

  // The collective's task started on this rank: from now on every message for it is compared
  // with this rank's signature as it arrives (and those that came before, at once).
  void started(const coll_header& h);
  // A collective's message arrived (or was sent to this rank by itself).
  void deliver(const coll_header& h, int from, std::unique_ptr<coll_box> value);
  // The message (tag, from) of a collective: waits for it (suspending the calling fiber).
  std::unique_ptr<coll_box> receive(const coll_header& h, int from);
  // The collective has taken every message it expects: its mailbox goes, and a message for it
  // that comes later is an error (members called different collectives).
  void finished(const coll_header& h);
  // For the hang report: the collectives whose task waits here for a message, one line each.
  std::string waiting_report();

 private:
  struct held_message {
    coll_signature sig;  // the sender's
    std::unique_ptr<coll_box> value;
  };
  // The collectives of a team this rank has finished: all below `below`, and those in `above`
  // with their signatures (a message for any of them names what this rank called).
  struct finished_collectives {
    std::uint64_t below = 0;
    std::map<std::uint64_t, coll_signature> above;
    std::map<std::uint64_t, coll_signature> recent;  // the last few below `below`, for messages
  };
  [[noreturn]] void mismatch(const coll_header& theirs, int from, const coll_signature& mine);
  [[noreturn]] void late_message(const coll_header& h, int from, const coll_signature* mine);
  using message_key = std::pair<std::uint32_t, int>;  // (tag, sender's world rank)
  struct mailbox {
    std::map<message_key, held_message> messages;
    latch* waiter = nullptr;  // the collective's task, waiting for `wanted`
    message_key wanted{};
    std::optional<coll_signature> mine;  // once the collective's task has started here
  };
  struct team_state {
    std::shared_ptr<const team_info> info;
    std::uint64_t next_seq = 0;
    event last;  // completion of the latest collective issued here
  };

  const int me_;
  std::mutex m_;
  std::unordered_map<std::uint64_t, team_state> teams_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, mailbox> mailboxes_;  // by (team, seq)
  std::unordered_map<std::uint64_t, finished_collectives> finished_;      // by team
};

}  // namespace rill::detail
