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

}  // namespace

void termination::start_wave() {
  std::uint64_t wave;
  {
    std::lock_guard g(lock_);
    wave = ++wave_;
  }
  // The audit's clock starts with the first wave and restarts only when the totals move: waves
  // that keep agreeing on sent != handled (a lost message) must let it run out.
  if (wave == 1) moved_ns_.store(steady_now_ns(), std::memory_order_relaxed);
  on_probe(wave);
}

void termination::top_level_done(int code) {
  {
    std::lock_guard g(lock_);
    exit_code_ = code;
  }
  start_wave();
}

void termination::spmd_done(int from, int code) {
  if (rank_.id() != 0) {
    control_send(
        rank_.msgr(), 0, [](int f, int c) { spmd_done_handler(f, c); }, from, code);
    return;
  }
  {
    std::lock_guard g(lock_);
    if (code != 0 && (exit_code_rank_ < 0 || from < exit_code_rank_)) {
      exit_code_ = code;
      exit_code_rank_ = from;
    }
    if (++spmd_reports_ < rank_.size()) return;
  }
  start_wave();
}

void termination::on_probe(std::uint64_t wave) {
  if (rank_.id() != 0) wave_messages_.fetch_add(1, std::memory_order_relaxed);
  const int me = rank_.id(), first = tree_.first_child(me), children = tree_.children(me);
  {
    // Before any child can answer: they answer the probe sent below.
    std::lock_guard g(subtree_lock_);
    answers_due_ = children + 1;
    subtree_sent_ = subtree_handled_ = 0;
  }
  for (int c = first; c < first + children; ++c)
    control_send(
        rank_.msgr(), c, [](std::uint64_t w) { probe_handler(w); }, wave);
  probe_wave_.store(wave, std::memory_order_release);
}

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
  add_answer(wave, s.messages_sent, s.messages_handled);
}

void termination::on_reply(std::uint64_t wave, std::uint64_t sent, std::uint64_t handled) {
  wave_messages_.fetch_add(1, std::memory_order_relaxed);
  add_answer(wave, sent, handled);
}

void termination::add_answer(std::uint64_t wave, std::uint64_t sent, std::uint64_t handled) {
  {
    // Waves are sequential: the next starts only once every answer to this one is in, so every
    // answer is for the wave this rank's probe started.
    std::lock_guard g(subtree_lock_);
    subtree_sent_ += sent;
    subtree_handled_ += handled;
    if (--answers_due_ > 0) return;
    sent = subtree_sent_;
    handled = subtree_handled_;
  }
  const int me = rank_.id();
  if (me == 0) {
    wave_answered(sent, handled);
    return;
  }
  control_send(
      rank_.msgr(), tree_.parent(me), [](std::uint64_t w, std::uint64_t s, std::uint64_t h) { reply_handler(w, s, h); },
      wave, sent, handled);
}

void termination::wave_answered(std::uint64_t sent, std::uint64_t handled) {
  bool done = false;
  int code = 0;
  {
    std::lock_guard g(lock_);
    if (sent != prev_sent_ || handled != prev_handled_) moved_ns_.store(steady_now_ns(), std::memory_order_relaxed);
    if (sent == handled && sent == prev_sent_ && handled == prev_handled_) {
      done = true;
      code = exit_code_;
    } else {
      prev_sent_ = sent;
      prev_handled_ = handled;
    }
  }
  if (!done) {
    start_wave();
    return;
  }
  // Once, at the end: one message a rank.
  for (int r = 0; r < rank_.size(); ++r)
    control_send(
        rank_.msgr(), r, [](int c) { stop_handler(c); }, code);
}

void termination::report_counters(counter_report& out) {
  std::uint64_t waves;
  {
    std::lock_guard g(lock_);
    waves = wave_;
  }
  out.add("waves", waves);
  out.add("wave_messages", wave_messages_.load(std::memory_order_relaxed));
}

}  // namespace rill::detail
