// Phasers (rill/phaser.hpp): one rank's phasers, intra-rank as in HabaneroUPC++.
//
// A phaser counts its live signal-mode registrations by the next phase each will signal
// (`signallers`). Phase k has completed when no live signaller still has to signal k, i.e. the
// smallest key is above k, so `completed` (phases below it are done) is that smallest key, or
// "all" when no signaller is left. A signal moves one count from k to k + 1; a drop removes one; a
// child is counted at its parent's next signal phase, which is never below `completed` (the parent
// is a live signaller of that phase or a later one), so `completed` only grows. Waiting tasks sit in
// a list with the phase they wait for and are woken, outside the lock, once it completes.
//
// A task's registrations are a list hanging off the fiber running it (fiber_rec::phasers), like its
// finish scope: the async_phased wrapper installs its child's registrations for the task's run and
// drops what is left when the task ends; a creator's registration lives in its rill::phaser object.
#include "rill/phaser.hpp"

#include <limits>
#include <map>
#include <mutex>
#include <string>

#include "scheduler/fiber.hpp"
#include "scheduler/worker.hpp"

namespace rill::detail {

struct phaser_state {
  struct waiting {
    waiter w;
    std::uint64_t phase;
    waiting* next;
  };
  std::mutex m;
  std::map<std::uint64_t, std::uint64_t> signallers;  // next phase to signal -> live registrations
  std::uint64_t completed = 0;                        // phases below it have completed
  waiting* waiters = nullptr;

  static constexpr std::uint64_t all = std::numeric_limits<std::uint64_t>::max();

  // Under m: recomputes `completed`; returns the waiters whose phase has now completed, unlinked.
  waiting* advance() {
    completed = signallers.empty() ? all : signallers.begin()->first;
    waiting* done = nullptr;
    waiting** link = &waiters;
    while (waiting* e = *link) {
      if (e->phase < completed) {
        *link = e->next;
        e->next = done;
        done = e;
      } else {
        link = &e->next;
      }
    }
    return done;
  }
  void add(std::uint64_t phase) { ++signallers[phase]; }
  void remove(std::uint64_t phase) {
    auto it = signallers.find(phase);
    if (--it->second == 0) signallers.erase(it);
  }
  static void wake_all(waiting* e) {
    while (e) {
      waiting* next = e->next;  // read before wake: the waiter may vanish once woken
      wake(&e->w);
      e = next;
    }
  }
};

namespace {

bool signals(phaser_mode m) { return (static_cast<int>(m) & static_cast<int>(phaser_mode::signal)) != 0; }
bool waits(phaser_mode m) { return (static_cast<int>(m) & static_cast<int>(phaser_mode::wait)) != 0; }

const char* mode_name(phaser_mode m) {
  switch (m) {
    case phaser_mode::signal: return "signal";
    case phaser_mode::wait: return "wait";
    case phaser_mode::signal_wait: return "signal_wait";
  }
  return "?";
}

fiber_rec* running_fiber(const char* what) {
  worker* w = current_worker();
  if (!w) throw misuse_error(std::string(what) + " must be called from a Rill task");
  return w->current_fiber();
}

phaser_reg*& list_of(fiber_rec* f) { return reinterpret_cast<phaser_reg*&>(f->task.registrations); }

void link(phaser_reg& r, fiber_rec* f) {
  r.fiber = f;
  r.next = list_of(f);
  list_of(f) = &r;
}

void unlink(phaser_reg& r) {
  auto* f = static_cast<fiber_rec*>(r.fiber);
  for (phaser_reg** p = &list_of(f); *p; p = &(*p)->next) {
    if (*p == &r) {
      *p = r.next;
      break;
    }
  }
  r.fiber = nullptr;
  r.next = nullptr;
}

void check_valid(phaser_mode m) {
  if (m != phaser_mode::signal && m != phaser_mode::wait && m != phaser_mode::signal_wait)
    throw misuse_error("rill::phaser: no such registration mode");
}

}  // namespace

void phaser_create(phaser_reg& reg, phaser_mode mode) {
  check_valid(mode);
  fiber_rec* f = running_fiber("rill::phaser");
  reg.state = std::make_shared<phaser_state>();
  reg.mode = mode;
  reg.sig = reg.wait = 0;
  if (signals(mode)) reg.state->add(0);
  reg.state->advance();
  link(reg, f);
}

phaser_reg* phaser_find(const phaser_state* s) {
  worker* w = current_worker();
  if (!w) return nullptr;
  for (phaser_reg* r = list_of(w->current_fiber()); r; r = r->next)
    if (r->state.get() == s) return r;
  return nullptr;
}

phaser_grant phaser_register_child(const std::shared_ptr<phaser_state>& s, phaser_mode mode) {
  check_valid(mode);
  if (!s) throw misuse_error("rill::async_phased: an empty phaser reference");
  phaser_reg* parent = phaser_find(s.get());
  if (!parent) throw misuse_error("rill::async_phased: the calling task is not registered on this phaser");
  if ((static_cast<int>(mode) & ~static_cast<int>(parent->mode)) != 0)
    throw misuse_error(std::string("rill::async_phased: a task registered in mode ") + mode_name(parent->mode) +
                       " cannot register a child in mode " + mode_name(mode));
  const std::uint64_t start = signals(parent->mode) ? parent->sig : parent->wait;
  if (signals(mode)) {
    std::lock_guard g(s->m);
    s->add(start);  // start >= completed: the parent still has to signal `start`
  }
  return phaser_grant(s, mode, start);
}

void phaser_withdraw(phaser_grant& g) {
  if (signals(g.mode)) {
    phaser_state::waiting* woken;
    {
      std::lock_guard l(g.state->m);
      g.state->remove(g.phase);
      woken = g.state->advance();
    }
    phaser_state::wake_all(woken);
  }
  g.state.reset();
}

std::vector<phaser_grant> phaser_inherit_all() {
  std::vector<phaser_grant> grants;
  worker* w = current_worker();
  if (!w) return grants;
  for (phaser_reg* r = list_of(w->current_fiber()); r; r = r->next)
    grants.push_back(phaser_register_child(r->state, r->mode));
  return grants;
}

void phaser_run_phased(std::vector<phaser_grant>& grants, void (*body)(void*), void* arg) {
  fiber_rec* f = running_fiber("rill::async_phased");
  void* const previous = f->task.registrations;
  f->task.registrations = nullptr;  // the task's own registrations only
  std::vector<phaser_reg> regs(grants.size());
  for (std::size_t i = 0; i < grants.size(); ++i) {
    phaser_reg& r = regs[i];
    r.mode = grants[i].mode;
    r.sig = r.wait = grants[i].phase;
    r.state = std::move(grants[i].state);
    link(r, f);
  }
  struct end_of_task {
    fiber_rec* f;
    void* previous;
    ~end_of_task() {
      while (auto* r = list_of(f)) phaser_drop(r);  // what the task did not drop itself
      f->task.registrations = previous;
    }
  } guard{f, previous};
  body(arg);
}

void phaser_signal(phaser_reg* r) {
  if (!signals(r->mode))
    throw misuse_error(std::string("rill::phaser::signal: the calling task is registered in mode ") +
                       mode_name(r->mode) + ", which does not signal");
  if (waits(r->mode) && r->sig > r->wait) return;  // already signalled this phase
  phaser_state& s = *r->state;
  phaser_state::waiting* woken;
  {
    std::lock_guard g(s.m);
    s.remove(r->sig);
    s.add(r->sig + 1);
    woken = s.advance();
  }
  ++r->sig;
  phaser_state::wake_all(woken);
}

void phaser_wait(phaser_reg* r) {
  if (!waits(r->mode))
    throw misuse_error(std::string("rill::phaser::wait: the calling task is registered in mode ") + mode_name(r->mode) +
                       ", which does not wait");
  if (signals(r->mode) && r->sig == r->wait) phaser_signal(r);  // it cannot wait for a phase it holds back
  phaser_state& s = *r->state;
  phaser_state::waiting self{{}, r->wait, nullptr};
  {
    std::lock_guard g(s.m);
    if (s.completed <= r->wait) {
      prepare_wait(self.w);
      self.next = s.waiters;
      s.waiters = &self;
    } else {
      self.phase = phaser_state::all;  // not waiting
    }
  }
  if (self.phase != phaser_state::all) park(self.w);
  ++r->wait;
}

void phaser_drop(phaser_reg* r) {
  if (!r->fiber) return;
  if (signals(r->mode)) {
    phaser_state& s = *r->state;
    phaser_state::waiting* woken;
    {
      std::lock_guard g(s.m);
      s.remove(r->sig);
      woken = s.advance();
    }
    phaser_state::wake_all(woken);
  }
  unlink(*r);
}

phaser_reg* phaser_ref_lookup(const std::shared_ptr<phaser_state>& s, const char* what) {
  if (!s) throw misuse_error(std::string(what) + ": an empty phaser reference");
  running_fiber(what);
  phaser_reg* r = phaser_find(s.get());
  if (!r) throw misuse_error(std::string(what) + ": the calling task is not registered on this phaser");
  return r;
}

}  // namespace rill::detail

namespace rill {

detail::phaser_reg* phaser_ref::reg(const char* what) const { return detail::phaser_ref_lookup(state_, what); }

phaser::phaser(phaser_mode mode) {
  detail::phaser_create(creator_, mode);
  state_ = creator_.state;
}

phaser::~phaser() {
  if (creator_.fiber) detail::phaser_drop(&creator_);
}

namespace {
detail::phaser_reg* registrations(const char* what) {
  detail::worker* w = detail::current_worker();
  if (!w) throw misuse_error(std::string(what) + " must be called from a Rill task");
  return static_cast<detail::phaser_reg*>(w->current_fiber()->task.registrations);
}
}  // namespace

void next() {
  detail::phaser_reg* head = registrations("rill::next");
  for (detail::phaser_reg* r = head; r; r = r->next)
    if (detail::signals(r->mode)) detail::phaser_signal(r);
  for (detail::phaser_reg* r = head; r; r = r->next)
    if (detail::waits(r->mode)) detail::phaser_wait(r);
}

void signal_all() {
  for (detail::phaser_reg* r = registrations("rill::signal_all"); r; r = r->next)
    if (detail::signals(r->mode)) detail::phaser_signal(r);
}

void drop_all() {
  registrations("rill::drop_all");
  while (detail::phaser_reg* r = registrations("rill::drop_all")) detail::phaser_drop(r);
}

}  // namespace rill
