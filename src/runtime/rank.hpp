// One rank: its endpoint, its aggregation buffers, its workers, and its part of termination
// detection. All runtime state lives here (never in process globals), so the local transport can
// run many ranks in one process.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <deque>
#include <span>
#include <vector>
#include "events/event_table.hpp"
#include "global/gas_table.hpp"
#include "global/segment.hpp"
#include "global/symmetric_heap.hpp"

#include "messages/aggregator.hpp"
#include "messages/decoder.hpp"
#include "rill/config.hpp"
#include "rill/machine.hpp"
#include "rill/runtime.hpp"
#include "runtime/remote_steal.hpp"
#include "runtime/termination.hpp"
#include "scheduler/worker.hpp"
#include "sync/barrier.hpp"
#include "sync/finish_table.hpp"
#include "sync/lco_table.hpp"
#include "sync/promise_pins.hpp"
#include "sync/reservation_table.hpp"
#include "sync/team_table.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

class rank_state final : public rank_services {
 public:
  rank_state(endpoint& ep, const rill::config& cfg);
  ~rank_state() override;

  int id() const { return id_; }
  int size() const { return size_; }
  aggregator& agg() { return agg_; }
  worker_pool& pool() { return pool_; }
  termination& term() { return term_; }
  event_table& events() { return events_; }
  barrier_table& barriers() { return barriers_; }
  reservation_table& reservations() { return reservations_; }
  finish_table& finishes() { return finishes_; }
  promise_pins& promises() { return promises_; }
  lco_table& lcos() { return lcos_; }
  team_table& teams() { return teams_; }
  remote_steal& stealing() { return stealing_; }
  segment& memory_segment() { return *segment_; }
  gas_table& gas() { return gas_; }
  // The segment of `rank` if this rank may address it directly (its own; with --rill:shared-segments,
  // those of the other ranks this process maps), else nullptr.
  const segment_view* addressable_segment(int rank) const {
    if (rank == id_) return &own_view_;
    return shared_segments_ && segments_ ? segments_->find(rank) : nullptr;
  }
  // Whether single-element operations through a mapped segment check generation tags too
  // (--rill:tag-checks=every), not only bounds.
  bool checks_every_tag() const { return every_tag_; }
  // This rank's segment over `memory`, and how this process sees every rank's; once, at start-up.
  // Rank 0 also keeps the global heap's allocator.
  void set_segments(std::byte* memory, std::size_t bytes, std::size_t global_heap_bytes,
                    std::shared_ptr<const segment_directory> d) {
    segment_ = std::make_unique<segment>(memory, bytes, global_heap_bytes);
    own_view_ = segment_->view();
    segments_ = std::move(d);
    global_heap_bases_.clear();
    for (const segment_view& v : segments_->by_rank)
      global_heap_bases_.push_back(v.owner_base() + v.size() - global_heap_bytes);
    if (id_ == 0) global_heap_ = std::make_unique<symmetric_heap>(global_heap_bytes);
  }
  // Where each rank's part of the global heap starts, in that rank's address space; by rank.
  const std::vector<std::uintptr_t>& global_heap_bases() const { return global_heap_bases_; }
  // The global heap's allocator: on rank 0, else nullptr.
  symmetric_heap* global_heap() { return global_heap_.get(); }
  std::size_t large_bytes() const { return large_bytes_; }
  // The largest buffer the transport carries to another rank.
  std::size_t max_buffer_bytes() const { return ep_.max_buffer_bytes(); }
  // The machine's description, shared by the ranks of this process; set once at start-up.
  const rill::machine& machine_model() const { return *machine_; }
  void set_machine(std::shared_ptr<const rill::machine> m) { machine_ = std::move(m); }

  // rank_services
  bool progress(worker& w) override;
  void on_out_of_work(worker& w) override;
  void release_credit(void* scope, std::int64_t units) override;
  void task_failed(void* scope, std::exception_ptr error) override;
  void on_idle(worker& w) override;
  bool must_poll() const override { return ep_.needs_polling() || agg_.any_buffered(); }
  bool has_input() const override { return ep_.has_input(); }

  void stop(int exit_code);
  int exit_code() const { return exit_code_; }
  rill::rank_stats stats();

  // Hands a buffer to the endpoint, waiting (yielding inside a task) while the destination is full.
  void transmit(int dest, buffer b);
  // Sends a buffer with lent parts (endpoint::try_send_lent), waiting for room like transmit.
  void transmit_lent(int dest, lent_buffer b);
  // Sends a copy of `bytes` at once if the transport can (a node ring); false otherwise.
  bool transmit_copy(int dest, std::span<const std::byte> bytes);
  // A recycled buffer of at least `bytes` capacity from the endpoint, or an empty one.
  buffer spare_buffer(std::size_t bytes) { return ep_.spare(bytes); }

 private:
  // Calls try_send() until it succeeds (the endpoint has room), then counts `bytes` as sent.
  template <class TrySend>
  void send_when_room(std::size_t bytes, TrySend try_send);
  // A received buffer whose messages are being run, in order, by one worker.
  // Its messages are read one at a time as they run (the buffer was validated whole on arrival).
  struct received_buffer {
    incoming in;
    std::span<const std::byte> bytes;  // in.bytes' storage, which stays put when pinned moves it
    std::size_t at;                    // where the next message starts
    std::uint32_t left;                // messages not yet started
    std::shared_ptr<buffer> pinned;    // the bytes, once a rill::view points into them
  };
  // Runs the handlers of the buffers this worker received; returns whether it ran any.
  bool run_received(worker& w);
  // Shared ownership of rb's bytes, for views into them (pin_received_bytes).
  struct pinned_bytes;
  std::shared_ptr<const void> pin(received_buffer& rb);
  friend std::shared_ptr<const void> pin_received_bytes();

  endpoint& ep_;
  const int id_;
  const int size_;
  aggregator agg_;
  worker_pool pool_;
  std::vector<std::deque<received_buffer>> received_;  // per worker (by index): buffers being run
  termination term_;
  const std::size_t large_bytes_;
  remote_steal stealing_;  // async_any tasks and the steal protocol
  // Declared after the pool, so destroyed before it: callbacks still waiting are released first.
  event_table events_;
  // The barriers this rank owns; their phases are slots of events_.
  barrier_table barriers_{id_, events_};
  // Reservations this rank has seen (src/sync); their pending callbacks wait in events_.
  reservation_table reservations_{id_, size_};
  finish_table finishes_{id_};
  promise_pins promises_;
  lco_table lcos_{id_};
  team_table teams_{id_, size_};  // teams and the mailboxes of collectives (src/sync/team_table.*)
  std::shared_ptr<const rill::machine> machine_;
  std::unique_ptr<segment> segment_;  // global memory homed here (src/global)
  segment_view own_view_;
  const bool shared_segments_;
  const bool every_tag_;
  std::shared_ptr<const segment_directory> segments_;
  std::vector<std::uintptr_t> global_heap_bases_;
  std::unique_ptr<symmetric_heap> global_heap_;
  gas_table gas_;  // this rank's part of the active global address space (rill/gas.hpp)
  int exit_code_ = 0;
};

// The rank whose worker runs the calling thread; throws rill::misuse_error naming `what` when the
// thread is not a Rill worker.
rank_state& current_rank(const char* what);
// Throws rill::misuse_error: `what` was called outside a Rill task or handler.
[[noreturn]] void throw_outside_worker(const char* what);

}  // namespace rill::detail
