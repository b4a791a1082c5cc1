#include "runtime/termination.hpp"

#include "common/clock.hpp"
#include "messages/control_send.hpp"

namespace rill::detail {

namespace {

void probe_handler(std::uint64_t wave) { current_module<termination>("termination probe").on_probe(wave); }

void reply_handler(std::uint64_t wave, std::uint64_t sent, std::uint64_t handled) {
  current_module<termination>("termination reply").on_reply(wave, sent, handled);
}

void spmd_done_handler(int from, int code) { current_module<termination>("spmd report").spmd_done(from, code); }

void stop_handler(int code) { current_core("stop").stop(code); }

void send_probes(rank_core& rank, std::uint64_t wave) {
  for (int r = 0; r < rank.size(); ++r)
    control_send(
        rank.msgr(), r, [](std::uint64_t w) { probe_handler(w); }, wave);
}

}  // namespace

void termination::top_level_done(int code) {
  std::uint64_t wave;
  {
    std::lock_guard g(lock_);
    exit_code_ = code;
    wave = ++wave_;
    replies_ = 0;
    sent_ = handled_ = 0;
  }
  moved_ns_.store(steady_now_ns(), std::memory_order_relaxed);
  send_probes(rank_, wave);
}

void termination::spmd_done(int from, int code) {
  if (rank_.id() != 0) {
    control_send(
        rank_.msgr(), 0, [](int f, int c) { spmd_done_handler(f, c); }, from, code);
    return;
  }
  std::uint64_t wave = 0;
  {
    std::lock_guard g(lock_);
    if (code != 0 && (exit_code_rank_ < 0 || from < exit_code_rank_)) {
      exit_code_ = code;
      exit_code_rank_ = from;
    }
    if (++spmd_reports_ < rank_.size()) return;
    wave = ++wave_;
    replies_ = 0;
    sent_ = handled_ = 0;
  }
  moved_ns_.store(steady_now_ns(), std::memory_order_relaxed);
  send_probes(rank_, wave);
}

void termination::on_probe(std::uint64_t wave) { probe_wave_.store(wave, std::memory_order_release); }

void termination::audit_if_stuck() {
  if (!every_nth_idle_round<64, termination>()) return;
  const std::uint64_t moved = moved_ns_.load(std::memory_order_relaxed);
  if (moved == 0 || steady_now_ns() - moved < audit_.period_ns()) return;
  audit_.start("termination detection has seen no progress");
}

void termination::on_idle(worker&) {
  if (rank_.id() == 0 && audit_.enabled()) audit_if_stuck();
  std::uint64_t wave = probe_wave_.load(std::memory_order_acquire);
  if (wave == 0 || !rank_.pool().quiet()) return;
  if (!probe_wave_.compare_exchange_strong(wave, 0)) return;
  rank_.msgr().agg().flush_all();
  const rill::rank_stats s = rank_.stats();
  control_send(
      rank_.msgr(), 0,
      [](std::uint64_t w, std::uint64_t sent, std::uint64_t handled) { reply_handler(w, sent, handled); }, wave,
      s.messages_sent, s.messages_handled);
}

void termination::on_reply(std::uint64_t wave, std::uint64_t sent, std::uint64_t handled) {
  bool done = false;
  std::uint64_t next_wave = 0;
  int code = 0;
  {
    std::lock_guard g(lock_);
    if (wave != wave_) return;  // a late answer to an abandoned wave
    sent_ += sent;
    handled_ += handled;
    if (++replies_ < rank_.size()) return;
    if (sent_ != prev_sent_ || handled_ != prev_handled_) moved_ns_.store(steady_now_ns(), std::memory_order_relaxed);
    if (sent_ == handled_ && sent_ == prev_sent_ && handled_ == prev_handled_) {
      done = true;
      code = exit_code_;
    } else {
      prev_sent_ = sent_;
      prev_handled_ = handled_;
      next_wave = ++wave_;
      replies_ = 0;
      sent_ = handled_ = 0;
    }
  }
  if (done) {
    for (int r = 0; r < rank_.size(); ++r)
      control_send(
          rank_.msgr(), r, [](int c) { stop_handler(c); }, code);
  } else {
    send_probes(rank_, next_wave);
  }
}

}  // namespace rill::detail
