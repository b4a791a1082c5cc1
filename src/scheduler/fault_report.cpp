#include "scheduler/fault_report.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>

#include "rill/error.hpp"
#include "scheduler/fiber.hpp"
#include "scheduler/worker.hpp"

namespace rill::detail {

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitizer_reports = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool sanitizer_reports = true;
#else
constexpr bool sanitizer_reports = false;
#endif
#else
constexpr bool sanitizer_reports = false;
#endif

// Faults this far below a fiber's stack count as its overflow: a frame larger than the guard page
// jumps past it.
constexpr std::uintptr_t overflow_slack = 256 * 1024;
constexpr std::size_t alt_stack_bytes = 64 * 1024;

std::atomic<const char* (*)(std::uint16_t)> handler_names{nullptr};
struct sigaction previous_segv {
}, previous_bus{};  // what ran before: MPI's, a debugger's, the default
thread_local int fault_rank = -1;

// A line built without allocating: only async-signal-safe calls in the handler.
struct line {
  char text[1024];
  std::size_t used = 0;
  line& operator<<(const char* s) {
    while (s && *s && used + 1 < sizeof text) text[used++] = *s++;
    return *this;
  }
  line& operator<<(std::uint64_t v) {
    char digits[24];
    int n = 0;
    do digits[n++] = static_cast<char>('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0 && used + 1 < sizeof text) text[used++] = digits[--n];
    return *this;
  }
  line& operator<<(int v) {
    if (v < 0) *this << "-";
    return *this << static_cast<std::uint64_t>(v < 0 ? -static_cast<std::int64_t>(v) : v);
  }
};

void name_the_handler(line& out, const fiber_rec& f) {
  const char* (*name_of)(std::uint16_t) = handler_names.load(std::memory_order_relaxed);
  out << "the handler ";
  if (name_of) out << "'" << name_of(f.message_handler) << "' ";
  out << "of a message from rank " << f.message_source;
}

void on_fault(int sig, siginfo_t* info, void*) {
  const worker* w = tls_worker;
  const fiber_rec* f = w ? w->current_fiber() : nullptr;
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  line out;
  out << "rill: fatal: ";
  bool known = false;
  if (f && f->stack.sp != nullptr) {
    const auto bottom = reinterpret_cast<std::uintptr_t>(f->stack_bottom);
    if (addr < bottom && addr + overflow_slack >= bottom) {
      out << "task stack overflow on rank " << fault_rank << " in ";
      if (f->message_source >= 0)
        name_the_handler(out, *f);
      else
        out << "a task";
      out << ": it needed more than its " << static_cast<std::uint64_t>(f->stack_size)
          << "-byte fiber stack; raise --rill:stack (or move large arrays off the stack)\n";
      known = true;
    }
  }
  if (!known && f && f->message_source >= 0) {
    out << (sig == SIGBUS ? "bus error" : "segmentation fault") << " on rank " << fault_rank << " in ";
    name_the_handler(out, *f);
    out << ": most likely a pointer or reference captured on rank " << f->message_source
        << ", which means nothing here (it works on the local transport, where ranks share one address space); "
           "ship values, rill::view or global pointers instead\n";
    known = true;
  }
  if (!known) {
    // Not ours to explain: what was there before (MPI's report, or the default action) takes it
    // when the faulting instruction runs again.
    sigaction(sig, sig == SIGBUS ? &previous_bus : &previous_segv, nullptr);
    return;
  }
  ssize_t ignored = write(STDERR_FILENO, out.text, out.used);
  (void)ignored;
  _exit(rill::exit_fatal);
}

}  // namespace

void install_fault_report() {
  if constexpr (sanitizer_reports) return;
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previous_segv);
    sigaction(SIGBUS, &sa, &previous_bus);
  });
}

void prepare_fault_report(int rank) {
  fault_rank = rank;
  if constexpr (sanitizer_reports) return;
  // The worker thread's alternate stack, given back when the thread ends.
  struct alternate_stack {
    std::unique_ptr<std::byte[]> memory = std::make_unique<std::byte[]>(alt_stack_bytes);
    alternate_stack() {
      stack_t ss{};
      ss.ss_sp = memory.get();
      ss.ss_size = alt_stack_bytes;
      sigaltstack(&ss, nullptr);
    }
    ~alternate_stack() {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
    }
  };
  thread_local alternate_stack alt;
  (void)alt;
}

void set_fault_handler_names(const char* (*name_of)(std::uint16_t id)) {
  handler_names.store(name_of, std::memory_order_relaxed);
}

const char* reported_handler_name(std::uint16_t id) {
  const char* (*name_of)(std::uint16_t) = handler_names.load(std::memory_order_relaxed);
  return name_of ? name_of(id) : "?";
}

}  // namespace rill::detail
