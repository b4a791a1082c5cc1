// Explicit caching (Grappa §2.3): a local copy of a range of global memory, fetched in one go and
// written back in one go.
//
//   rill::cache<double> row(grid, i * cols, cols, rill::cache_mode::read_write);  // elements of a global_array
//   row.acquire().wait();            // every piece fetched at once, the task yielding meanwhile
//   for (double& x : row) x *= 2;    // plain local memory
//   row.release().wait();            // every piece written back
//
// The range is `count` elements of a global_array from index `first` -- spread over as many
// ranks as the distribution puts them on -- or `count` elements from a global_ptr. acquire()
// starts a get for each contiguous piece (a block of the array on its home) and returns a future
// of them all; release() does the same with puts. Modes:
//   read_only   acquire fetches; release writes nothing
//   read_write  acquire fetches; release writes every element back
//   write_only  acquire fetches nothing (the copy starts as zero bytes); release writes everything
//
// Caches are not coherent: nothing tells a cache that the memory changed under it, and release
// overwrites the whole range, including elements the cache did not change. Keep writers of one
// range apart (a finish, a reservation, a phase) as with any shared memory without locks.
//
// A cache is acquired and released once each, in that order (else rill::misuse_error), and must
// outlive the operations in flight, so it can be neither copied nor moved. Destroying a writing
// cache that was acquired but not released writes it back first (waiting), so no update is lost
// silently. A piece that cannot be fetched or written (a range outside its owner's segment)
// poisons the future naming the cause.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/future.hpp"
#include "rill/global_array.hpp"
#include "rill/global_ptr.hpp"
#include "rill/rma.hpp"

namespace rill {

enum class cache_mode { read_only, read_write, write_only };

namespace detail {
// Reports, without throwing, a failed write-back from a cache's destructor.
void report_lost_write_back(const std::exception& e);
}  // namespace detail

template <class T>
class cache {
 public:
  // `count` elements of `a` from index `first`; rill::misuse_error when the range is not in `a`.
  cache(const global_array<T>& a, std::uint64_t first, std::uint64_t count, cache_mode mode)
      : mode_(mode), size_(count), copy_(std::make_unique<T[]>(count)) {
    if (first > a.size() || count > a.size() - first)
      throw misuse_error("rill::cache: elements [" + std::to_string(first) + ", " + std::to_string(first) + " + " +
                         std::to_string(count) + ") are not all in the array (size " + std::to_string(a.size()) + ")");
    const std::uint64_t block = a.block_elements(), end = first + count;
    for (std::uint64_t i = first; i < end;) {
      const std::uint64_t stop = std::min(end, (i / block + 1) * block);  // a block is contiguous at its home
      add_piece(a[i], i - first, stop - i);
      i = stop;
    }
  }
  // `count` elements from `p`; rill::misuse_error for a null pointer.
  cache(global_ptr<T> p, std::size_t count, cache_mode mode)
      : mode_(mode), size_(count), copy_(std::make_unique<T[]>(count)) {
    if (p.is_null() && count > 0) throw misuse_error("rill::cache: a null global pointer");
    if (count > 0) add_piece(p, 0, count);
  }
  cache(const cache&) = delete;
  cache& operator=(const cache&) = delete;
  ~cache() {
    if (state_ != state::acquired || mode_ == cache_mode::read_only) return;
    try {
      release().wait();
    } catch (const std::exception& e) {
      detail::report_lost_write_back(e);
    }
  }

  // Fetches the range (read_only, read_write) once `after` has triggered.
  future<void> acquire(event after = event::none()) {
    step(state::fresh, state::acquired, "acquire");
    if (mode_ == cache_mode::write_only) return future<void>::from_event(after);
    std::vector<event> done;
    for (const piece& p : pieces_) done.push_back(rget(p.where, copy_.get() + p.at, p.count, after));
    return future<void>::from_event(merge(done));
  }
  // Writes the range back (read_write, write_only) once `after` has triggered.
  future<void> release(event after = event::none()) {
    step(state::acquired, state::released, "release");
    if (mode_ == cache_mode::read_only) return future<void>::from_event(after);
    std::vector<event> done;
    for (const piece& p : pieces_) done.push_back(rput(copy_.get() + p.at, p.where, p.count, after));
    return future<void>::from_event(merge(done));
  }

  cache_mode mode() const { return mode_; }
  std::size_t size() const { return size_; }
  // How many contiguous pieces the range is made of (one get or put each).
  std::size_t pieces() const { return pieces_.size(); }
  T* data() { return copy_.get(); }
  const T* data() const { return copy_.get(); }
  T& operator[](std::size_t i) { return copy_[i]; }
  const T& operator[](std::size_t i) const { return copy_[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  enum class state { fresh, acquired, released };
  struct piece {
    global_ptr<T> where;
    std::size_t at;  // in the copy
    std::size_t count;
  };

  // Joins a piece to the previous one when it continues it at the same home.
  void add_piece(global_ptr<T> where, std::uint64_t at, std::uint64_t count) {
    if (!pieces_.empty()) {
      piece& last = pieces_.back();
      if (last.where.where() == where.where() && last.where + static_cast<std::ptrdiff_t>(last.count) == where) {
        last.count += count;
        return;
      }
    }
    pieces_.push_back({where, static_cast<std::size_t>(at), static_cast<std::size_t>(count)});
  }
  void step(state from, state to, const char* what) {
    if (state_ != from)
      throw misuse_error(std::string("rill::cache::") + what +
                         (state_ == state::fresh      ? ": the cache was not acquired"
                          : state_ == state::acquired ? ": the cache was acquired already"
                                                      : ": the cache was released already"));
    state_ = to;
  }

  cache_mode mode_;
  state state_ = state::fresh;
  std::size_t size_;
  std::unique_ptr<T[]> copy_;  // value-initialised: zero bytes
  std::vector<piece> pieces_;
};

}  // namespace rill
