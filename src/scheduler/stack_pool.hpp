// Fiber stacks: mmap'd, a guard page below each, reused through a per-worker free list.
//
// Linux limits a process to vm.max_map_count mappings and each guard page splits a mapping, so
// once guarded stacks would use a quarter of that limit, further stacks are allocated without a
// guard (reported once in the log). That keeps 10^5 simultaneously waiting fibers possible.
#pragma once

#include <boost/context/stack_context.hpp>

#include <cstddef>
#include <vector>

namespace rill::detail {

class stack_pool {
 public:
  explicit stack_pool(std::size_t stack_bytes);
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  // A stack of at least stack_bytes(), its top a different number of cache lines into a page from
  // the stacks made before it (see get()); the guard page lies right below it.
  boost::context::stack_context get();
  void put(boost::context::stack_context sc);
  std::size_t stack_bytes() const { return bytes_; }

 private:
  struct mapping {
    void* base;
    std::size_t length;
    bool guarded;
  };
  std::size_t bytes_;
  std::vector<boost::context::stack_context> free_;
  std::vector<mapping> all_;
};

}  // namespace rill::detail
