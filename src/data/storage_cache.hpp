// The storage of system-memory instances, kept when they are destroyed for the next instance of
// about its size. Its pages stay resident: an instance made again does not fault in and zero fresh
// pages, which on a virtual machine costs a core about as much time as reading them from a disk
// (I1, docs/performance.md). Realm gets the same by carving instances out of memories allocated
// once; here the kept bytes are bounded (--rill:memory-keep) and given back under pressure.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace rill::detail {

class storage_cache {
 public:
  struct block {
    std::byte* at = nullptr;
    std::size_t bytes = 0;  // of the block, at least what was asked
  };

  explicit storage_cache(std::size_t keep) : keep_(keep) {}
  ~storage_cache();
  storage_cache(const storage_cache&) = delete;
  storage_cache& operator=(const storage_cache&) = delete;

  // Storage for `bytes`: a kept block of that many to an eighth more, else a new one ({} when the
  // system refuses), once no more than `room` bytes stay kept (the largest given back first). Its
  // contents are undefined.
  block take(std::size_t bytes, std::size_t room);
  // Keeps b while no more than `keep` bytes are kept (it was a block of take's), else frees it.
  void give(block b);
  // Frees kept blocks, the largest first, until at most `most` bytes are kept.
  void trim(std::size_t most);

  std::size_t kept() const;

 private:
  static void free_block(block b);
  // Takes the largest kept blocks out until at most `most` bytes are kept (under lock_).
  void take_out_beyond(std::size_t most, std::vector<block>& out);

  const std::size_t keep_;
  mutable std::mutex lock_;
  std::multimap<std::size_t, std::byte*> blocks_;  // by size; under lock_
  std::size_t kept_ = 0;                           // under lock_
};

}  // namespace rill::detail
