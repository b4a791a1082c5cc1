// Delivery audits: a lost message or a rank that stopped answering is reported, not hung on.
//
// Every rank counts the application messages it handed to its endpoint for each rank and those it
// received from each (delivery_counts). A rank that is stuck -- its hang report fired, or
// termination made no progress for an audit period, or a send waited that long for room -- starts
// an audit: it asks every rank for its
// counts. Each rank acknowledges to the asker and tells every rank it handed messages to how many.
// A rank told of more messages than it has received from that sender looks again one audit period
// later: if a message handed before the count was sent has still not arrived, the transport lost
// it, and the job stops with an error naming both ranks (exit code 3). A rank that does not
// acknowledge within an audit period is named as silent; after --rill:unresponsive-s the job stops.
//
// The sender counts a buffer once the endpoint took it and the receiver as it arrives, so a
// shortfall still there one period after the count was sent is a loss, not a message on its way.
// The audit's own messages are control messages, which neither side counts.
//
// The audit period is --rill:hang-report-s (0 turns audits off). An audit costs each rank one
// message to every rank it ever sent to.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "messages/messenger.hpp"
#include "rill/config.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

class delivery_audit final : public rank_module {
 public:
  delivery_audit(messenger& m, const rill::config& cfg);
  ~delivery_audit() override;

  // Starts an audit of every rank, at most one per audit period; `why` says what is stuck (for
  // the log). Any worker of this rank. `full` is a rank that has taken no buffer from this one
  // since `full_since_ns`: it is not asked (the request could not leave) but counted as asked then.
  void start(const std::string& why, int full = -1, std::uint64_t full_since_ns = 0);
  bool enabled() const { return period_ns_ != 0; }
  std::uint64_t period_ns() const { return period_ns_; }
  // Looks at unanswered audits and at shortfalls due for a second look.
  void on_idle(worker&) override;
  // A send has waited for room to `dest` since `since_ns`: after an audit period, audits, and
  // looks like an idle worker would (this worker may never be idle again).
  void on_long_wait(int dest, std::uint64_t since_ns);

  // Message handlers (on the receiving rank).
  void on_request(int from);
  void on_ack(int from);
  void on_count(int from, std::uint64_t handed);

 private:
  // A shortfall of messages from one rank, to look at again when due.
  struct shortfall {
    std::uint64_t handed = 0;   // messages the sender had handed over
    std::uint64_t seen_ns = 0;  // when the count arrived; 0: none pending
  };
  // At most every 10 ms: looks at shortfalls and silent ranks.
  void look(std::uint64_t now);
  void check_silent(std::uint64_t now);
  void check_shortfalls(std::uint64_t now);

  messenger& msgr_;
  const int me_;
  const int ranks_;
  const std::uint64_t period_ns_;
  const std::uint64_t unresponsive_ns_;
  std::atomic<std::uint64_t> next_look_ns_{0};  // idle workers look no more often than every 10 ms
  std::mutex lock_;                             // guards what follows; never held while sending
  std::uint64_t last_start_ns_ = 0;
  std::vector<std::uint64_t> asked_ns_;  // per rank: when an unanswered request went; 0: none
  std::vector<bool> named_silent_;       // per rank: this request's silence was reported
  std::vector<shortfall> shortfalls_;    // per sender
};

}  // namespace rill::detail
