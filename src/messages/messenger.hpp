// One rank's active messages: its aggregation buffers, the back-pressure to its endpoint, and the
// dispatch of what it receives. The rank core owns it; the layers above find it with
// current_messenger() and send through it (rill/am.hpp, messages/control_send.hpp).
#pragma once

#include "common/options.hpp"
#include "messages/aggregator.hpp"
#include "messages/delivery_counts.hpp"
#include "messages/dispatcher.hpp"
#include "messages/outbox.hpp"
#include "rill/config.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/rank_modules.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

class messenger final : public rank_module {
 public:
  // `pool` may be under construction (the rank core builds the messenger first).
  messenger(endpoint& ep, worker_pool& pool, const rill::config& cfg)
      : rank_module("messages", out_of_work_hook),
        ep_(ep),
        id_(ep.rank()),
        size_(ep.size()),
        large_bytes_(cfg.large_bytes),
        counts_(size_),
        outbox_(ep, pool, counts_),
        agg_(id_, size_, cfg, outbox_),
        progress_thread_(cfg.progress == rill::progress_mode::thread),
        idle_flush_(cfg.agg_idle_flush),
        dispatch_(ep, pool, threads_per_rank(cfg), progress_thread_, idle_flush_, agg_, outbox_, counts_) {}

  int id() const { return id_; }
  int size() const { return size_; }
  aggregator& agg() { return agg_; }
  outbox& out() { return outbox_; }
  // Messages handed to the endpoint and received, per rank (delivery audits read them).
  const delivery_counts& counts() const { return counts_; }
  // Payloads above this leave in a buffer of their own, not through the aggregator.
  std::size_t large_bytes() const { return large_bytes_; }
  // The largest buffer the transport carries to another rank.
  std::size_t max_buffer_bytes() const { return ep_.max_buffer_bytes(); }
  // The largest payload of one message (rill::am::max_payload_bytes).
  std::size_t max_payload() const;
  // Throws rill::misuse_error when a message of `payload` bytes cannot be sent: before anything is
  // counted or sent.
  void check_payload_fits(std::size_t payload) const;
  // Throws rill::misuse_error when `dest` is no rank.
  void check_destination(int dest) const;

  // Network progress on w (dispatcher::progress).
  bool progress(worker& w) { return dispatch_.progress(w); }
  // Received data may be waiting that only polling notices, or buffers wait to leave.
  bool must_poll() const { return ep_.needs_polling() || agg_.any_buffered(); }
  bool has_input() const { return ep_.has_input(); }
  // Received data waits for w: in the endpoint, or (for a worker) handed over by the progress thread.
  bool has_input_for(const worker& w) const {
    return ep_.has_input() || (progress_thread_ && w.role() == thread_role::worker && dispatch_.has_handed());
  }
  // Aggregation's flush on idle: a worker found no work, so whatever this rank buffered leaves now
  // (a lone request must not wait for the age threshold); unless --rill:agg-idle-flush=off.
  void on_out_of_work(worker&) override {
    if (idle_flush_) agg_.flush_all();
  }
  // Aggregation memory: the queues that have held a buffer (per rank of this node and per other
  // node: hierarchical aggregation keeps it within ranks-per-node + nodes) and their buffers' bytes;
  // and the routed buffers this rank sent and the pieces of others' it forwarded.
  void report_counters(counter_report& out) override {
    out.add("agg_queues_used", static_cast<std::uint64_t>(agg_.queues_used()));
    out.add("agg_buffer_bytes", agg_.buffer_bytes());
    out.add("routed_buffers_sent", agg_.routed_sent());
    out.add("buffers_forwarded", dispatch_.forwarded());
  }

 private:
  endpoint& ep_;
  const int id_;
  const int size_;
  const std::size_t large_bytes_;
  delivery_counts counts_;
  outbox outbox_;
  aggregator agg_;
  const bool progress_thread_;  // --rill:progress=thread
  const bool idle_flush_;       // --rill:agg-idle-flush
  dispatcher dispatch_;
};

// The calling worker's rank's messenger; throws rill::misuse_error naming `what` elsewhere.
inline messenger& current_messenger(const char* what) { return current_module<messenger>(what); }

}  // namespace rill::detail
