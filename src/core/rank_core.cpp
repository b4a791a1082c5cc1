#include "core/rank_core.hpp"

#include <algorithm>

#include "scheduler/current_module.hpp"

namespace rill::detail {

rank_core::rank_core(endpoint& ep, const rill::config& cfg)
    : id_(ep.rank()),
      size_(ep.size()),
      msgr_(ep, pool_, cfg),
      pool_(*this, cfg.workers, cfg.channels, cfg.io_threads, cfg.progress == rill::progress_mode::thread,
            cfg.stack_bytes, cfg.idle_poll_us, cfg.inline_queue) {
  modules().add_unowned(msgr_);
  ep.on_arrival([this] { pool_.notify_arrival(); });
  if (wake_word* shared = ep.sleep_word()) pool_.sleep_workers_on(*shared);
}

// The modules go first, the last added first: a module's state may refer to what lies below it
// (callbacks still waiting in the event table are released while the pool still exists).
rank_core::~rank_core() { modules().clear(); }

void rank_core::modules_ready() {
  out_of_work_hooks_.clear();
  idle_hooks_.clear();
  for (rank_module* m : modules().in_order()) {
    if (m->hooks() & rank_module::out_of_work_hook) out_of_work_hooks_.push_back(m);
    if (m->hooks() & rank_module::idle_hook) idle_hooks_.push_back(m);
  }
  std::reverse(idle_hooks_.begin(), idle_hooks_.end());
}

void rank_core::on_out_of_work(worker& w) {
  for (rank_module* m : out_of_work_hooks_) m->on_out_of_work(w);
}

void rank_core::on_idle(worker& w) {
  for (rank_module* m : idle_hooks_) m->on_idle(w);
}

void rank_core::stop(int exit_code) {
  exit_code_ = exit_code;
  set_stopping();
  pool_.wake_everyone();
}

rill::rank_stats rank_core::stats() {
  rill::rank_stats s;
  for (int i = 0; i < pool_.threads(); ++i) {
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

std::vector<rill::counter> rank_core::counters() {
  struct collect final : counter_report {
    std::vector<rill::counter> list;
    std::string_view layer;
    void add(std::string_view name, std::uint64_t value) override {
      list.push_back(rill::counter{std::string(layer), std::string(name), value});
    }
  } out;
  const rill::rank_stats s = stats();
  out.layer = "scheduler";
  out.add("tasks_run", s.tasks_run);
  out.add("steals", s.steals);
  out.add("fibers_created", s.fibers_created);
  out.layer = "messages";
  out.add("messages_sent", s.messages_sent);
  out.add("messages_handled", s.messages_handled);
  out.add("buffers_sent", s.buffers_sent);
  out.add("bytes_sent", s.bytes_sent);
  out.add("sends_refused", msgr_.out().refused());
  for (rank_module* m : modules().in_order()) {
    out.layer = m->layer();
    m->report_counters(out);
  }
  return std::move(out.list);
}

int rank_core::end_of_run(int exit_code) {
  for (rank_module* m : modules().in_order()) exit_code = m->end_of_run(exit_code);
  return exit_code;
}

rank_core& current_core(const char* what) {
  worker* w = current_worker();
  if (!w) throw_outside_worker(what);
  return static_cast<rank_core&>(w->pool().services());
}

}  // namespace rill::detail
