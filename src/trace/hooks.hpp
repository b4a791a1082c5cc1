// The recording hooks the runtime calls, and the flow ids that tie a cause to its effects.
//
// When the calling thread is not traced (tracing off, or not an attached thread) every hook is one
// load of a thread_local pointer and one predictable branch (in an executable: in a shared library
// the load is a call to __tls_get_addr). Recording is a call. The kind is a template argument so that
// recording an instant as a span, or the reverse, does not compile.
//
//   trace::instant<kind::message_send>(trace::message_flow(me, seq), dest, bytes);
//   { trace::scope<kind::handler> s(trace::message_flow(source, seq), handler_id, source); ... }
//
// Spans on one thread must nest, as the viewer draws them on one timeline: a task whose fiber parks
// records one span per stretch it runs (span_begin when it starts or resumes, span_end when it parks
// or returns), giving its flow id to the first stretch only.
//
// Arrows: a record that starts a flow (message_send, event_trigger) and the spans that end it
// (handler, task) carry the same flow id; the merge draws one arrow to each end. A start binds to
// the span around it on its thread (so send from inside a task or handler), an end to its own span.
#pragma once

#include <cstdint>

#include "common/clock.hpp"
#include "trace/recorder.hpp"
#include "trace/trace_kinds.hpp"

namespace rill::detail::trace {

// The flow of a message: its source rank and a sequence number the source gives it, which both the
// sender and the handler know (e.g. the count of messages the source sent to the destination, with
// the destination in its high bits), so the wire carries nothing extra. Ranks up to 2^22, sequence
// numbers modulo 2^40. Never 0, and never equal to an event's flow.
constexpr std::uint64_t message_flow(int source_rank, std::uint64_t sequence) {
  return (std::uint64_t{1} << 62) | ((static_cast<std::uint64_t>(source_rank) & ((1u << 22) - 1)) << 40) |
         (sequence & ((std::uint64_t{1} << 40) - 1));
}

// The flow of an event's trigger to the tasks it releases, from a 64-bit id of the event (its low
// 62 bits count). Never 0, and never equal to a message's flow.
constexpr std::uint64_t event_flow(std::uint64_t event_id) {
  return (std::uint64_t{2} << 62) | (event_id & ((std::uint64_t{1} << 62) - 1));
}

// True when the calling thread records, for work done only to build a hook's arguments.
inline bool enabled() { return tls_recorder != nullptr; }

// The flow of an event (owner, slot, generation) for event_flow: the owner modulo 2^10 and the
// slot modulo 2^20 and generation modulo 2^32, enough to tell apart the triggers of one trace.
constexpr std::uint64_t event_id(int owner, std::uint32_t slot, std::uint64_t generation) {
  return (static_cast<std::uint64_t>(owner) & 0x3ff) << 52 | (static_cast<std::uint64_t>(slot) & 0xfffff) << 32 |
         (generation & 0xffffffffu);
}

// While it lives, the tasks the calling thread queues were released by the trigger of `flow`
// (tls_releasing_flow). Nothing when the thread does not record.
class releasing {
 public:
  explicit releasing(std::uint64_t flow) {
    if (tls_recorder) [[unlikely]] {
      previous_ = tls_releasing_flow;
      tls_releasing_flow = flow;
      active_ = true;
    }
  }
  ~releasing() {
    if (active_) [[unlikely]]
      tls_releasing_flow = previous_;
  }
  releasing(const releasing&) = delete;
  releasing& operator=(const releasing&) = delete;

 private:
  std::uint64_t previous_ = 0;
  bool active_ = false;
};

template <kind K>
inline void instant(std::uint64_t flow = 0, std::uint64_t arg0 = 0, std::uint64_t arg1 = 0) {
  static_assert(!is_span(K), "a span kind: use span_begin/span_end or scope");
  if (recorder* r = tls_recorder) [[unlikely]]
    r->append_instant(K, flow, arg0, arg1);
}

// The start of a span to give to span_end, or 0 when the calling thread does not record.
inline std::uint64_t span_begin() {
  if (tls_recorder) [[unlikely]]
    return steady_now_ns();
  return 0;
}

// Records the span from `start_ns` (from span_begin) to now. Nothing when start_ns is 0, which is a
// span begun while the thread did not record.
template <kind K>
inline void span_end(std::uint64_t start_ns, std::uint64_t flow = 0, std::uint64_t arg0 = 0, std::uint64_t arg1 = 0) {
  static_assert(is_span(K), "an instant kind: use instant");
  if (recorder* r = tls_recorder) [[unlikely]]
    if (start_ns != 0) r->append_span(K, start_ns, flow, arg0, arg1);
}

// A span from construction to destruction.
template <kind K>
class scope {
 public:
  explicit scope(std::uint64_t flow = 0, std::uint64_t arg0 = 0, std::uint64_t arg1 = 0)
      : start_ns_(span_begin()), flow_(flow), arg0_(arg0), arg1_(arg1) {}
  ~scope() { span_end<K>(start_ns_, flow_, arg0_, arg1_); }
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;

 private:
  std::uint64_t start_ns_;
  std::uint64_t flow_;
  std::uint64_t arg0_;
  std::uint64_t arg1_;
};

}  // namespace rill::detail::trace
