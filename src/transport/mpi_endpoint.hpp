// The endpoint of the MPI transport (mpi_transport.cpp sets MPI up and makes one per process).
//
// Every MPI call is made under one mutex, so no two threads ever call MPI at once. Receives are
// pre-posted for buffers up to the eager size; larger buffers are received with a matched probe.
// Sends are non-blocking; their buffers live until complete.
//
// Zero-copy sends leave from the sender's memory: a short head and one lent piece as two
// contiguous messages (try_send_split), any other shape as one MPI datatype. While datatype sends
// are in flight, every MPI call runs through the deep_call the endpoint was given: MPI may pack
// them inside any call, on a stack deeper than a fiber's.
//
// Ranks on one node pass eager-sized buffers through shared-memory rings instead (node_rings.hpp,
// --rill:node-ring): no MPI call on either side. MPI still carries larger buffers, and any buffer
// whose ring is full. Only mpi_transport.cpp includes this header.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

#include "common/log.hpp"
#include "rill/error.hpp"
#include "transport/clear_pages.hpp"
#include "transport/node_rings.hpp"
#include "transport/private_memory.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

inline constexpr int tag_eager = 7301;
inline constexpr int tag_large = 7302;
inline constexpr int tag_split = 7303;  // a zero-copy message as two messages: its head, then its payload
// Receives kept posted for eager-sized buffers: enough for a burst from every peer of a small
// job to land without waiting for a repost; a larger burst waits in MPI's unexpected queue.
inline constexpr int preposted = 16;

inline void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fatal("MPI call {} failed: {}", what, std::string(text, static_cast<std::size_t>(len)));
  }
}

class mpi_endpoint final : public endpoint {
 public:
  mpi_endpoint(MPI_Comm comm, const rill::config& cfg, deep_call_fn deep)
      : comm_(comm),
        deep_(deep),
        queue_limit_(static_cast<std::size_t>(cfg.queue_buffers)),
        eager_bytes_(cfg.agg_bytes + cfg.large_bytes + 64),
        spare_min_bytes_(cfg.large_bytes) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    in_flight_to_.assign(static_cast<std::size_t>(size_), 0);
    split_heads_.resize(static_cast<std::size_t>(size_));
    recv_bufs_.resize(preposted);
    recv_reqs_.assign(preposted, MPI_REQUEST_NULL);
    for (int i = 0; i < preposted; ++i) order_[i] = i;
    for (int i = 0; i < preposted; ++i) post(i);
  }

  ~mpi_endpoint() override = default;

  // A shared-memory ring to `peer` (another rank of this node) at `to`, and one from it at `from`,
  // each of byte_ring::bytes_for(capacity) bytes; `peer` sleeps on `peer_wakes`, in the node's
  // shared memory. Called before any send or poll.
  void add_node_rings(int peer, std::byte* to, std::byte* from, std::size_t capacity, wake_word& peer_wakes) {
    rings_.add(peer, size_, to, from, capacity, eager_bytes_, peer_wakes);
    all_on_node_ = rings_.reach_all(size_);
  }
  // With node rings, before the rank starts: the word in the node's shared memory that this rank's
  // workers sleep on, which its neighbours' ring writes wake.
  void sleep_on(wake_word& mine) { sleep_word_ = &mine; }
  wake_word* sleep_word() override { return sleep_word_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // MPI counts bytes in an int.
  std::size_t max_buffer_bytes() const override { return static_cast<std::size_t>(INT_MAX); }

  bool try_send(int dest, buffer& b) override {
    if (dest == rank_) {  // loop back without MPI
      std::lock_guard g(self_lock_);
      self_.push_back(incoming{rank_, std::move(b)});
      has_self_.store(true, std::memory_order_release);
      b.clear();
      return true;
    }
    if (try_send_copy(dest, b)) {
      b.clear();
      return true;
    }
    check_fits(b.size(), dest);
    return send_when_room(dest, false, [&] {
      const int tag = tag_for(b.size());
      start_send(pending_send{std::move(b), dest, MPI_DATATYPE_NULL, {}, {}}, tag);
      b.clear();
    });
  }

  // Large lent buffers leave from where their parts are: one MPI datatype lists the parts' addresses
  // and MPI reads them in place; the done callback runs once the send has completed. (Through the
  // loop-back or a ring the parts are copied anyway: the default path.)
  bool try_send_lent(int dest, lent_buffer& b) override {
    const std::size_t bytes = b.size();
    if (dest == rank_ || bytes <= rings_.limit(dest)) return endpoint::try_send_lent(dest, b);
    check_fits(bytes, dest);
    if (bytes > eager_bytes_ && b.parts.size() == 3 && b.parts[2].empty() && b.parts[0].size() == b.owned.size() &&
        b.owned.size() <= split_head_max)
      return try_send_split(dest, b);
    // The datatype send itself on the deep stack too: MPI may pack it at once.
    return send_when_room(dest, true, [&] {
      std::vector<int> lengths;
      std::vector<MPI_Aint> addresses;
      for (const auto& part : b.parts) {
        if (part.empty()) continue;
        MPI_Aint at = 0;
        check_mpi(MPI_Get_address(part.data(), &at), "MPI_Get_address");
        lengths.push_back(static_cast<int>(part.size()));
        addresses.push_back(at);
      }
      MPI_Datatype type = MPI_DATATYPE_NULL;
      check_mpi(
          MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(), addresses.data(), MPI_BYTE, &type),
          "MPI_Type_create_hindexed");
      check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
      // The parts that are pieces of `owned` stay where they are: moving a vector keeps its storage.
      start_send(pending_send{std::move(b.owned), dest, type, std::move(b.done), {}}, tag_for(bytes));
      b = {};
    });
  }

  // A lent buffer that is a short owned head and then one lent piece (am::send_zero_copy with one
  // view as its last argument) leaves as two contiguous messages of tag_split, the head and then
  // the piece, which the receiver matches by source into one buffer (on_split_part). A datatype
  // built, committed and freed per message costs a tenth of MPI's 64 KiB bandwidth in its fast
  // mode (docs/performance.md, M4); MPI keeps the two messages' order within the tag.
  bool try_send_split(int dest, lent_buffer& b) {
    const std::span<const std::byte> piece = b.parts[1];
    return send_when_room(dest, false, [&] {
      start_send(pending_send{std::move(b.owned), dest, MPI_DATATYPE_NULL, {}, {}}, tag_split);
      start_send(pending_send{{}, dest, MPI_DATATYPE_NULL, std::move(b.done), piece}, tag_split);
      b = {};
    });
  }

  bool try_send_copy(int dest, std::span<const std::byte> bytes) override { return rings_.try_write(dest, bytes); }

  std::size_t poll(std::vector<incoming>& out, std::size_t max) override {
    const std::size_t n = poll_network(out, max);
    run_lent_done();
    return n;
  }

  std::size_t poll_network(std::vector<incoming>& out, std::size_t max) {
    std::size_t n = 0;
    if (has_self_.load(std::memory_order_acquire)) {
      std::lock_guard g(self_lock_);
      while (n < max && !self_.empty()) {
        out.push_back(std::move(self_.front()));
        self_.pop_front();
        ++n;
      }
      has_self_.store(!self_.empty(), std::memory_order_release);
    }
    if (n < max)
      n += rings_.read(max - n, [&](int source, std::span<const std::byte> p) {
        if (p.empty())
          mpi_hint_.store(true, std::memory_order_relaxed);  // a doorbell (start_send rang it)
        else
          out.push_back(incoming{source, small_copy(p)});
      });
    // Every MPI call costs a run of its progress engine, and an arrival on a ring that comes while
    // a poll is inside MPI waits for it. When the rings reach every rank, MPI (large buffers,
    // overflow) is polled when a ring's doorbell says it carries something, while transfers are
    // under way, and otherwise on every idle_mpi_poll_every-th poll only.
    const bool hinted =
        mpi_hint_.load(std::memory_order_relaxed) && mpi_hint_.exchange(false, std::memory_order_relaxed);
    thread_local unsigned mpi_turn = 0;  // per thread: a shared counter would be a shared line
    if (all_on_node_ && !hinted && !mpi_busy_.load(std::memory_order_relaxed) && ++mpi_turn % idle_mpi_poll_every != 0)
      return n;
    std::unique_lock g(lock_, std::try_to_lock);
    if (!g.owns_lock()) {  // another worker is polling
      if (hinted) mpi_hint_.store(true, std::memory_order_relaxed);
      return n;
    }
    mpi_section([&] { n = poll_mpi(out, max, n, hinted); });
    return n;
  }

  // The MPI half of poll_network, with lock_ held: `n` buffers are already in `out`; returns the
  // new count.
  std::size_t poll_mpi(std::vector<incoming>& out, std::size_t max, std::size_t n, bool hinted) {
    // Whatever this poll finds, MPI stays busy while receives or sends are under way.
    struct busy_update {
      mpi_endpoint& ep;
      ~busy_update() {
        ep.mpi_busy_.store(ep.burst_ || ep.found_large_ || !ep.large_reqs_.empty() || !ep.send_reqs_.empty() ||
                               ep.split_heads_waiting_ > 0,
                           std::memory_order_relaxed);
      }
    } busy{*this};
    ++polls_;
    // Every MPI call that finds nothing runs MPI's progress engine once, and an idle poll is latency
    // added to the next arrival: finished sends are collected on every eighth poll only (try_send
    // collects them at once when a destination's queue is full).
    if (polls_ % 8 == 0) complete_sends();
    int done = 0;
    if (burst_ || polls_ % 4 == 0) {
      // Just after an arrival (more may have come with it), and now and then in any case:
      // collect every finished receive. MPI_Testsome runs the progress engine only when none has
      // finished, and then does not look again.
      check_mpi(MPI_Testsome(preposted, recv_reqs_.data(), &done, indices_, statuses_), "MPI_Testsome");
      if (done == MPI_UNDEFINED) done = 0;
    } else {
      // Idle: wait on the receive posted first, which every message fills first (all eager
      // receives match the same messages, and MPI matches them in the order they were posted).
      // MPI_Test runs the progress engine and looks again when that did something, so an arrival
      // is seen by the poll that brought it in, not one idle round later.
      int flag = 0;
      indices_[0] = order_[0];
      check_mpi(MPI_Test(&recv_reqs_[static_cast<std::size_t>(order_[0])], &flag, &statuses_[0]), "MPI_Test");
      done = flag ? 1 : 0;
    }
    burst_ = done > 0;
    for (int k = 0; k < done; ++k) {
      const int i = indices_[k];
      int count = 0;
      MPI_Get_count(&statuses_[k], MPI_BYTE, &count);
      // Copy out just the bytes that arrived and re-post the same buffer: cheaper than handing
      // the buffer up and allocating (and zero-filling) a new eager-sized one for every message.
      const auto* first = recv_bufs_[static_cast<std::size_t>(i)].data();
      out.push_back(incoming{statuses_[k].MPI_SOURCE, small_copy({first, static_cast<std::size_t>(count)})});
      ++n;
      post(i);
    }
    n += complete_large(out);
    // A matched probe costs as much as the whole poll; large buffers are rarer, so look for them
    // on every eighth poll only (and on every poll while large buffers are arriving).
    if (!hinted && polls_ % 8 != 4 && !found_large_ && large_reqs_.empty()) return n;
    found_large_ = false;
    // Start receiving every announced large buffer at once (MPI_Imrecv), so that their rendezvous
    // transfers overlap instead of running one at a time. Any tag: this communicator carries only
    // Rill's messages, and an eager one that found no pre-posted receive is received here too.
    for (;;) {
      int flag = 0;
      MPI_Message msg;
      MPI_Status st;
      check_mpi(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &msg, &st), "MPI_Improbe");
      if (!flag) break;
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      if (st.MPI_TAG == tag_split)
        on_split_part(st.MPI_SOURCE, msg, count);
      else
        receive_large(st.MPI_SOURCE, msg, count, static_cast<std::size_t>(count), 0);
    }
    if (n < max) n += complete_large(out);
    return n;
  }

  // A message of tag_split from `source` (see try_send_split): a head, or the payload of the head
  // that came before it from there. Called with lock_ held.
  void on_split_part(int source, MPI_Message msg, int count) {
    split_head& head = split_heads_[static_cast<std::size_t>(source)];
    if (!head.waiting) {
      head = {true, msg, count};
      ++split_heads_waiting_;
      // The payload left right after its head: usually it has been announced already.
      int flag = 0;
      MPI_Status st;
      check_mpi(MPI_Improbe(source, tag_split, comm_, &flag, &msg, &st), "MPI_Improbe");
      if (!flag) return;
      MPI_Get_count(&st, MPI_BYTE, &count);
    }
    // Head and payload into one buffer. The head is short (split_head_max) and sent before the
    // payload, so it has arrived whole.
    const auto head_bytes = static_cast<std::size_t>(head.count);
    std::byte* bytes = receive_large(source, msg, count, head_bytes + static_cast<std::size_t>(count), head_bytes);
    check_mpi(MPI_Mrecv(bytes, head.count, MPI_BYTE, &head.msg, MPI_STATUS_IGNORE), "MPI_Mrecv");
    head.waiting = false;
    --split_heads_waiting_;
  }

  void recycle(buffer&& b) override {
    if (b.capacity() < spare_min_bytes_) {
      keep_small(std::move(b));
      return;
    }
    if (b.capacity() > spare_max_bytes) return;
    std::lock_guard g(spare_lock_);
    if (spare_bytes_ + b.capacity() > max_spare_bytes) return;
    spare_bytes_ += b.capacity();
    spares_.push_back(std::move(b));
  }

  buffer spare(std::size_t bytes) override {
    std::lock_guard g(spare_lock_);
    for (std::size_t i = spares_.size(); i-- > 0;) {
      if (spares_[i].capacity() < bytes) continue;
      buffer b = std::move(spares_[i]);
      spare_bytes_ -= b.capacity();
      spares_[i] = std::move(spares_.back());
      spares_.pop_back();
      return b;
    }
    return {};
  }

  // A copy of a received buffer below the large size, in a buffer the handlers of an earlier one
  // gave back on this thread when there is one: a lone message would otherwise cost a malloc and
  // a free around its handler. (The worker that reads the rings runs what it read, so the buffers
  // come back to the thread that takes them.)
  static buffer small_copy(std::span<const std::byte> bytes) {
    auto& kept = small_spares();
    buffer b;
    if (!kept.empty()) {
      b = std::move(kept.back());
      kept.pop_back();
    }
    b.assign(bytes.begin(), bytes.end());
    return b;
  }
  static void keep_small(buffer&& b) {
    auto& kept = small_spares();
    if (kept.size() < small_spares_per_thread) kept.push_back(std::move(b));
  }
  static std::vector<buffer>& small_spares() {
    thread_local std::vector<buffer> kept;
    return kept;
  }

  bool needs_polling() const override { return true; }
  bool has_input() const override { return has_self_.load(std::memory_order_seq_cst) || rings_.have_data(); }
  void on_arrival(std::function<void()>) override {}

  // Completes all sends, waits for every rank, and cancels the pre-posted receives.
  void finish() {
    std::lock_guard g(lock_);
    check_mpi(MPI_Waitall(static_cast<int>(send_reqs_.size()), send_reqs_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    send_reqs_.clear();
    // The rank has stopped: nobody waits for the lent sends' callbacks any more.
    for (auto& s : sends_)
      if (s.type != MPI_DATATYPE_NULL) MPI_Type_free(&s.type);
    sends_.clear();
    typed_sends_ = 0;
    lent_done_.clear();
    check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
    for (auto& r : recv_reqs_) {
      if (r == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }

 private:
  // A send in flight: the bytes Rill owns of it and its destination; for a lent buffer
  // (try_send_lent) also the datatype that lists its parts and the callback for when they may be
  // reused.
  struct pending_send {
    buffer bytes;
    int dest = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;  // null: the message is `bytes`, or `lent`
    std::function<void()> done;
    std::span<const std::byte> lent;  // non-empty: the message is these bytes of the sender's
  };

  // The head of a split message (try_send_split) matched from one source, waiting for its payload.
  struct split_head {
    bool waiting = false;
    MPI_Message msg = MPI_MESSAGE_NULL;
    int count = 0;
  };
  // The longest head a message may have to be split (a header, a callable and a few arguments):
  // the receiver takes it with a blocking MPI_Mrecv, which must find it arrived whole.
  static constexpr std::size_t split_head_max = 1024;

  // Runs f() through deep_, on a stack deep enough for the MPI library (f must not wait or yield).
  template <class F>
  void on_deep_stack(F&& f) {
    deep_([](void* p) { (*static_cast<std::remove_reference_t<F>*>(p))(); }, &f);
  }

  // Runs f(), whose MPI calls may move sends along, with lock_ held: on a deep stack while sends
  // of MPI datatypes are in flight, since MPI may pack those inside any call (MPICH 4.0's UCX
  // path does, with a 128 KiB buffer on the stack); otherwise where it is called. (Every poll
  // on the deep stack made M5's round trip without node rings 1.35 instead of 1.05 us.)
  template <class F>
  void mpi_section(F&& f) {
    if (typed_sends_ > 0)
      on_deep_stack(f);
    else
      f();
  }

  // The send paths' common frame: under lock_ (in an mpi_section, or on the deep stack when
  // `deep`), start() starts the sends if `dest` has room; then the callbacks of lent sends that
  // completed meanwhile run, outside the lock. Returns whether start() ran.
  template <class Start>
  bool send_when_room(int dest, bool deep, Start&& start) {
    bool sent = false;
    {
      std::lock_guard g(lock_);
      auto section = [&] {
        if (!room_for_send(dest)) return;
        start();
        sent = true;
      };
      if (deep)
        on_deep_stack(section);
      else
        mpi_section(section);
    }
    if (sent) run_lent_done();
    return sent;
  }

  int tag_for(std::size_t bytes) const { return bytes <= eager_bytes_ ? tag_eager : tag_large; }

  // Starts receiving `msg` (`count` bytes) at offset `at` of a buffer of `total` bytes from
  // `source`, among the large receives (complete_large hands it up). Returns the buffer's bytes.
  // Called with lock_ held.
  std::byte* receive_large(int source, MPI_Message& msg, int count, std::size_t total, std::size_t at) {
    // Into a recycled buffer when there is one: shrinking it costs nothing, growing it
    // zero-fills only the difference (a new one would be zero-filled whole).
    buffer b = spare(total);
    b.resize(total);
    large_bufs_.push_back(incoming{source, std::move(b)});
    large_reqs_.push_back(MPI_REQUEST_NULL);
    std::byte* bytes = large_bufs_.back().bytes.data();
    check_mpi(MPI_Imrecv(bytes + at, count, MPI_BYTE, &msg, &large_reqs_.back()), "MPI_Imrecv");
    found_large_ = true;
    return bytes;
  }

  // Whether `dest` may have one more send in flight. Called with lock_ held.
  bool room_for_send(int dest) {
    if (in_flight_to_[static_cast<std::size_t>(dest)] < queue_limit_) return true;
    complete_sends();
    return in_flight_to_[static_cast<std::size_t>(dest)] < queue_limit_;
  }

  // MPI counts an int of bytes. (The runtime refuses larger messages before it counts them, see
  // max_buffer_bytes: this is the last line, never a silent truncation.)
  void check_fits(std::size_t bytes, int dest) const {
    if (bytes > max_buffer_bytes())
      throw std::length_error(fmt::format("mpi transport: a buffer of {} bytes to rank {} exceeds {} bytes", bytes,
                                          dest, max_buffer_bytes()));
  }

  // Queues and starts a send. Called with lock_ held.
  void start_send(pending_send s, int tag) {
    const int dest = s.dest;
    const pending_send& p = sends_.emplace_back(std::move(s));
    send_reqs_.push_back(MPI_REQUEST_NULL);
    if (!p.lent.empty())
      check_mpi(
          MPI_Isend(p.lent.data(), static_cast<int>(p.lent.size()), MPI_BYTE, dest, tag, comm_, &send_reqs_.back()),
          "MPI_Isend");
    else if (p.type == MPI_DATATYPE_NULL)
      check_mpi(
          MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, dest, tag, comm_, &send_reqs_.back()),
          "MPI_Isend");
    else
      check_mpi(MPI_Isend(MPI_BOTTOM, 1, p.type, dest, tag, comm_, &send_reqs_.back()), "MPI_Isend");
    ++in_flight_to_[static_cast<std::size_t>(dest)];
    if (p.type != MPI_DATATYPE_NULL) ++typed_sends_;
    mpi_busy_.store(true, std::memory_order_relaxed);
    rings_.ring_doorbell(dest);  // dest may poll MPI seldom (poll_network)
  }

  // Runs the callbacks of completed lent sends, outside lock_: a callback may send.
  void run_lent_done() {
    if (!has_lent_done_.load(std::memory_order_acquire)) return;
    std::vector<std::function<void()>> ready;
    {
      std::lock_guard g(lock_);
      ready.swap(lent_done_);
      has_lent_done_.store(false, std::memory_order_relaxed);
    }
    for (auto& done : ready) done();
  }

  void post(int i) {
    // order_ lists the pending receives oldest first: i moves to the end.
    int* at = std::find(order_, order_ + preposted, i);
    std::copy(at + 1, order_ + preposted, at);
    order_[preposted - 1] = i;
    auto& b = recv_bufs_[static_cast<std::size_t>(i)];
    if (b.size() != eager_bytes_) b.resize(eager_bytes_);
    check_mpi(MPI_Irecv(b.data(), static_cast<int>(b.size()), MPI_BYTE, MPI_ANY_SOURCE, tag_eager, comm_,
                        &recv_reqs_[static_cast<std::size_t>(i)]),
              "MPI_Irecv");
  }

  // Moves the large buffers whose receives finished to `out`. Called with lock_ held.
  std::size_t complete_large(std::vector<incoming>& out) {
    if (large_reqs_.empty()) return 0;
    int done = 0;
    completed_.resize(large_reqs_.size());
    check_mpi(MPI_Testsome(static_cast<int>(large_reqs_.size()), large_reqs_.data(), &done, completed_.data(),
                           MPI_STATUSES_IGNORE),
              "MPI_Testsome");
    if (done == 0 || done == MPI_UNDEFINED) return 0;
    for (int k = 0; k < done; ++k)
      out.push_back(std::move(large_bufs_[static_cast<std::size_t>(completed_[static_cast<std::size_t>(k)])]));
    std::size_t w = 0;
    for (std::size_t r = 0; r < large_reqs_.size(); ++r) {
      if (large_reqs_[r] == MPI_REQUEST_NULL) continue;
      if (w != r) {
        large_reqs_[w] = large_reqs_[r];
        large_bufs_[w] = std::move(large_bufs_[r]);
      }
      ++w;
    }
    large_reqs_.resize(w);
    large_bufs_.resize(w);
    return static_cast<std::size_t>(done);
  }

  // Called with lock_ held.
  void complete_sends() {
    if (send_reqs_.empty()) return;
    int done = 0;
    completed_.resize(send_reqs_.size());
    check_mpi(MPI_Testsome(static_cast<int>(send_reqs_.size()), send_reqs_.data(), &done, completed_.data(),
                           MPI_STATUSES_IGNORE),
              "MPI_Testsome");
    if (done == 0 || done == MPI_UNDEFINED) return;
    for (int k = 0; k < done; ++k) {
      const auto i = static_cast<std::size_t>(completed_[static_cast<std::size_t>(k)]);
      pending_send& s = sends_[i];
      --in_flight_to_[static_cast<std::size_t>(s.dest)];
      if (s.bytes.capacity() != 0) recycle(std::move(s.bytes));
      if (s.type != MPI_DATATYPE_NULL) {
        check_mpi(MPI_Type_free(&s.type), "MPI_Type_free");
        --typed_sends_;
      }
      if (s.done) {
        lent_done_.push_back(std::move(s.done));
        has_lent_done_.store(true, std::memory_order_release);
      }
    }
    // Compact: keep the requests still pending (Testsome set completed ones to MPI_REQUEST_NULL).
    std::size_t w = 0;
    for (std::size_t r = 0; r < send_reqs_.size(); ++r) {
      if (send_reqs_[r] == MPI_REQUEST_NULL) continue;
      if (w != r) {
        send_reqs_[w] = send_reqs_[r];
        sends_[w] = std::move(sends_[r]);
      }
      ++w;
    }
    send_reqs_.resize(w);
    sends_.resize(w);
  }

  MPI_Comm comm_;
  const deep_call_fn deep_;
  int rank_ = 0;
  int size_ = 0;
  const std::size_t queue_limit_;
  const std::size_t eager_bytes_;
  const std::size_t spare_min_bytes_;  // smaller buffers are not kept for reuse
  std::mutex lock_;                    // every MPI call below is made holding it
  std::vector<buffer> recv_bufs_;
  std::vector<MPI_Request> recv_reqs_;
  int indices_[preposted];
  int order_[preposted];  // indices of recv_reqs_ in the order they were posted (under lock_)
  bool burst_ = false;    // the last poll received something (under lock_)
  MPI_Status statuses_[preposted];
  std::vector<pending_send> sends_;
  std::size_t typed_sends_ = 0;                   // sends_ with an MPI datatype (under lock_)
  std::vector<MPI_Request> send_reqs_;            // sends_' requests, side by side as MPI_Testsome takes them
  std::vector<std::function<void()>> lent_done_;  // callbacks of completed lent sends (under lock_)
  std::atomic<bool> has_lent_done_{false};
  std::vector<int> completed_;
  std::vector<std::size_t> in_flight_to_;
  std::vector<incoming> large_bufs_;     // large buffers being received (under lock_)
  std::vector<split_head> split_heads_;  // by source rank (under lock_)
  std::size_t split_heads_waiting_ = 0;
  std::vector<MPI_Request> large_reqs_;
  unsigned polls_ = 0;        // under lock_
  bool found_large_ = false;  // under lock_
  // Buffers kept for reuse (recycle/spare), each of at most spare_max_bytes, at most
  // max_spare_bytes in all: enough for a full queue of 64 KiB payloads (each large receive that
  // finds no spare allocates and zero-fills its buffer).
  static constexpr std::size_t max_spare_bytes = std::size_t{8} << 20;
  static constexpr std::size_t small_spares_per_thread = 16;
  static constexpr std::size_t spare_max_bytes = std::size_t{1} << 20;
  std::mutex spare_lock_;
  std::vector<buffer> spares_;
  std::size_t spare_bytes_ = 0;  // capacity of spares_ (under spare_lock_)
  node_rings rings_;
  wake_word* sleep_word_ = nullptr;  // with node rings: this rank's word in the node's shared memory
  bool all_on_node_ = false;
  // With all_on_node_: MPI is polled on every poll while mpi_busy_ (transfers under way, or the
  // last poll found something) or mpi_hint_ (a ring's doorbell rang), else on every
  // idle_mpi_poll_every-th poll.
  static constexpr unsigned idle_mpi_poll_every = 32;
  std::atomic<bool> mpi_busy_{false};
  std::atomic<bool> mpi_hint_{false};
  std::mutex self_lock_;
  std::deque<incoming> self_;
  std::atomic<bool> has_self_{false};  // self_ may be non-empty (saves the lock on every poll)
};

}  // namespace rill::detail
