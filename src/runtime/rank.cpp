#include "runtime/rank.hpp"

#include <fmt/format.h>

#include <span>
#include <string>
#include <variant>

#include "common/clock.hpp"
#include "common/log.hpp"
#include "messages/decoder.hpp"
#include "messages/handler_table.hpp"
#include "rill/detail/finish_hooks.hpp"
#include "rill/error.hpp"
#include "rill/serialization.hpp"

namespace rill::detail {

namespace {
// Buffers taken from the endpoint per poll: enough to amortise the poll, few enough that one
// worker does not hoard a burst another idle worker could share.
constexpr std::size_t poll_batch = 8;

// The received buffer whose handler is decoding its arguments on this thread, and its rank.
struct decoding_state {
  rank_state* rank = nullptr;
  void* buffer = nullptr;  // rank_state::received_buffer
};
thread_local decoding_state decoding;
}  // namespace

std::shared_ptr<const void> pin_received_bytes() {
  if (!decoding.buffer) return nullptr;
  return decoding.rank->pin(*static_cast<rank_state::received_buffer*>(decoding.buffer));
}

// Received bytes that rill::view arguments point into, with the rank they came to: made by
// std::make_shared, one allocation with the shared count (a deleter would need a second).
struct rank_state::pinned_bytes {
  buffer bytes;
  rank_state* rank;
  pinned_bytes(buffer&& b, rank_state* r) : bytes(std::move(b)), rank(r) {}
  pinned_bytes(const pinned_bytes&) = delete;
  pinned_bytes& operator=(const pinned_bytes&) = delete;
  ~pinned_bytes() {
    // Back to the endpoint's pool when the last view dies on one of this rank's workers (the
    // endpoint outlives them); a view kept elsewhere frees the bytes instead.
    worker* w = current_worker();
    if (w && &w->pool().services() == static_cast<rank_services*>(rank)) rank->ep_.recycle(std::move(bytes));
  }
};

std::shared_ptr<const void> rank_state::pin(received_buffer& rb) {
  if (!rb.pinned) {
    // rb.bytes keeps pointing into them: moving a vector keeps its storage.
    auto pinned = std::make_shared<pinned_bytes>(std::move(rb.in.bytes), this);
    rb.pinned = std::shared_ptr<buffer>(pinned, &pinned->bytes);
  }
  return rb.pinned;
}

rank_state::rank_state(endpoint& ep, const rill::config& cfg)
    : ep_(ep),
      id_(ep.rank()),
      size_(ep.size()),
      agg_(
          id_, size_, cfg, [this](int dest, buffer&& b) { transmit(dest, std::move(b)); },
          [this](int dest, std::span<const std::byte> bytes) { return transmit_copy(dest, bytes); }),
      pool_(*this, cfg.workers, cfg.stack_bytes, cfg.idle_poll_us, cfg.inline_queue),
      received_(static_cast<std::size_t>(cfg.workers)),
      term_(*this),
      large_bytes_(cfg.large_bytes),
      stealing_(*this, cfg),
      events_(id_, size_, cfg.workers),
      shared_segments_(cfg.shared_segments),
      every_tag_(cfg.tag_check == rill::tag_checks::every),
      gas_(id_, size_, cfg) {
  ep_.on_arrival([this] { pool_.notify(); });
  events_.trace().configure(cfg);
}

rank_state::~rank_state() = default;

template <class TrySend>
void rank_state::send_when_room(std::size_t bytes, TrySend try_send) {
  while (!try_send()) {
    // Back-pressure: the destination's queue is full. This fiber waits while the worker polls
    // (draining our own inbox, so that a peer blocked on us can move) and runs other work.
    if (worker* w = current_worker(); w && &w->pool() == &pool_) {
      w->wait_for_progress();
    } else {
      std::this_thread::yield();
    }
  }
  if (worker* w = current_worker()) {
    worker_counters::bump(w->counters().buffers_sent);
    worker_counters::bump(w->counters().bytes_sent, bytes);
  }
}

void rank_state::transmit(int dest, buffer b) {
  send_when_room(b.size(), [&] { return ep_.try_send(dest, b); });
}

void rank_state::transmit_lent(int dest, lent_buffer b) {
  send_when_room(b.size(), [&] { return ep_.try_send_lent(dest, b); });
}

bool rank_state::transmit_copy(int dest, std::span<const std::byte> bytes) {
  if (!ep_.try_send_copy(dest, bytes)) return false;
  if (worker* w = current_worker()) {
    worker_counters::bump(w->counters().buffers_sent);
    worker_counters::bump(w->counters().bytes_sent, bytes.size());
  }
  return true;
}

bool rank_state::progress(worker& w) {
  // Messages a suspended handler left behind in its batch run first (see run_received).
  bool did = run_received(w);
  // Reused across polls (no allocation per arrival). Safe against a handler that waits: the batch
  // is moved into the worker's queue before any handler runs.
  thread_local std::vector<incoming> batch;
  batch.clear();
  ep_.poll(batch, poll_batch);
  if (!batch.empty()) {
    w.mark_active();
    auto& queue = received_[static_cast<std::size_t>(w.index())];
    for (auto& in : batch) {
      const std::span<const std::byte> bytes(in.bytes);
      auto checked = validate_buffer(bytes, in.source, handler_count());
      if (auto* error = std::get_if<std::string>(&checked)) fatal("rank {} received a bad buffer: {}", id_, *error);
      queue.push_back(
          received_buffer{std::move(in), bytes, wire::buffer_header_bytes, std::get<std::uint32_t>(checked), nullptr});
    }
    run_received(w);
    did = true;
    // Replies the handlers sent leave now when the worker has nothing else to do (the loop would
    // flush them as soon as it found no work): a lone reply must not wait for a trip round the loop.
    if (agg_.any_buffered() && w.out_of_work()) agg_.flush_all();
  }
  if (agg_.any_buffered()) agg_.flush_aged(steady_now_ns());
  return did;
}

bool rank_state::run_received(worker& w) {
  // The queue is the worker's, not this fiber's: when a handler waits, the fiber that takes over
  // the worker runs the rest of the batch, and the waiting one finds less (or nothing) left when
  // it resumes. A handler decodes its arguments before it can wait, so a buffer may be freed once
  // its last message has started.
  auto& queue = received_[static_cast<std::size_t>(w.index())];
  bool ran = false;
  while (!queue.empty()) {
    received_buffer& rb = queue.front();
    if (rb.left == 0) {
      ep_.recycle(std::move(rb.in.bytes));  // every handler has decoded its arguments
      queue.pop_front();
      continue;
    }
    --rb.left;
    const decoded_message m = next_message(rb.bytes, rb.at);
    const int source = rb.in.source;
    ran = true;
    fiber_rec* fiber = w.current_fiber();
    const int previous = fiber->message_source;
    fiber->message_source = source;
    try {
      decoding = {this, &rb};
      handler_at(m.id)(m.payload, m.bytes);
      decoding = {};
    } catch (const rill::decode_error& e) {
      fatal("corrupt message from rank {} to rank {} (handler {} '{}'): {}", source, id_, m.id, handler_name(m.id),
            e.what());
    } catch (const std::exception& e) {
      fatal("the handler of a message from rank {} to rank {} threw: {}", source, id_, e.what());
    }
    fiber->message_source = previous;
    if (!m.control) worker_counters::bump(w.counters().messages_handled);
  }
  return ran;
}

void rank_state::on_out_of_work(worker&) {
  agg_.flush_all();
  stealing_.on_out_of_work();
}

void rank_state::release_credit(void* scope, std::int64_t units) {
  finish_release(static_cast<finish_proxy*>(scope), units);
}

void rank_state::task_failed(void* scope, std::exception_ptr error) {
  finish_task_ended(static_cast<finish_proxy*>(scope), std::move(error));
}

void rank_state::on_idle(worker&) {
  term_.on_idle();
  stealing_.on_idle();
  if (events_.trace().hang_watch_on()) events_.check_hang();
}

void rank_state::stop(int exit_code) {
  exit_code_ = exit_code;
  set_stopping();
  pool_.notify_all();
}

rill::rank_stats rank_state::stats() {
  rill::rank_stats s;
  for (int i = 0; i < pool_.size(); ++i) {
    auto& c = pool_.at(i).counters();
    s.messages_sent += c.messages_sent.load(std::memory_order_relaxed);
    s.messages_handled += c.messages_handled.load(std::memory_order_relaxed);
    s.buffers_sent += c.buffers_sent.load(std::memory_order_relaxed);
    s.bytes_sent += c.bytes_sent.load(std::memory_order_relaxed);
    s.tasks_run += c.tasks_run.load(std::memory_order_relaxed);
    s.steals += c.steals.load(std::memory_order_relaxed);
    s.fibers_created += c.fibers_created.load(std::memory_order_relaxed);
  }
  return s;
}

void throw_outside_worker(const char* what) {
  throw rill::misuse_error(fmt::format("{} called outside a Rill task or handler", what));
}

rank_state& current_rank(const char* what) {
  worker* w = current_worker();
  if (!w) throw_outside_worker(what);
  return static_cast<rank_state&>(w->pool().services());
}

}  // namespace rill::detail
