// The local transport: N ranks as threads of one process, buffers handed over by moving them.
//
// Chaos mode (--rill:chaos=SEED) holds each arriving buffer back for a random number of polls and
// releases held buffers in random order, a random number at a time: deliveries are delayed,
// reordered (across and within sender/receiver pairs) and batched, reproducibly per seed.
//
// Fault injection (--rill:faults, rill::fault_plan) goes further, for tests of what the runtime
// detects: it loses buffers (never one the runtime's own protocols need: `must_arrive`), cuts a
// rank off after a number of buffers (it neither receives nor sends from then on, like a stopped
// process), and delays every buffer to one rank by a fixed time.
#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "common/clock.hpp"
#include "transport/private_memory.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

namespace {

class local_endpoint;

struct held_buffer {
  incoming msg;
  int polls_left;
  std::uint64_t due_ns;  // not delivered before (a slow rank's buffers); 0: at once
};

class local_endpoint final : public endpoint {
 public:
  local_endpoint(int rank, int size, const rill::config& cfg, buffer_filter must_arrive,
                 std::vector<local_endpoint*>& peers)
      : rank_(rank),
        size_(size),
        queue_limit_(cfg.queue_buffers),
        chaos_(cfg.chaos != 0),
        drop_one_in_(cfg.faults.drop_one_in),
        stall_after_(cfg.faults.stall_rank == rank ? cfg.faults.stall_after : ~std::uint64_t{0}),
        delay_ns_(cfg.faults.slow_rank == rank ? cfg.faults.slow_ms * 1'000'000 : 0),
        must_arrive_(must_arrive),
        rng_(cfg.chaos * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(rank)),
        peers_(peers),
        in_flight_from_(static_cast<std::size_t>(size)) {
    if (stall_after_ == 0) stalled_.store(true);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  bool try_send(int dest, buffer& b) override {
    local_endpoint& to = *peers_[static_cast<std::size_t>(dest)];
    auto& counter = to.in_flight_from_[static_cast<std::size_t>(rank_)];
    if (counter.load(std::memory_order_acquire) >= queue_limit_) return false;
    counter.fetch_add(1, std::memory_order_acq_rel);
    // A stalled rank's sends go nowhere; they still fill its queue to `dest`, as a stopped
    // process's unsent buffers would.
    if (stalled_.load(std::memory_order_acquire)) {
      std::lock_guard g(lock_);
      frozen_.push_back(std::move(b));
    } else {
      to.deliver(incoming{rank_, std::move(b)});
    }
    b.clear();
    return true;
  }

  std::size_t poll(std::vector<incoming>& out, std::size_t max) override {
    if (!has_data_.load(std::memory_order_acquire)) return 0;
    std::vector<int> roomed;  // senders whose full queue here has room again
    std::size_t n = 0;
    {
      std::lock_guard g(lock_);
      const std::uint64_t now = delay_ns_ ? steady_now_ns() : 0;
      if (!chaos_) {
        while (n < max && !inbox_.empty() && inbox_.front().due_ns <= now &&
               !stalled_.load(std::memory_order_relaxed)) {
          release(out, std::move(inbox_.front().msg), roomed);
          inbox_.pop_front();
          ++n;
        }
      } else {
        for (auto& h : inbox_) h.polls_left = std::max(0, h.polls_left - 1);
        // Release a random batch of the buffers whose delay has run out, in random order.
        std::shuffle(inbox_.begin(), inbox_.end(), rng_);
        const std::size_t batch = std::uniform_int_distribution<std::size_t>(1, std::max<std::size_t>(1, max))(rng_);
        for (auto it = inbox_.begin(); it != inbox_.end() && n < batch && !stalled_.load(std::memory_order_relaxed);) {
          if (it->polls_left == 0 && it->due_ns <= now) {
            release(out, std::move(it->msg), roomed);
            it = inbox_.erase(it);
            ++n;
          } else {
            ++it;
          }
        }
      }
      has_data_.store(!inbox_.empty() && !stalled_.load(std::memory_order_relaxed), std::memory_order_release);
    }
    for (const int source : roomed) room_for(source);
    return n;
  }

  bool needs_polling() const override { return (chaos_ || delay_ns_) && has_data_.load(std::memory_order_acquire); }
  bool has_input() const override { return has_data_.load(std::memory_order_seq_cst); }

  void on_arrival(std::function<void()> wake) override { wake_ = std::move(wake); }
  const std::atomic<std::uint64_t>* room() const override { return &room_; }

 private:
  void deliver(incoming msg) {
    bool lost = false;
    {
      std::lock_guard g(lock_);
      if (drop_one_in_ != 0 && !must_arrive_(msg.bytes) && rng_() % drop_one_in_ == 0) {
        lost = true;
      } else {
        const int polls = chaos_ ? std::uniform_int_distribution<int>(0, 8)(rng_) : 0;
        inbox_.push_back({std::move(msg), polls, delay_ns_ ? steady_now_ns() + delay_ns_ : 0});
        if (stalled_.load(std::memory_order_relaxed)) return;  // held for good: nothing to wake for
        has_data_.store(true, std::memory_order_release);
      }
    }
    if (!lost) {
      if (wake_) wake_();
    } else if (taken_from(msg.source)) {
      room_for(msg.source);
    }
  }

  // A buffer from `source` left this rank's queue; true if that made room where there was none
  // (then the caller tells the sender, once it has let go of lock_: room_for).
  bool taken_from(int source) {
    return in_flight_from_[static_cast<std::size_t>(source)].fetch_sub(1, std::memory_order_acq_rel) == queue_limit_;
  }

  // Tells `source`, whose queue here was full, that it has room (endpoint::room): it may be asleep
  // waiting for it. Never under lock_: the wake may take the sender's sleep lock, and every
  // sender's deliver() here waits for lock_.
  void room_for(int source) {
    local_endpoint& from = *peers_[static_cast<std::size_t>(source)];
    from.room_.fetch_add(1, std::memory_order_seq_cst);
    if (from.wake_) from.wake_();
  }

  void release(std::vector<incoming>& out, incoming msg, std::vector<int>& roomed) {
    if (taken_from(msg.source)) roomed.push_back(msg.source);
    out.push_back(std::move(msg));
    if (++received_ == stall_after_) stalled_.store(true, std::memory_order_release);
  }

  const int rank_;
  const int size_;
  const int queue_limit_;
  const bool chaos_;
  const std::uint64_t drop_one_in_;
  const std::uint64_t stall_after_;  // buffers this rank receives before it stalls (~0: never)
  const std::uint64_t delay_ns_;     // every buffer to this rank arrives this late
  const buffer_filter must_arrive_;
  std::atomic<bool> stalled_{false};
  std::uint64_t received_ = 0;  // guarded by lock_
  std::deque<buffer> frozen_;   // what this rank sent after it stalled (guarded by lock_)
  std::mt19937_64 rng_;         // guarded by lock_
  std::vector<local_endpoint*>& peers_;
  std::vector<std::atomic<int>> in_flight_from_;  // buffers queued here, per sender
  std::mutex lock_;
  std::deque<held_buffer> inbox_;
  std::atomic<bool> has_data_{false};
  std::function<void()> wake_;
  std::atomic<std::uint64_t> room_{0};  // endpoint::room
};

class local_transport final : public transport {
 public:
  local_transport(const rill::config& cfg, buffer_filter must_arrive) {
    for (int r = 0; r < cfg.ranks; ++r) {
      owned_.push_back(std::make_unique<local_endpoint>(r, cfg.ranks, cfg, must_arrive, peers_));
      peers_.push_back(owned_.back().get());
    }
  }
  int size() const override { return static_cast<int>(owned_.size()); }
  std::vector<endpoint*> local_endpoints() override { return {peers_.begin(), peers_.end()}; }
  int cores_per_rank() const override {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return std::max(1, cores / size());
  }
  std::vector<std::string> gather_from_all_ranks(const std::string& mine) override {
    return std::vector<std::string>(owned_.size(), mine);  // every rank lives in this process
  }
  // One process: every segment is a load away. Without sharing each rank may address only its
  // own, which the rank core enforces, so the map here is always complete.
  segment_memory map_segments(std::size_t bytes, bool /*share*/) override {
    segment_memory m;
    for (std::size_t r = 0; r < owned_.size(); ++r) {
      memory_.push_back(std::make_unique<private_memory>(bytes));
      m.own.push_back(memory_.back()->data());
      m.owner_base.push_back(reinterpret_cast<std::uintptr_t>(m.own.back()));
      m.local_base.push_back(m.own.back());
    }
    return m;
  }
  void finish() override {}

 private:
  std::vector<std::unique_ptr<private_memory>> memory_;
  std::vector<local_endpoint*> peers_;
  std::vector<std::unique_ptr<local_endpoint>> owned_;
};

}  // namespace

std::unique_ptr<transport> make_local_transport(const rill::config& cfg, buffer_filter must_arrive) {
  return std::make_unique<local_transport>(cfg, must_arrive);
}

}  // namespace rill::detail
