#include "scheduler/stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>

#include "common/log.hpp"
#include "scheduler/fiber.hpp"  // RILL_ASAN

#if defined(RILL_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace rill::detail {

namespace {

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

// Guarded stacks allowed in this process (all ranks and workers share the kernel's map limit).
std::atomic<long> guarded_budget = [] {
  long limit = 65530;
  std::ifstream f("/proc/sys/vm/max_map_count");
  f >> limit;
  return std::max(1024L, limit / 4);
}();
std::atomic<bool> warned{false};

constexpr std::size_t cache_line = 64;
constexpr std::size_t stack_colours = 64;  // a 4 KiB page of lines: every set of a 64-set L1

}  // namespace

stack_pool::stack_pool(std::size_t stack_bytes) : bytes_((stack_bytes + page_size() - 1) / page_size() * page_size()) {}

stack_pool::~stack_pool() {
  for (const auto& m : all_) {
#if defined(RILL_ASAN)
    // Fibers never return through their outermost frames (and those dropped at shutdown stop
    // anywhere), so ASan's stack redzones stay in the shadow; the next mmap of these addresses
    // (a segment, another stack) would inherit them.
    __asan_unpoison_memory_region(m.base, m.length);
#endif
    munmap(m.base, m.length);
    if (m.guarded) guarded_budget.fetch_add(1, std::memory_order_relaxed);
  }
}

boost::context::stack_context stack_pool::get() {
  if (!free_.empty()) {
    auto sc = free_.back();
    free_.pop_back();
    return sc;
  }
  const bool guarded = guarded_budget.fetch_sub(1, std::memory_order_relaxed) > 0;
  if (!guarded) {
    guarded_budget.fetch_add(1, std::memory_order_relaxed);
    if (!warned.exchange(true)) {
      log().info("fiber stacks beyond vm.max_map_count/4 are allocated without guard pages");
    }
  }
  // Each stack starts a different number of cache lines below the top of its mapping (a colour),
  // and the mapping has a page more than the stack's size to make room for that. The tops are
  // page-aligned, so without it the few lines every suspended fiber keeps hot (its saved registers
  // and the frames it resumes into) would all fall into the same cache sets, and a round robin
  // over more fibers than a set has ways would miss in L1 and L2 at every switch.
  const std::size_t colour = (all_.size() % stack_colours) * cache_line;
  const std::size_t length = bytes_ + page_size() + (guarded ? page_size() : 0);
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) fatal("cannot map a fiber stack of {} bytes: out of memory or mappings", length);
  if (guarded && mprotect(base, page_size(), PROT_NONE) != 0) fatal("cannot protect a fiber stack's guard page");
  all_.push_back({base, length, guarded});
  boost::context::stack_context sc;
  sc.sp = static_cast<char*>(base) + length - colour;  // stacks grow down from the top
  sc.size = bytes_ + page_size() - colour;             // down to the guard page
  return sc;
}

void stack_pool::put(boost::context::stack_context sc) { free_.push_back(sc); }

}  // namespace rill::detail
