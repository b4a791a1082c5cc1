// The per-rank parts of the layers above the scheduler ("modules", after Realm's Module and HPX's
// component registry): each layer (messages, events, sync, global, ...) keeps its state for one rank
// in a class derived from rank_module, and finds it from any worker of that rank with
// current_module<M>() (scheduler/current_module.hpp). No object knows every layer: a new layer adds
// its module where the runtime builds a rank (runtime/builtin_modules.cpp), and nothing else.
//
// Slots are numbered per module type, process-wide, so finding a module is one indexed load.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace rill::detail {

class worker;

// Where a module reports its counters (rill::counters, --rill:stats): one call per counter.
class counter_report {
 public:
  virtual void add(std::string_view name, std::uint64_t value) = 0;

 protected:
  ~counter_report() = default;
};

class rank_module {
 public:
  // What the rank core calls a module for, when the worker loop reaches that point (a mask, so that
  // a module without a hook costs nothing there).
  enum hook : unsigned {
    no_hooks = 0,
    out_of_work_hook = 1,  // on_out_of_work: the worker found no task and no ready fiber
    idle_hook = 2,         // on_idle: the worker found nothing to do at all
  };
  // `layer`: the name its counters appear under (a string literal).
  explicit rank_module(std::string_view layer, unsigned hooks = no_hooks) : layer_(layer), hooks_(hooks) {}
  virtual ~rank_module() = default;
  rank_module(const rank_module&) = delete;
  rank_module& operator=(const rank_module&) = delete;

  std::string_view layer() const { return layer_; }
  unsigned hooks() const { return hooks_; }
  virtual void on_out_of_work(worker&) {}
  virtual void on_idle(worker&) {}
  // Reports the module's counters; any thread, at any time.
  virtual void report_counters(counter_report&) {}
  // Once, when the rank's workers have stopped: reports what the module finds wrong at the end of
  // the run and returns the run's exit code (`exit_code`, or another when what it found is fatal).
  virtual int end_of_run(int exit_code) { return exit_code; }

 private:
  const std::string_view layer_;
  const unsigned hooks_;
};

// A slot number no other module type has; called once per type, before main.
std::size_t next_module_slot();
template <class M>
inline const std::size_t module_slot = next_module_slot();

// The modules of one rank: owned ones (destroyed in reverse order of addition by clear()) and
// ones that live elsewhere (the rank core's own parts).
class module_table {
 public:
  static constexpr std::size_t max_modules = 32;

  module_table() = default;
  module_table(const module_table&) = delete;
  module_table& operator=(const module_table&) = delete;
  ~module_table() { clear(); }

  template <class M, class... Args>
  M& add(Args&&... args) {
    auto owned = std::make_unique<M>(std::forward<Args>(args)...);
    M& m = *owned;
    place(module_slot<M>, &m);
    owned_.push_back(std::move(owned));
    return m;
  }
  template <class M>
  void add_unowned(M& m) {
    place(module_slot<M>, &m);
  }

  // The rank's module M; it must have been added.
  template <class M>
  M& get() const {
    return *static_cast<M*>(slots_[module_slot<M>]);
  }

  // The modules in order of addition.
  const std::vector<rank_module*>& in_order() const { return order_; }

  // Destroys the owned modules, the last added first.
  void clear();

 private:
  void place(std::size_t slot, rank_module* m);

  std::array<rank_module*, max_modules> slots_{};
  std::vector<rank_module*> order_;
  std::vector<std::unique_ptr<rank_module>> owned_;
};

}  // namespace rill::detail
