// Every runtime option in one table: the layer it tunes, its meaning and its parser. Defaults are
// those of rill::config (rill/config.hpp), written there once and shown from there by --rill:help.
#include "common/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string_view>

#include "common/segment_layout.hpp"
#include "rill/error.hpp"

namespace rill::detail {

namespace {

using setter = std::function<void(parsed_options&, std::string_view)>;

// A default as --rill:help shows it, read from rill::config{} so that each default is written once,
// in rill/config.hpp (or, for a default that depends on the machine or the build, described).
using shown_fn = std::function<std::string(const rill::config&)>;

struct option_spec {
  const char* layer;  // the layer it tunes: --rill:help lists the options layer by layer
  const char* name;   // flag --rill:<name>, variable RILL_<NAME> (dashes become underscores)
  shown_fn shown_default;
  const char* meaning;
  setter set;
  bool bare = false;  // may be given without a value (--rill:<name>), which the setter sees as ""
};

template <auto member>
std::string shown_number(const rill::config& c) {
  return fmt::format("{}", c.*member);
}

// Bytes with the largest binary suffix that divides them: 65536 is 64KiB.
template <auto member>
std::string shown_size(const rill::config& c) {
  const std::size_t v = c.*member;
  for (auto [suffix, scale] : {std::pair{"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1024ull}})
    if (v != 0 && v % scale == 0) return fmt::format("{}{}", v / scale, suffix);
  return fmt::format("{}", v);
}

template <auto member>
std::string shown_switch(const rill::config& c) {
  return c.*member ? "on" : "off";
}

template <auto member>
std::string shown_path(const rill::config& c) {
  return (c.*member).empty() ? "(off)" : c.*member;
}

// The names of an enumerated option's values, for parsing and for --rill:help.
template <class E>
using choice = std::pair<std::string_view, E>;
constexpr std::array steal_names = {choice<steal_policy>{"off", steal_policy::off},
                                    choice<steal_policy>{"random", steal_policy::random},
                                    choice<steal_policy>{"hierarchical", steal_policy::hierarchical}};
constexpr std::array gas_cache_names = {choice<gas_cache_policy>{"unbounded", gas_cache_policy::unbounded},
                                        choice<gas_cache_policy>{"lru", gas_cache_policy::lru},
                                        choice<gas_cache_policy>{"random", gas_cache_policy::random}};

template <auto member, class Names>
shown_fn shown_choice(const Names& names) {
  return [&names](const rill::config& c) {
    for (const auto& [name, value] : names)
      if (value == c.*member) return std::string(name);
    return std::string("?");
  };
}

shown_fn shown_text(const char* text) {
  return [text](const rill::config&) { return std::string(text); };
}

[[noreturn]] void bad_value(std::string_view name, std::string_view value, const char* expected) {
  throw usage_error(fmt::format("--rill:{}={}: expected {}", name, value, expected));
}

template <class Names>
auto parse_choice(std::string_view option, std::string_view v, const Names& names, const char* expected) {
  for (const auto& [name, value] : names)
    if (v == name) return value;
  bad_value(option, v, expected);
}

template <class T>
T parse_number(std::string_view name, std::string_view value, T min, T max) {
  T v{};
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc{} || end != value.data() + value.size() || v < min || v > max) {
    bad_value(name, value, fmt::format("an integer in [{}, {}]", min, max).c_str());
  }
  return v;
}

// Sizes accept a K/M/G (binary) suffix: 64K, 4KiB, 1M.
std::size_t parse_size(std::string_view name, std::string_view value, std::size_t min, std::size_t max) {
  std::string_view digits = value;
  std::size_t scale = 1;
  for (auto [suffix, s] : {std::pair{"KiB", 1024ull},
                           {"MiB", 1ull << 20},
                           {"GiB", 1ull << 30},
                           {"K", 1024ull},
                           {"M", 1ull << 20},
                           {"G", 1ull << 30}}) {
    std::string_view sv(suffix);
    if (digits.size() > sv.size() && digits.ends_with(sv)) {
      digits.remove_suffix(sv.size());
      scale = s;
      break;
    }
  }
  std::size_t v{};
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty() || v > max / scale ||
      v * scale < min || v * scale > max) {
    bad_value(name, value, fmt::format("a byte count in [{}, {}] (K/M/G suffixes allowed)", min, max).c_str());
  }
  return v * scale;
}

const std::vector<option_spec>& table() {
  static const std::vector<option_spec> specs = {
      {"transport", "ranks", shown_number<&rill::config::ranks>,
       "ranks of the local transport (threads of this process)",
       [](parsed_options& o, std::string_view v) { o.cfg.ranks = parse_number<int>("ranks", v, 1, 1024); }},
      {"scheduler", "workers", shown_text("cores / ranks on this node"), "worker threads per rank",
       [](parsed_options& o, std::string_view v) {
         o.cfg.workers = parse_number<int>("workers", v, 1, 1024);
         o.workers_given = true;
       }},
      {"transport", "transport", shown_text("mpi under mpirun/srun, else local"),
       "local (ranks as threads) or mpi (ranks as processes)",
       [](parsed_options& o, std::string_view v) {
         if (v == "local")
           o.cfg.transport = transport_kind::local;
         else if (v == "mpi")
           o.cfg.transport = transport_kind::mpi;
         else
           bad_value("transport", v, "local or mpi");
         o.transport_given = true;
       }},
      {"scheduler", "stack", shown_size<&rill::config::stack_bytes>,
       "stack a task can count on, in bytes (fiber stacks are twice this, with a guard page below; x4 under ASan, x2 "
       "under TSan)",
       [](parsed_options& o, std::string_view v) { o.cfg.stack_bytes = parse_size("stack", v, 8192, 1ull << 30); }},
      {"messages", "agg-bytes", shown_size<&rill::config::agg_bytes>,
       "aggregation buffer size threshold: a destination's buffer leaves when it is this full",
       [](parsed_options& o, std::string_view v) { o.cfg.agg_bytes = parse_size("agg-bytes", v, 64, 16ull << 20); }},
      {"messages", "agg-age-us", shown_number<&rill::config::agg_age_us>,
       "age threshold: a buffer whose oldest message is this old (microseconds) leaves",
       [](parsed_options& o, std::string_view v) {
         o.cfg.agg_age_us = parse_number<std::uint64_t>("agg-age-us", v, 0, 10'000'000);
       }},
      {"messages", "large-bytes", shown_size<&rill::config::large_bytes>,
       "payloads above this size travel on their own, not copied into buffers",
       [](parsed_options& o, std::string_view v) { o.cfg.large_bytes = parse_size("large-bytes", v, 64, 1ull << 30); }},
      {"transport", "queue-buffers", shown_number<&rill::config::queue_buffers>,
       "buffers in flight per destination before the sender feels back-pressure",
       [](parsed_options& o, std::string_view v) {
         o.cfg.queue_buffers = parse_number<int>("queue-buffers", v, 1, 1 << 20);
       }},
      {"transport", "node-ring", shown_size<&rill::config::node_ring_bytes>,
       "mpi: bytes of the shared-memory ring a rank keeps for each other rank of its node, through which their "
       "buffers (up to agg-bytes + large-bytes, and a quarter of the ring) travel instead of MPI (0 = off)",
       [](parsed_options& o, std::string_view v) {
         const std::size_t bytes = parse_size("node-ring", v, 0, 1ull << 30);
         if (bytes != 0 && bytes < 4096) bad_value("node-ring", v, "0 or at least 4KiB");
         o.cfg.node_ring_bytes = (bytes + 63) / 64 * 64;
       }},
      {"transport", "chaos", shown_number<&rill::config::chaos>,
       "local transport: seed for delayed, reordered, batched delivery (0 = off)",
       [](parsed_options& o, std::string_view v) {
         o.cfg.chaos = parse_number<std::uint64_t>("chaos", v, 0, std::numeric_limits<std::uint64_t>::max());
       }},
      {"runtime", "log", shown_number<&rill::config::log>, "log level: trace, debug, info, warn, error, critical, off",
       [](parsed_options& o, std::string_view v) {
         static constexpr std::string_view levels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
         for (auto l : levels)
           if (v == l) {
             o.cfg.log = std::string(v);
             return;
           }
         bad_value("log", v, "trace, debug, info, warn, error, critical or off");
       }},
      {"scheduler", "idle-poll-us", shown_number<&rill::config::idle_poll_us>,
       "microseconds an idle worker keeps polling before it sleeps (ranks woken by arrivals: at most 50)",
       [](parsed_options& o, std::string_view v) {
         o.cfg.idle_poll_us = parse_number<std::uint64_t>("idle-poll-us", v, 0, 60'000'000);
       }},
      {"scheduler", "inline-queue", shown_number<&rill::config::inline_queue>,
       "tasks queued on a worker from which a task spawned with rill::may_inline runs at once on the spawner's stack "
       "instead of being queued (0 = always, when there is stack room)",
       [](parsed_options& o, std::string_view v) {
         o.cfg.inline_queue = parse_number<std::int64_t>("inline-queue", v, 0, std::int64_t{1} << 40);
       }},
      {"events", "event-graph", shown_path<&rill::config::event_graph>,
       "record the event graph; at the end each rank writes PATH.rankN.dot (and the whole graph to PATH when all "
       "ranks share this process), see docs/debugging.md",
       [](parsed_options& o, std::string_view v) {
         if (v.empty()) bad_value("event-graph", v, "a file path");
         o.cfg.event_graph = std::string(v);
       }},
      {"runtime", "trace", shown_path<&rill::config::trace>,
       "record a timeline of the run (tasks, handlers, messages, events, steals per worker) and write it as one "
       "Chrome/Perfetto JSON trace at PATH, see docs/tracing.md",
       [](parsed_options& o, std::string_view v) {
         if (v.empty()) bad_value("trace", v, "a file path");
         o.cfg.trace = std::string(v);
       }},
      {"events", "hang-report-s", shown_number<&rill::config::hang_report_s>,
       "seconds without any event triggering on a rank that has waiters before it prints what it waits on "
       "(0 = never; fractions allowed)",
       [](parsed_options& o, std::string_view v) {
         double s = -1;
         auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
         if (ec != std::errc{} || end != v.data() + v.size() || !(s >= 0 && s <= 1e6))
           bad_value("hang-report-s", v, "seconds in [0, 1000000]");
         o.cfg.hang_report_s = s;
       }},
      {"steal", "steal", shown_choice<&rill::config::steal>(steal_names),
       "distributed work stealing of rill::async_any tasks by idle ranks: off, random (any rank) or hierarchical "
       "(ranks on the same node first)",
       [](parsed_options& o, std::string_view v) {
         o.cfg.steal = parse_choice("steal", v, steal_names, "off, random or hierarchical");
       }},
      {"steal", "steal-batch", shown_number<&rill::config::steal_batch>,
       "the most async_any tasks one steal takes (at most half of the victim's queue)",
       [](parsed_options& o, std::string_view v) {
         o.cfg.steal_batch = parse_number<std::uint32_t>("steal-batch", v, 1, 1 << 20);
       }},
      {"global", "segment", shown_size<&rill::config::segment_bytes>,
       "each rank's registered segment for global memory (rill::new_array): reserved address space, committed as used",
       [](parsed_options& o, std::string_view v) {
         o.cfg.segment_bytes = parse_size("segment", v, 128 * 1024, 1ull << 40);
       }},
      {"global", "global-heap", shown_text("half the segment"),
       "the last part of each rank's segment that holds global arrays (rill::global_alloc); a multiple of 4 KiB",
       [](parsed_options& o, std::string_view v) {
         o.cfg.global_heap_bytes = parse_size("global-heap", v, 0, 1ull << 40);
         o.global_heap_given = true;
       }},
      {"global", "shared-segments", shown_switch<&rill::config::shared_segments>,
       "on: ranks in one process (local transport) or on one node (mpi, a shared-memory window) address each "
       "other's segments directly; off: only their own",
       [](parsed_options& o, std::string_view v) {
         if (v == "on")
           o.cfg.shared_segments = true;
         else if (v == "off")
           o.cfg.shared_segments = false;
         else
           bad_value("shared-segments", v, "on or off");
       }},
      {"global", "tag-checks", shown_text("every (debug), home (release)"),
       "where generation tags of global memory catch use after free: every access, or at the home, in local() and in "
       "bulk transfers (single-element operations through a mapped segment check bounds only)",
       [](parsed_options& o, std::string_view v) {
         if (v == "every")
           o.cfg.tag_check = rill::tag_checks::every;
         else if (v == "home")
           o.cfg.tag_check = rill::tag_checks::home;
         else
           bad_value("tag-checks", v, "every or home");
       }},
      {"global", "gas-cache", shown_choice<&rill::config::gas_cache>(gas_cache_names),
       "the translation cache of relocated AGAS blocks (rill/gas.hpp): unbounded, lru or random (the last two forget "
       "blocks beyond "
       "gas-cache-entries)",
       [](parsed_options& o, std::string_view v) {
         o.cfg.gas_cache = parse_choice("gas-cache", v, gas_cache_names, "unbounded, lru or random");
       }},
      {"global", "gas-cache-entries", shown_number<&rill::config::gas_cache_entries>,
       "the most blocks a bounded translation cache (lru, random) remembers",
       [](parsed_options& o, std::string_view v) {
         o.cfg.gas_cache_entries = parse_number<std::size_t>("gas-cache-entries", v, 1, std::size_t{1} << 32);
       }},
      {"runtime", "stats", shown_switch<&rill::config::stats>,
       "on (or the bare flag): at the end of the run, print every layer's counters per rank on stderr "
       "(rill::counters)",
       [](parsed_options& o, std::string_view v) {
         if (v.empty() || v == "on")
           o.cfg.stats = true;
         else if (v == "off")
           o.cfg.stats = false;
         else
           bad_value("stats", v, "on or off");
       },
       true},
      {"runtime", "help", shown_text(""), "print this table and exit",
       [](parsed_options& o, std::string_view v) {
         if (!v.empty()) bad_value("help", v, "no value");
         o.help = true;
       },
       true},
  };
  return specs;
}

const option_spec& find(std::string_view name) {
  for (const auto& s : table())
    if (name == s.name) return s;
  throw usage_error(fmt::format("unknown option --rill:{} (--rill:help lists them)", name));
}

std::string env_name(std::string_view name) {
  std::string e = "RILL_";
  for (char c : name) e += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return e;
}

// Whole pages for both, and room for the rank's own heap (at least 64 KiB) between the segment's
// locks and tags and the global heap.
void fit_global_heap(parsed_options& o) {
  constexpr std::size_t page = 4096, own_heap_min = 64 * 1024;
  rill::config& c = o.cfg;
  c.segment_bytes = (c.segment_bytes + page - 1) / page * page;
  const std::size_t reserved = rill::detail::segment_layout::heap_start(c.segment_bytes) + own_heap_min;
  if (!o.global_heap_given) c.global_heap_bytes = std::min(c.segment_bytes / 2, c.segment_bytes - reserved);
  c.global_heap_bytes = c.global_heap_bytes / page * page;
  if (c.global_heap_bytes + reserved > c.segment_bytes)
    throw usage_error(fmt::format(
        "--rill:global-heap={} leaves less than 64 KiB of --rill:segment={} to the rank's own heap (after {} bytes of "
        "delegate locks and generation tags)",
        c.global_heap_bytes, c.segment_bytes, rill::detail::segment_layout::heap_start(c.segment_bytes)));
}

}  // namespace

parsed_options parse_options(int& argc, char** argv) {
  parsed_options o;
#ifndef NDEBUG
  o.cfg.tag_check = rill::tag_checks::every;  // a debug build of Rill checks every access
#endif
  for (const auto& s : table()) {
    if (s.name == std::string_view("help")) continue;
    if (const char* v = std::getenv(env_name(s.name).c_str())) s.set(o, v);
  }
  constexpr std::string_view prefix = "--rill:";
  int out = argc > 0 ? 1 : 0;
  for (int i = out; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (!arg.starts_with(prefix)) {
      argv[out++] = argv[i];
      continue;
    }
    arg.remove_prefix(prefix.size());
    const auto eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : arg.substr(eq + 1);
    const option_spec& s = find(name);
    if (eq == std::string_view::npos && !s.bare) {
      throw usage_error(fmt::format("--rill:{} needs a value (--rill:{}=...)", name, name));
    }
    s.set(o, value);
  }
  if (argc > 0) {
    argc = out;
    argv[argc] = nullptr;
  }
  fit_global_heap(o);
  return o;
}

std::string options_help() {
  std::string out = "Rill runtime options (flag --rill:NAME=VALUE, or environment variable RILL_NAME):\n";
  const rill::config defaults;
  // Bottom up, as src/README.md lists the layers.
  constexpr std::string_view layers[] = {"transport", "scheduler", "messages", "events", "global", "steal", "runtime"};
  for (std::string_view layer : layers) {
    out += fmt::format("{}:\n", layer);
    for (const auto& s : table()) {
      if (s.layer != layer) continue;
      const std::string shown = s.shown_default(defaults);
      out += fmt::format("  --rill:{:<17} {:<34} {}\n", s.name, shown.empty() ? "-" : shown, s.meaning);
    }
  }
  return out;
}

}  // namespace rill::detail
