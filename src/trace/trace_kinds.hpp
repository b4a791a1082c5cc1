// The kinds of trace records, listed once. Everything that depends on a kind (the enum, its name
// in the viewer, whether it has a duration, which arrows it starts or ends, what its two arguments
// mean) is generated from RILL_TRACE_KINDS, so adding a kind is one line here and nothing else.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rill::detail::trace {

// Whether a record covers an interval (a slice in the viewer) or a point in time.
enum class shape : std::uint8_t { span, instant };

// A record with a flow id either starts an arrow (the flow's cause) or ends one (its effect).
// Arrows go from every end's span back to the one start with the same flow id.
enum class flow_role : std::uint8_t { none, starts, ends };

// X(enum name, display name, category, shape, flow role, name of arg0, name of arg1).
// An empty argument name means the argument is not written.
#define RILL_TRACE_KINDS(X)                                                           \
  X(task, "task", "task", span, ends, "", "")                                         \
  X(handler, "handler", "message", span, ends, "handler", "source")                   \
  X(fiber_park, "fiber park", "fiber", instant, none, "", "")                         \
  X(fiber_resume, "fiber resume", "fiber", instant, none, "", "")                     \
  X(message_send, "message send", "message", instant, starts, "destination", "bytes") \
  X(buffer_flush, "buffer flush", "message", instant, none, "destination", "bytes")   \
  X(message_arrival, "message arrival", "message", instant, none, "source", "bytes")  \
  X(event_trigger, "event trigger", "event", instant, starts, "owner", "slot")        \
  X(event_subscribe, "event subscribe", "event", instant, none, "owner", "slot")      \
  X(steal, "steal", "steal", instant, none, "victim", "tasks")                        \
  X(copy, "copy", "copy", span, none, "bytes", "peer")                                \
  X(reduction, "reduction", "copy", span, none, "bytes", "peer")                      \
  X(fill, "fill", "copy", span, none, "bytes", "")                                    \
  X(io, "io", "io", span, none, "bytes", "offset")

enum class kind : std::uint8_t {
#define RILL_TRACE_KIND_ENUMERATOR(name, display, category, extent, flow, arg0, arg1) name,
  RILL_TRACE_KINDS(RILL_TRACE_KIND_ENUMERATOR)
#undef RILL_TRACE_KIND_ENUMERATOR
};

struct kind_info {
  std::string_view name;
  std::string_view category;
  trace::shape shape;
  trace::flow_role flow;
  std::string_view arg0;
  std::string_view arg1;
};

inline constexpr std::array kind_table = {
#define RILL_TRACE_KIND_INFO(name, display, category, extent, flow, arg0, arg1) \
  kind_info{display, category, shape::extent, flow_role::flow, arg0, arg1},
    RILL_TRACE_KINDS(RILL_TRACE_KIND_INFO)
#undef RILL_TRACE_KIND_INFO
};

inline constexpr std::size_t kind_count = kind_table.size();

constexpr const kind_info& info(kind k) { return kind_table[static_cast<std::size_t>(k)]; }
constexpr bool is_span(kind k) { return info(k).shape == shape::span; }

}  // namespace rill::detail::trace
