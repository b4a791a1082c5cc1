// The parser of --rill:* flags and RILL_* variables and the --rill:help table, both generated from
// the list of options in rill/config_options.hpp, where each option and its default is written once.
#include "common/options.hpp"

#include <fmt/format.h>
#include <unistd.h>  // environ

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string_view>
#include <type_traits>
#include <utility>

#include "rill/detail/segment_layout.hpp"
#include "rill/error.hpp"

namespace rill::detail {

namespace {

using setter = std::function<void(parsed_options&, std::string_view)>;
using shown_fn = std::function<std::string(const rill::config&)>;

struct option_spec {
  const char* layer;  // the layer it tunes: --rill:help lists the options layer by layer
  const char* name;   // flag --rill:<name>, variable RILL_<NAME> (dashes become underscores)
  shown_fn shown_default;
  const char* meaning;
  setter set;
  bool bare = false;  // may be given without a value (--rill:<name>), which the setter sees as ""
  shown_fn value;     // a config's value, as the flag would give it
  bool same_on_every_rank = false;
};

[[noreturn]] void bad_value(std::string_view name, std::string_view value, std::string_view expected) {
  throw usage_error(fmt::format("--rill:{}={}: expected {}", name, value, expected));
}

// The kinds of value an option takes (the `kind` column of rill/config_options.hpp): each reads a
// value into a field of type T, and shows a field's value as --rill:help prints it.

// (Constructors, not aggregates: the lists write number(1, 1024), which clang before 16 does not
// accept for an aggregate.)
struct number {
  constexpr number(std::uint64_t lo, std::uint64_t hi) : min(lo), max(hi) {}
  std::uint64_t min, max;
  static constexpr bool bare = false;
  template <class T>
  T parse(std::string_view name, std::string_view value) const {
    std::uint64_t v{};
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc{} || end != value.data() + value.size() || v < min || v > max)
      bad_value(name, value, fmt::format("an integer in [{}, {}]", min, max));
    return static_cast<T>(v);
  }
  template <class T>
  std::string show(T v) const {
    return fmt::format("{}", v);
  }
};

// Byte counts accept a K/M/G/T (binary) suffix: 64K, 4KiB, 1M; help shows the largest suffix that
// divides them: 65536 is 64KiB.
struct bytes {
  constexpr bytes(std::size_t lo = 0, std::size_t hi = 0) : min(lo), max(hi) {}
  std::size_t min, max;
  static constexpr bool bare = false;
  template <class T>
  T parse(std::string_view name, std::string_view value) const {
    std::string_view digits = value;
    std::size_t scale = 1;
    for (auto [suffix, s] : {std::pair{"KiB", 1024ull},
                             {"MiB", 1ull << 20},
                             {"GiB", 1ull << 30},
                             {"TiB", 1ull << 40},
                             {"K", 1024ull},
                             {"M", 1ull << 20},
                             {"G", 1ull << 30},
                             {"T", 1ull << 40}}) {
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
      bad_value(name, value, fmt::format("a byte count in [{}, {}] (K/M/G/T suffixes allowed)", min, max));
    }
    return v * scale;
  }
  template <class T>
  std::string show(T v) const {
    for (auto [suffix, scale] :
         {std::pair{"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1024ull}})
      if (v != 0 && v % scale == 0) return fmt::format("{}{}", v / scale, suffix);
    return fmt::format("{}", v);
  }
};

// A node ring: 0 (off) or at least 4 KiB, rounded up to whole cache lines.
struct ring_bytes_kind {
  static constexpr bool bare = false;
  template <class T>
  T parse(std::string_view name, std::string_view value) const {
    const std::size_t v = bytes{0, std::size_t{1} << 30}.parse<std::size_t>(name, value);
    if (v != 0 && v < 4096) bad_value(name, value, "0 or at least 4KiB");
    return (v + 63) / 64 * 64;
  }
  template <class T>
  std::string show(T v) const {
    return bytes{}.show(v);
  }
};
constexpr ring_bytes_kind ring_bytes;

struct seconds {
  constexpr seconds(double lo, double hi) : min(lo), max(hi) {}
  double min, max;
  static constexpr bool bare = false;
  template <class T>
  T parse(std::string_view name, std::string_view value) const {
    double s = -1;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
    if (ec != std::errc{} || end != value.data() + value.size() || !(s >= min && s <= max))
      bad_value(name, value, fmt::format("seconds in [{}, {}]", min, max));
    return s;
  }
  template <class T>
  std::string show(T v) const {
    return fmt::format("{}", v);
  }
};

// A switch: on, off, or the bare flag for on.
struct on_off_kind {
  static constexpr bool bare = true;
  template <class T>
  T parse(std::string_view name, std::string_view value) const {
    if (value.empty() || value == "on") return true;
    if (value != "off") bad_value(name, value, "on or off");
    return false;
  }
  template <class T>
  std::string show(T v) const {
    return v ? "on" : "off";
  }
};
constexpr on_off_kind on_off;

// A file to write: never empty, which is the default's "off".
struct path_kind {
  static constexpr bool bare = false;
  template <class T>
  T parse(std::string_view name, std::string_view value) const {
    if (value.empty()) bad_value(name, value, "a file path");
    return T(value);
  }
  template <class T>
  std::string show(const T& v) const {
    return v.empty() ? "(off)" : v;
  }
};
constexpr path_kind path;

// --rill:faults: comma-separated drop=N, stall=R@K, slow=R:MS (rill::fault_plan); "" for none.
struct fault_spec_kind {
  static constexpr bool bare = false;
  template <class T>
  T parse(std::string_view name, std::string_view value) const {
    constexpr std::string_view expected =
        "comma-separated drop=N (N >= 1), stall=RANK@BUFFERS, slow=RANK:MS, or nothing";
    const auto read = [&](std::string_view digits, std::uint64_t& out) {
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
      if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size()) bad_value(name, value, expected);
    };
    const auto read_rank = [&](std::string_view digits) {
      std::uint64_t r = 0;
      read(digits, r);
      if (r >= 1024) bad_value(name, value, expected);
      return static_cast<int>(r);
    };
    T plan;
    std::string_view rest = value;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos) bad_value(name, value, expected);
      const std::string_view key = item.substr(0, eq), arg = item.substr(eq + 1);
      if (key == "drop") {
        read(arg, plan.drop_one_in);
        if (plan.drop_one_in == 0) bad_value(name, value, expected);
      } else if (key == "stall" && arg.find('@') != std::string_view::npos) {
        plan.stall_rank = read_rank(arg.substr(0, arg.find('@')));
        read(arg.substr(arg.find('@') + 1), plan.stall_after);
      } else if (key == "slow" && arg.find(':') != std::string_view::npos) {
        plan.slow_rank = read_rank(arg.substr(0, arg.find(':')));
        read(arg.substr(arg.find(':') + 1), plan.slow_ms);
      } else {
        bad_value(name, value, expected);
      }
    }
    return plan;
  }
  template <class T>
  std::string show(const T& plan) const {
    std::string out;
    const auto add = [&](std::string item) { out += (out.empty() ? "" : ",") + item; };
    if (plan.drop_one_in != 0) add(fmt::format("drop={}", plan.drop_one_in));
    if (plan.stall_rank >= 0) add(fmt::format("stall={}@{}", plan.stall_rank, plan.stall_after));
    if (plan.slow_rank >= 0) add(fmt::format("slow={}:{}", plan.slow_rank, plan.slow_ms));
    return out.empty() ? "(none)" : out;
  }
};
constexpr fault_spec_kind fault_spec;

// One of a fixed list of words, each naming a value.
template <class E, std::size_t N>
struct words {
  std::array<std::pair<std::string_view, E>, N> names;
  static constexpr bool bare = false;
  template <class T>
  T parse(std::string_view name, std::string_view value) const {
    for (const auto& [word, v] : names)
      if (value == word) return T(v);
    std::string expected;
    for (std::size_t i = 0; i < N; ++i)
      expected += fmt::format("{}{}", i == 0 ? "" : i + 1 == N ? " or " : ", ", names[i].first);
    bad_value(name, value, expected);
  }
  template <class T>
  std::string show(const T& v) const {
    for (const auto& [word, value] : names)
      if (value == v) return std::string(word);
    return "?";
  }
};
template <class E, class... W>
constexpr auto word_list(std::pair<std::string_view, E> first, W... rest) {
  return words<E, 1 + sizeof...(W)>{{first, rest...}};
}
template <class E>
using word = std::pair<std::string_view, E>;

constexpr auto transport_names =
    word_list(word<transport_kind>{"local", transport_kind::local}, word<transport_kind>{"mpi", transport_kind::mpi});
constexpr auto steal_names =
    word_list(word<steal_policy>{"off", steal_policy::off}, word<steal_policy>{"random", steal_policy::random},
              word<steal_policy>{"hierarchical", steal_policy::hierarchical});
constexpr auto gas_cache_names = word_list(word<gas_cache_policy>{"unbounded", gas_cache_policy::unbounded},
                                           word<gas_cache_policy>{"lru", gas_cache_policy::lru},
                                           word<gas_cache_policy>{"random", gas_cache_policy::random});
constexpr auto tag_check_names =
    word_list(word<tag_checks>{"every", tag_checks::every}, word<tag_checks>{"home", tag_checks::home});
constexpr auto unobserved_names = word_list(word<unobserved_policy>{"fatal", unobserved_policy::fatal},
                                            word<unobserved_policy>{"warn", unobserved_policy::warn},
                                            word<unobserved_policy>{"ignore", unobserved_policy::ignore});
constexpr auto bind_names =
    word_list(word<bind_policy>{"none", bind_policy::none}, word<bind_policy>{"cores", bind_policy::cores});
constexpr auto progress_names = word_list(word<progress_mode>{"worker", progress_mode::worker},
                                          word<progress_mode>{"thread", progress_mode::thread});
constexpr auto io_order_names =
    word_list(word<io_order>{"elevator", io_order::elevator}, word<io_order>{"fifo", io_order::fifo});
constexpr auto log_levels =
    word_list(word<std::string_view>{"trace", "trace"}, word<std::string_view>{"debug", "debug"},
              word<std::string_view>{"info", "info"}, word<std::string_view>{"warn", "warn"},
              word<std::string_view>{"error", "error"}, word<std::string_view>{"critical", "critical"},
              word<std::string_view>{"off", "off"});

// The `shown` column: the default of rill::config, or a text for one chosen at start-up.
struct from_config_t {};
constexpr from_config_t from_config;
// The `agree` column.
constexpr bool same = true, per_rank = false;

template <auto member, class Kind, class Shown>
option_spec make_spec(const char* layer, const char* name, Kind kind, Shown shown, bool agree, const char* meaning) {
  using T = std::remove_cvref_t<decltype(std::declval<rill::config&>().*member)>;
  option_spec s{layer,
                name,
                {},
                meaning,
                [kind, name](parsed_options& o, std::string_view v) {
                  o.cfg.*member = kind.template parse<T>(name, v);
                  o.given.insert(name);
                },
                Kind::bare,
                [kind](const rill::config& c) { return kind.template show<T>(c.*member); },
                agree};
  if constexpr (std::is_same_v<Shown, from_config_t>) {
    s.shown_default = s.value;
  } else {
    s.shown_default = [text = std::string(shown)](const rill::config&) { return text; };
  }
  return s;
}

const std::vector<option_spec>& table() {
#define RILL_OPTION_SPEC(layer, name, member, type, default_value, kind, shown, agree, meaning) \
  make_spec<&rill::config::member>(#layer, name, kind, shown, agree, meaning),
  static const std::vector<option_spec> specs = {RILL_OPTIONS(RILL_OPTION_SPEC)  //
                                                 {"runtime",
                                                  "help",
                                                  [](const rill::config&) { return std::string(); },
                                                  "print this table and exit",
                                                  [](parsed_options& o, std::string_view v) {
                                                    if (!v.empty()) bad_value("help", v, "no value");
                                                    o.help = true;
                                                  },
                                                  true,
                                                  {},  // not a value of rill::config
                                                  false}};
#undef RILL_OPTION_SPEC
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

// A RILL_* variable that names no option is most likely a typo (RILL_WORKER=4): say so rather than
// ignore it. RILL_HELP is ignored on purpose, and the variables of Rill's own scripts are theirs.
void warn_unknown_variables(parsed_options& o) {
  constexpr std::string_view not_options[] = {"RILL_HELP", "RILL_BUILD_DIR", "RILL_TEST_JOBS"};
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with("RILL_")) continue;
    const std::string_view name = entry.substr(0, entry.find('='));
    if (std::find(std::begin(not_options), std::end(not_options), name) != std::end(not_options)) continue;
    const bool known = std::any_of(table().begin(), table().end(),
                                   [&](const option_spec& s) { return s.value && env_name(s.name) == name; });
    if (!known)
      o.warnings.push_back(
          fmt::format("{} is set but names no Rill option, and is ignored (--rill:help lists them)", name));
  }
}

// Whole pages for both, and room for the rank's own heap (at least 64 KiB) between the segment's
// locks and tags and the global heap.
void fit_global_heap(parsed_options& o) {
  constexpr std::size_t page = 4096, own_heap_min = 64 * 1024;
  rill::config& c = o.cfg;
  c.segment_bytes = (c.segment_bytes + page - 1) / page * page;
  const std::size_t reserved = rill::detail::segment_layout::heap_start(c.segment_bytes) + own_heap_min;
  if (!o.was_given("global-heap")) c.global_heap_bytes = std::min(c.segment_bytes / 2, c.segment_bytes - reserved);
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
  for (const auto& s : table()) {
    if (s.name == std::string_view("help")) continue;
    if (const char* v = std::getenv(env_name(s.name).c_str())) s.set(o, v);
  }
  warn_unknown_variables(o);
  constexpr std::string_view prefix = "--rill:";
  int out = argc > 0 ? 1 : 0;
  for (int i = out; i < argc; ++i) {
    if (!argv[i])
      throw usage_error(fmt::format(
          "argv[{}] is null but argc is {}: argc does not count argv (a runtime removes its --rill: flags from "
          "both; pass the argc it left, not a copy taken before)",
          i, argc));
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

std::string options_every_rank_must_share(const rill::config& c) {
  std::string out;
  for (const auto& s : table())
    if (s.same_on_every_rank) out += fmt::format("--rill:{}={}\n", s.name, s.value(c));
  return out;
}

std::string options_help() {
  std::string out = "Rill runtime options (flag --rill:NAME=VALUE, or environment variable RILL_NAME):\n";
  const rill::config defaults;
  // Layer by layer, bottom up, as rill/config_options.hpp lists them.
  std::string_view layer;
  for (const auto& s : table()) {
    if (s.layer != layer) out += fmt::format("{}:\n", layer = s.layer);
    const std::string shown = s.shown_default(defaults);
    out += fmt::format("  --rill:{:<17} {:<34} {}\n", s.name, shown.empty() ? "-" : shown, s.meaning);
  }
  return out;
}

}  // namespace rill::detail
