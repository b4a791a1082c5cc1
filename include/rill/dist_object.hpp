// Distributed objects: one T on every rank, found by the same name on each (UPC++'s dist_object).
//
//   rill::dist_object<std::vector<long>> counts(std::vector<long>(8));   // every rank, same order
//   rill::async_at(1, [](rill::dist_id<std::vector<long>> c) { c->at(0) += 1; }, counts.id());
//   std::vector<long> theirs = counts.fetch(1).get();                   // a copy of rank 1's
//
// Every rank constructs its dist_objects in the same order (as UPC++ asks): the n-th dist_object a
// rank constructs gets the number n, and its id() names "the n-th dist_object" on every rank. An
// id is trivially copyable, so handlers and remote tasks take it as an argument and reach the
// local instance with *id, id-> or id.here(): no all-gathered raw pointers, no process globals
// indexed by rank_me() (under the local transport every rank shares one process).
//
// A task that reaches an id its rank has not constructed yet waits (its fiber suspends) until the
// rank does, so one rank may send to another's object before that rank got there. Reaching an id
// whose object this rank has destroyed, or with the wrong T, throws rill::misuse_error. A plain
// active-message handler or an inline one must not wait (docs/active-messages.md): use async_at or
// rpc to reach an object that may not exist yet.
//
// A dist_object is neither copied nor moved (its address is what its id finds); destroy it only
// when no rank will reach it any more, as with UPC++ (a barrier or a finish scope before).
// Construct, destroy and reach dist_objects from Rill tasks.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "rill/future.hpp"

namespace rill {

template <class T>
class dist_object;

namespace detail {
// The calling rank's dist_object table (src/sync/dist_object_table.*).
std::uint64_t dist_object_add(void* object, const std::type_info& type);
void dist_object_remove(std::uint64_t number);
// The object numbered `number` on the calling rank, waiting until the rank has constructed it.
void* dist_object_find(std::uint64_t number, const std::type_info& type);
}  // namespace detail

// The name of a dist_object, the same on every rank.
template <class T>
class dist_id {
 public:
  // An id of no object: here() throws rill::misuse_error.
  constexpr dist_id() = default;

  // This rank's instance (waits until this rank has constructed it).
  T& here() const { return *static_cast<T*>(detail::dist_object_find(number_, typeid(T))); }
  T& operator*() const { return here(); }
  T* operator->() const { return &here(); }

  // A copy of rank `rank`'s instance (T must be copyable, and serializable to reach another rank).
  future<T> fetch(int rank) const {
    return rpc(
        rank, [](dist_id<T> id) { return T(id.here()); }, *this);
  }

  // Which dist_object of every rank this is: the n-th constructed, from 0.
  std::uint64_t number() const { return number_; }
  friend bool operator==(const dist_id&, const dist_id&) = default;

 private:
  friend class dist_object<T>;
  explicit constexpr dist_id(std::uint64_t n) : number_(n) {}
  std::uint64_t number_ = std::numeric_limits<std::uint64_t>::max();
};

template <class T>
class dist_object {
 public:
  static_assert(std::is_object_v<T> && !std::is_const_v<T>, "rill::dist_object holds a non-const object type");

  explicit dist_object(T value) : value_(std::move(value)), id_(detail::dist_object_add(&value_, typeid(T))) {}
  template <class... Args>
  explicit dist_object(std::in_place_t, Args&&... args)
      : value_(std::forward<Args>(args)...), id_(detail::dist_object_add(&value_, typeid(T))) {}
  dist_object(const dist_object&) = delete;
  dist_object& operator=(const dist_object&) = delete;
  ~dist_object() { detail::dist_object_remove(id_.number()); }

  T& operator*() { return value_; }
  const T& operator*() const { return value_; }
  T* operator->() { return &value_; }
  const T* operator->() const { return &value_; }

  dist_id<T> id() const { return id_; }
  future<T> fetch(int rank) const { return id_.fetch(rank); }

 private:
  T value_;
  dist_id<T> id_;
};

}  // namespace rill
