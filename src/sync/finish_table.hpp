// One rank's part of distributed finish: a proxy per finish scope that has tasks on this rank.
//
// Termination of a finish that spans ranks is detected with Dijkstra and Scholten's diffusing-
// computation scheme, per scope. A proxy counts what keeps it busy: tasks of the scope running or
// queued here, and tasks it sent to other ranks that those ranks have not yet acknowledged. The
// first task that reaches an idle rank *engages* that rank's proxy, and its acknowledgement is held
// back until the proxy's count falls to zero; every other arriving task is acknowledged at once.
// So the engaged proxies form a tree rooted at the scope's home, each one holding its parent busy,
// and the home's count reaches zero only when no task of the scope runs, waits or travels anywhere,
// whatever the order in which messages arrive. See docs/finish.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <unordered_map>

#include "rill/finish.hpp"

namespace rill::detail {

struct finish_proxy;

// Names a finish scope on every rank: its home rank and the home proxy's address there, with the
// home's stamp in the top 16 bits (above any user-space address), so that the home can tell a
// task of its own scope from a late one of an ended scope whose proxy had the same address.
struct finish_key {
  int home = -1;
  std::uint64_t addr = 0;
  friend bool operator==(const finish_key&, const finish_key&) = default;

  static constexpr int stamp_shift = 48;
  finish_proxy* home_proxy() const {
    return reinterpret_cast<finish_proxy*>(addr & ((std::uint64_t{1} << stamp_shift) - 1));
  }
  std::uint64_t stamp() const { return addr >> stamp_shift; }
};

struct finish_proxy {
  std::atomic<std::int64_t> count{0};  // tasks here + unacknowledged tasks sent from here
  finish_key key;
  int parent = -1;               // who engaged this proxy (-1 at home)
  std::uint64_t parent_ptr = 0;  // the parent's proxy, to acknowledge on disengaging
  // Home only: wakes finish() when the count reaches zero, and the scope's first error.
  latch* done = nullptr;
  // Home only: key.stamp() while the scope is open, 0 once finish() returns (an atomic, so that the
  // store into a proxy about to go out of scope is not optimised away).
  std::atomic<std::uint64_t> open_stamp{0};
  std::mutex error_lock;
  std::exception_ptr first_error;
};

class finish_table {
 public:
  explicit finish_table(int me) : me_(me) {}
  ~finish_table();
  finish_table(const finish_table&) = delete;
  finish_table& operator=(const finish_table&) = delete;

  // A task of scope `key` arrives from `from`, whose proxy is `from_proxy`. Returns this rank's
  // proxy, its count already raised for the task; sets `ack_now` unless the task engaged it.
  finish_proxy* arrive(finish_key key, int from, std::uint64_t from_proxy, bool& ack_now);
  // The home proxy of a new scope (count 1: the scope's body). Homes are not in the table: a task
  // arriving home finds its proxy at the address in its key (the count cannot reach zero while a
  // task of the scope travels, so the home is alive), and a finish() per task costs no lock.
  void open_home(finish_proxy& home);
  // The home's scope ended: a task that still arrives for it is a fatal error naming it.
  static void close_home(finish_proxy& home) { home.open_stamp.store(0, std::memory_order_release); }
  // The home proxy a message for scope `key` names; fatal (naming `from` and `what`) when that
  // scope has ended.
  finish_proxy* open_home_of(finish_key key, int from, const char* what) const;
  // Returns `units` of a non-home proxy's count under the table's lock, where arrivals raise it:
  // if that brings it to zero the proxy leaves the table, and the caller (the only one) must
  // acknowledge its parent and delete it; returns whether it did.
  bool release_last(finish_proxy* p, std::int64_t units);

 private:
  struct key_hash {
    std::size_t operator()(const finish_key& k) const noexcept {
      return std::hash<std::uint64_t>()(k.addr ^ (static_cast<std::uint64_t>(k.home) << 48));
    }
  };
  const int me_;
  std::mutex lock_;
  std::unordered_map<finish_key, finish_proxy*, key_hash> proxies_;
};

}  // namespace rill::detail
