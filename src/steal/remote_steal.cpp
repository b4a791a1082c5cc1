#include "steal/remote_steal.hpp"

#include <algorithm>
#include <memory>

#include "common/clock.hpp"
#include "messages/control_send.hpp"
#include "trace/hooks.hpp"

namespace rill::detail {

namespace {
// A thief that found nothing waits this long before it asks again, doubling up to the cap: idle
// ranks ask each other rarely, while a rank that just ran dry asks at once.
constexpr std::uint64_t first_backoff_ns = 20'000;
constexpr std::uint64_t max_backoff_ns = 2'000'000;
}  // namespace

remote_steal::remote_steal(rank_core& rank, const rill::machine& machine, const rill::config& cfg)
    : rank_module("steal", out_of_work_hook | idle_hook),
      rank_(rank),
      machine_(machine),
      policy_(cfg.steal),
      batch_(cfg.steal_batch),
      backoff_ns_(first_backoff_ns),
      rng_(0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(rank.id() + 1)) {}

remote_steal::~remote_steal() = default;

void remote_steal::announce() {
  if (policy_ == steal_policy::off || rank_.size() == 1 || announced_.exchange(true, std::memory_order_relaxed)) return;
  for (int r = 0; r < rank_.size(); ++r)
    if (r != rank_.id())
      control_send(rank_.msgr(), r, [] { current_module<remote_steal>("steal announcement").on_work_announced(); });
}

void remote_steal::on_work_announced() {
  failures_.store(0, std::memory_order_relaxed);
  armed_.store(true, std::memory_order_release);
}

void remote_steal::on_out_of_work(worker&) {
  if (!announced_.load(std::memory_order_relaxed)) return;
  worker_pool& pool = rank_.pool();
  for (int i = 0; i < pool.size(); ++i)
    if (pool.at(i).queued() > 0) return;
  announced_.store(false, std::memory_order_relaxed);
}

int remote_steal::pick_victim() {
  if (near_.empty() && far_.empty()) {
    const rill::machine& m = machine_;
    for (int r = 0; r < rank_.size(); ++r) {
      if (r == rank_.id()) continue;
      const bool near = policy_ == steal_policy::hierarchical && m.node_of(r) == m.node_of(rank_.id());
      (near ? near_ : far_).push_back(r);
    }
  }
  // Hierarchical: a round of the same node's ranks first, then anywhere.
  const std::uint32_t failures = failures_.load(std::memory_order_relaxed);
  const bool use_near = !near_.empty() && (far_.empty() || failures % (near_.size() + 1) != near_.size());
  const std::vector<int>& from = use_near ? near_ : (far_.empty() ? near_ : far_);
  return from[static_cast<std::size_t>(rng_() % from.size())];
}

void remote_steal::on_idle(worker& w) {
  // A channel is idle while the workers may be busy: only an idle worker asks for more work. One
  // whose fibers wait for room to send is not idle: work taken now would queue more sends behind
  // the same full queue.
  if (w.channel() || w.waiting_for_room()) return;
  if (!armed_.load(std::memory_order_relaxed) || asking_.load(std::memory_order_relaxed)) return;
  const std::uint64_t now = steady_now_ns();
  if (now < next_try_ns_.load(std::memory_order_relaxed)) return;
  bool expected = false;
  if (!asking_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return;
  const int victim = pick_victim();
  requests_sent_.fetch_add(1, std::memory_order_relaxed);
  control_send(
      rank_.msgr(), victim, [](int thief) { current_module<remote_steal>("steal request").on_request(thief); },
      rank_.id());
}

void remote_steal::on_request(int thief) {
  worker* here = current_worker();
  worker_pool& pool = rank_.pool();
  std::int64_t queued = 0;
  for (int i = 0; i < pool.size(); ++i) queued += pool.at(i).queued();
  // At most half of what is queued, from the oldest ends of the deques. Taking a record that may
  // not move (a local task) moves it to this worker's deque; a bounded number of them per request.
  const std::uint32_t want = static_cast<std::uint32_t>(std::min<std::int64_t>(batch_, (queued + 1) / 2));
  std::uint32_t given = 0;
  std::int64_t looked = 0;
  for (int i = 0; i < pool.size() && given < want && looked < 2 * static_cast<std::int64_t>(batch_); ++i) {
    worker& victim = pool.at((here->index() + 1 + i) % pool.size());
    while (given < want && looked < 2 * static_cast<std::int64_t>(batch_)) {
      task_record* t = victim.steal();
      if (!t) break;
      ++looked;
      if (t->invoke(t, thief)) {
        here->free_task(t);
        ++given;
      } else {
        here->push(t);
      }
    }
  }
  if (given == 0) announced_.store(false, std::memory_order_relaxed);
  tasks_given_.fetch_add(given, std::memory_order_relaxed);
  control_send(
      rank_.msgr(), thief,
      [](int victim, std::uint32_t n) { current_module<remote_steal>("steal reply").on_reply(victim, n); }, rank_.id(),
      given);
}

void remote_steal::on_reply(int victim, std::uint32_t given) {
  if (given == 0) {
    requests_empty_.fetch_add(1, std::memory_order_relaxed);
    // Every victim had a fair chance to say it has nothing: stop asking until an announcement.
    if (failures_.fetch_add(1, std::memory_order_relaxed) + 1 >= 4 + 2 * static_cast<std::uint32_t>(rank_.size()))
      armed_.store(false, std::memory_order_relaxed);
    next_try_ns_.store(steady_now_ns() + backoff_ns_, std::memory_order_relaxed);
    backoff_ns_ = std::min(2 * backoff_ns_, max_backoff_ns);
  } else {
    trace::instant<trace::kind::steal>(0, static_cast<std::uint64_t>(victim), given);
    tasks_stolen_.fetch_add(given, std::memory_order_relaxed);
    failures_.store(0, std::memory_order_relaxed);
    backoff_ns_ = first_backoff_ns;
  }
  asking_.store(false, std::memory_order_release);
}

rill::steal_counts remote_steal::counts() {
  rill::steal_counts c;
  c.requests_sent = requests_sent_.load(std::memory_order_relaxed);
  c.requests_empty = requests_empty_.load(std::memory_order_relaxed);
  c.tasks_stolen = tasks_stolen_.load(std::memory_order_relaxed);
  c.tasks_given = tasks_given_.load(std::memory_order_relaxed);
  return c;
}

void remote_steal::report_counters(counter_report& out) {
  const rill::steal_counts c = counts();
  out.add("requests_sent", c.requests_sent);
  out.add("requests_empty", c.requests_empty);
  out.add("tasks_stolen", c.tasks_stolen);
  out.add("tasks_given", c.tasks_given);
}

void stealable_queued() { current_module<remote_steal>("rill::async_any").queued(); }

}  // namespace rill::detail

rill::steal_counts rill::steal_stats() {
  return detail::current_module<detail::remote_steal>("rill::steal_stats").counts();
}
