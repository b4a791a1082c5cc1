#include "core/delivery_audit.hpp"

#include <algorithm>
#include <string>

#include "common/clock.hpp"
#include "common/log.hpp"
#include "messages/control_send.hpp"
#include "scheduler/current_module.hpp"

namespace rill::detail {

namespace {

delivery_audit& audit_here(const char* what) { return current_module<delivery_audit>(what); }

void request_handler(int from) { audit_here("delivery audit request").on_request(from); }
void ack_handler(int from) { audit_here("delivery audit answer").on_ack(from); }
void count_handler(int from, std::uint64_t handed) { audit_here("delivery audit count").on_count(from, handed); }

constexpr std::uint64_t look_every_ns = 10'000'000;

}  // namespace

delivery_audit::delivery_audit(messenger& m, const rill::config& cfg)
    : rank_module("core", idle_hook),
      msgr_(m),
      me_(m.id()),
      ranks_(m.size()),
      period_ns_(static_cast<std::uint64_t>(cfg.hang_report_s * 1e9)),
      unresponsive_ns_(static_cast<std::uint64_t>(cfg.unresponsive_s * 1e9)),
      asked_ns_(static_cast<std::size_t>(ranks_)),
      named_silent_(static_cast<std::size_t>(ranks_)),
      shortfalls_(static_cast<std::size_t>(ranks_)) {
  if (enabled()) m.out().on_long_wait([this](int dest, std::uint64_t since) { on_long_wait(dest, since); });
}

delivery_audit::~delivery_audit() { msgr_.out().on_long_wait({}); }

void delivery_audit::start(const std::string& why, int full, std::uint64_t full_since_ns) {
  if (!enabled()) return;
  const std::uint64_t now = steady_now_ns();
  {
    std::lock_guard g(lock_);
    if (last_start_ns_ != 0 && now - last_start_ns_ < period_ns_) return;
    last_start_ns_ = now;
    for (int r = 0; r < ranks_; ++r) {
      if (r != me_ && asked_ns_[static_cast<std::size_t>(r)] == 0) {  // (this rank answers itself)
        asked_ns_[static_cast<std::size_t>(r)] = r == full ? full_since_ns : now;
        named_silent_[static_cast<std::size_t>(r)] = false;
      }
    }
  }
  log().info("rank {}: auditing message delivery ({})", me_, why);
  for (int r = 0; r < ranks_; ++r)
    if (r != full)
      control_send(
          msgr_, r, [](int from) { request_handler(from); }, me_);
}

void delivery_audit::on_request(int from) {
  control_send(
      msgr_, from, [](int f) { ack_handler(f); }, me_);
  for (int d = 0; d < ranks_; ++d) {
    const std::uint64_t handed = msgr_.counts().handed_to(d);
    if (handed != 0)
      control_send(
          msgr_, d, [](int f, std::uint64_t h) { count_handler(f, h); }, me_, handed);
  }
}

void delivery_audit::on_ack(int from) {
  std::lock_guard g(lock_);
  asked_ns_[static_cast<std::size_t>(from)] = 0;
}

void delivery_audit::on_count(int from, std::uint64_t handed) {
  if (handed <= msgr_.counts().received_from(from)) return;
  std::lock_guard g(lock_);
  shortfall& s = shortfalls_[static_cast<std::size_t>(from)];
  if (s.seen_ns == 0) s = shortfall{handed, steady_now_ns()};  // an older count is due sooner
}

void delivery_audit::on_idle(worker&) {
  if (enabled() && every_nth_idle_round<32, delivery_audit>()) look(steady_now_ns());
}

void delivery_audit::on_long_wait(int dest, std::uint64_t since_ns) {
  const std::uint64_t now = steady_now_ns();
  if (now - since_ns < period_ns_) return;
  start(fmt::format("a send has waited {:.1f} s for room to rank {}", static_cast<double>(now - since_ns) / 1e9, dest),
        dest, since_ns);
  look(now);
}

void delivery_audit::look(std::uint64_t now) {
  std::uint64_t due = next_look_ns_.load(std::memory_order_relaxed);
  if (now < due || !next_look_ns_.compare_exchange_strong(due, now + look_every_ns)) return;
  check_shortfalls(now);
  check_silent(now);
}

void delivery_audit::check_shortfalls(std::uint64_t now) {
  for (int s = 0; s < ranks_; ++s) {
    shortfall due;
    {
      std::lock_guard g(lock_);
      shortfall& f = shortfalls_[static_cast<std::size_t>(s)];
      if (f.seen_ns == 0 || now < f.seen_ns || now - f.seen_ns < period_ns_) continue;
      due = f;
      f = shortfall{};
    }
    const std::uint64_t received = msgr_.counts().received_from(s);
    if (due.handed <= received) continue;  // late, but all there
    if (msgr_.has_input()) {
      // Buffers wait to be polled (this rank was busy): they may be the missing ones.
      std::lock_guard g(lock_);
      shortfalls_[static_cast<std::size_t>(s)] = due;
      continue;
    }
    fatal(
        "rank {}: {} message(s) from rank {} never arrived: rank {} had handed {} to the transport {:.1f} s ago, and "
        "rank {} has received {} -- the transport lost them (with --rill:faults, on purpose)",
        me_, due.handed - received, s, s, due.handed, static_cast<double>(now - due.seen_ns) / 1e9, me_, received);
  }
}

void delivery_audit::check_silent(std::uint64_t now) {
  std::vector<int> newly_silent, too_long;
  std::uint64_t longest = 0;
  {
    std::lock_guard g(lock_);
    for (int r = 0; r < ranks_; ++r) {
      const std::uint64_t asked = asked_ns_[static_cast<std::size_t>(r)];
      if (asked == 0 || now < asked || now - asked < period_ns_) continue;  // (now may predate a new audit)
      longest = std::max(longest, now - asked);
      if (unresponsive_ns_ != 0 && now - asked >= unresponsive_ns_) too_long.push_back(r);
      if (!named_silent_[static_cast<std::size_t>(r)]) {
        named_silent_[static_cast<std::size_t>(r)] = true;
        newly_silent.push_back(r);
      }
    }
  }
  const auto describe = [&](const std::vector<int>& ranks) {
    std::string names;
    for (int r : ranks) names += (names.empty() ? "" : ", ") + std::to_string(r);
    // A rank cut off from the network finds every other rank silent.
    const bool all_others = ranks_ > 2 && static_cast<int>(ranks.size()) == ranks_ - 1;
    return fmt::format(
        "rank(s) {} have not answered a delivery audit for {:.1f} s: each has stopped, or is too busy to poll "
        "the network (a task that never yields){}",
        names, static_cast<double>(longest) / 1e9,
        all_others ? " (every other rank is silent: more likely this rank has lost contact)" : "");
  };
  if (!too_long.empty()) fatal("rank {}: {} (--rill:unresponsive-s)", me_, describe(too_long));
  if (!newly_silent.empty())
    log().warn("rank {}: {}; --rill:unresponsive-s=S stops the job when this lasts S s", me_, describe(newly_silent));
}

}  // namespace rill::detail
