#include "messages/dispatcher.hpp"

#include <string>
#include <variant>

#include "common/clock.hpp"
#include "common/log.hpp"
#include "messages/decoder.hpp"
#include "messages/handler_table.hpp"
#include "messages/message_flow.hpp"
#include "messages/routed_wire.hpp"
#include "rill/error.hpp"
#include "rill/serialization.hpp"

namespace rill::detail {

namespace {
// Buffers taken from the endpoint per poll: enough to amortise the poll, few enough that one
// worker does not hoard a burst another idle worker could share.
constexpr std::size_t poll_batch = 8;

// The received buffer whose handler is decoding its arguments on this thread, and its dispatcher.
struct decoding_state {
  dispatcher* owner = nullptr;
  void* buffer = nullptr;  // dispatcher::received_buffer
};
thread_local decoding_state decoding;
}  // namespace

std::shared_ptr<const void> pin_received_bytes() {
  if (!decoding.buffer) return nullptr;
  return decoding.owner->pin(*static_cast<dispatcher::received_buffer*>(decoding.buffer));
}

// Received bytes that rill::view arguments point into, with the endpoint they came from: made by
// std::make_shared, one allocation with the shared count (a deleter would need a second).
struct dispatcher::pinned_bytes {
  buffer bytes;
  dispatcher* owner;
  pinned_bytes(buffer&& b, dispatcher* d) : bytes(std::move(b)), owner(d) {}
  pinned_bytes(const pinned_bytes&) = delete;
  pinned_bytes& operator=(const pinned_bytes&) = delete;
  ~pinned_bytes() {
    // Back to the endpoint's pool when the last view dies on one of this rank's workers (the
    // endpoint outlives them); a view kept elsewhere frees the bytes instead.
    worker* w = current_worker();
    if (w && &w->pool() == &owner->pool_) owner->ep_.recycle(std::move(bytes));
  }
};

std::shared_ptr<const void> dispatcher::pin(received_buffer& rb) {
  if (!rb.pinned) {
    // rb.bytes keeps pointing into them: moving a vector keeps its storage.
    auto pinned = std::make_shared<pinned_bytes>(std::move(rb.in.bytes), this);
    rb.pinned = std::shared_ptr<buffer>(pinned, &pinned->bytes);
  }
  return rb.pinned;
}

dispatcher::dispatcher(endpoint& ep, worker_pool& pool, int threads, bool progress_thread, bool idle_flush,
                       aggregator& agg, buffer_sink& sink, delivery_counts& counts)
    : ep_(ep),
      pool_(pool),
      agg_(agg),
      sink_(sink),
      counts_(counts),
      id_(ep.rank()),
      progress_thread_(progress_thread),
      idle_flush_(idle_flush),
      received_(static_cast<std::size_t>(threads)) {}

bool dispatcher::progress(worker& w) {
  // Messages a suspended handler left behind in its batch run first (see run_received), and on a
  // worker where a progress thread polls, the messages it handed over (hand_to_workers).
  bool did = run_received(w);
  const bool on_progress = w.role() == thread_role::progress;
  if (progress_thread_ && !on_progress && has_handed() && take_handed(w, poll_batch)) {
    w.mark_active();
    did = run_received(w) || did;
  }
  // Reused across polls (no allocation per arrival). Safe against a handler that waits: the batch
  // is moved into the worker's queue before any handler runs.
  thread_local std::vector<incoming> batch;
  batch.clear();
  ep_.poll(batch, poll_batch);
  if (!batch.empty()) {
    w.mark_active();
    std::vector<forward> forwards;
    for (auto& in : batch) accept(std::move(in), w, forwards);
    // (The batch is done with: a send that waits for room may poll again on this thread.)
    forwarded_.fetch_add(forwards.size(), std::memory_order_relaxed);
    for (forward& f : forwards) {
      if (sink_.transmit_copy(f.dest, f.bytes, 0))
        ep_.recycle(std::move(f.bytes));
      else
        sink_.transmit(f.dest, std::move(f.bytes), 0);
    }
    run_received(w);
    did = true;
    // Replies the handlers sent leave now when the worker has nothing else to do (the loop would
    // flush them as soon as it found no work): a lone reply must not wait for a trip round the loop.
    if (idle_flush_ && agg_.any_buffered() && w.out_of_work()) agg_.flush_all();
  }
  if (agg_.any_buffered()) agg_.flush_aged(steady_now_ns());
  return did;
}

void dispatcher::accept(incoming&& in, worker& w, std::vector<forward>& forwards) {
  const std::span<const std::byte> bytes(in.bytes);
  trace::instant<trace::kind::message_arrival>(0, static_cast<std::uint64_t>(in.source), bytes.size());
  if (bytes.size() >= 4 && wire::get<std::uint32_t>(bytes.data()) == wire::magic_routed) {
    accept_routed(std::move(in), w, forwards);
    return;
  }
  auto checked = validate_buffer(bytes, in.source, handler_count(), &agg_.routes(), id_);
  if (auto* error = std::get_if<std::string>(&checked)) fatal("rank {} received a bad buffer: {}", id_, *error);
  const buffer_counts counts = std::get<buffer_counts>(checked);
  in.source = counts.source;  // (the writer of a forwarded buffer)
  counts_.add_received(counts.source, counts.application);
  queue_received(std::move(in), w, counts.messages);
}

void dispatcher::accept_routed(incoming&& in, worker& w, std::vector<forward>& forwards) {
  const node_routes& routes = agg_.routes();
  thread_local std::vector<routed_share> shares;
  if (auto error = validate_routed(in.bytes, in.source, id_, routes, handler_count(), shares))
    fatal("rank {} received a bad buffer: {}", id_, *error);
  std::vector<buffer> pieces(shares.size());
  for (std::size_t to = 0; to < shares.size(); ++to)
    if (shares[to].messages > 0) pieces[to] = ep_.spare(in.bytes.size());
  split_routed(in.bytes, pieces);
  const int node = routes.node_of(id_);
  for (std::size_t to = 0; to < pieces.size(); ++to) {
    if (shares[to].messages == 0) continue;
    const int dest = routes.rank_at(node, static_cast<int>(to));
    if (dest != id_) {
      forwards.push_back(forward{dest, std::move(pieces[to])});
      continue;
    }
    counts_.add_received(in.source, shares[to].application);
    queue_received(incoming{in.source, std::move(pieces[to])}, w, shares[to].messages);
  }
  ep_.recycle(std::move(in.bytes));
}

void dispatcher::queue_received(incoming&& in, worker& w, std::uint32_t messages) {
  const std::span<const std::byte> bytes(in.bytes);
  const std::uint32_t sequence = wire::first_sequence(bytes.data());
  received_[static_cast<std::size_t>(w.index())].push_back(
      received_buffer{std::move(in), bytes, wire::buffer_header_bytes, messages, sequence, nullptr,
                      w.role() == thread_role::progress ? part::progress : part::all, 0});
}

bool dispatcher::run_received(worker& w) {
  // The queue is the worker's, not this fiber's: when a handler waits, the fiber that takes over
  // the worker runs the rest of the batch, and the waiting one finds less (or nothing) left when
  // it resumes. A handler decodes its arguments before it can wait, so a buffer may be freed once
  // its last message has started.
  auto& queue = received_[static_cast<std::size_t>(w.index())];
  bool ran = false;
  while (!queue.empty()) {
    received_buffer& rb = queue.front();
    if (rb.left == 0) {
      if (rb.for_workers > 0)
        hand_to_workers(std::move(rb));
      else
        ep_.recycle(std::move(rb.in.bytes));  // every handler has decoded its arguments
      queue.pop_front();
      continue;
    }
    --rb.left;
    const decoded_message m = next_message(rb.bytes, rb.at);
    const int source = rb.in.source;
    const std::uint32_t sequence = rb.sequence++;
    if (rb.runs != part::all && handler_on_progress(m.id) != (rb.runs == part::progress)) {
      if (rb.runs == part::progress) ++rb.for_workers;  // (on a worker: it ran on the progress thread)
      continue;
    }
    ran = true;
    fiber_rec* fiber = w.current_fiber();
    const int previous = fiber->message_source;
    const std::uint16_t previous_handler = fiber->message_handler;
    fiber->message_source = source;
    fiber->message_handler = m.id;
    try {
      decoding = {this, &rb};
      const std::uint64_t traced_start = trace::span_begin();
      handler_at(m.id)(m.payload, m.bytes);
      if (traced_start) [[unlikely]]
        trace::span_end<trace::kind::handler>(traced_start, m.control ? 0 : message_flow(source, id_, sequence), m.id,
                                              static_cast<std::uint64_t>(source));
      decoding = {};
    } catch (const rill::decode_error& e) {
      fatal("corrupt message from rank {} to rank {} (handler {} '{}'): {}", source, id_, m.id, handler_name(m.id),
            e.what());
    } catch (const std::exception& e) {
      fatal("the handler of a message from rank {} to rank {} threw: {}", source, id_, e.what());
    }
    fiber->message_source = previous;
    fiber->message_handler = previous_handler;
    if (!m.control) worker_counters::bump(w.counters().messages_handled);
  }
  return ran;
}

void dispatcher::hand_to_workers(received_buffer&& rb) {
  // A worker reads the buffer again from its start and runs what the progress thread left, at its
  // next poll (every few tasks while busy, or as soon as it is woken). Until then its messages count
  // as received and not handled, which keeps termination detection from ending the run.
  rb.at = wire::buffer_header_bytes;
  rb.left = wire::message_count(rb.bytes.data());
  rb.sequence = wire::first_sequence(rb.bytes.data());
  rb.runs = part::workers;
  rb.for_workers = 0;
  {
    std::lock_guard g(handed_lock_);
    handed_.push_back(std::move(rb));
    handed_count_.store(handed_.size(), std::memory_order_seq_cst);
  }
  pool_.notify();
}

bool dispatcher::take_handed(worker& w, std::size_t max) {
  auto& queue = received_[static_cast<std::size_t>(w.index())];
  std::lock_guard g(handed_lock_);
  if (handed_.empty()) return false;
  for (std::size_t i = 0; i < max && !handed_.empty(); ++i) {
    queue.push_back(std::move(handed_.front()));
    handed_.pop_front();
  }
  handed_count_.store(handed_.size(), std::memory_order_seq_cst);
  return true;
}

}  // namespace rill::detail
