#include "rill/runtime.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "common/clock.hpp"
#include "common/log.hpp"
#include "common/options.hpp"
#include "core/outside_threads.hpp"
#include "core/rank_core.hpp"
#include "events/events_module.hpp"
#include "global/global_module.hpp"
#include "machine/machine.hpp"
#include "machine/worker_binding.hpp"
#include "messages/decoder.hpp"
#include "messages/handler_table.hpp"
#include "messages/wire_format.hpp"
#include "rill/detail/segment_layout.hpp"
#include "rill/error.hpp"
#include "rill/launcher.hpp"
#include "rill/task.hpp"
#include "runtime/builtin_modules.hpp"
#include "runtime/stats_report.hpp"
#include "runtime/termination.hpp"
#include "scheduler/deep_stack.hpp"
#include "scheduler/fault_report.hpp"
#include "trace/recorder.hpp"
#include "trace/trace_file.hpp"
#include "transport/transport.hpp"

namespace rill {

class runtime_impl {
 public:
  rill::config cfg;
  std::unique_ptr<detail::transport> transport;
  std::vector<std::unique_ptr<detail::rank_core>> ranks;
  std::vector<std::unique_ptr<detail::trace::rank_trace>> traces;  // with --rill:trace, by local rank
  bool ran = false;

  // Gives every rank of this process a trace its workers record into, its clock aligned with rank 0's.
  void start_tracing() {
    // One all-gather of each process's clock: its skew is the alignment's error (none under local,
    // where every rank reads the same clock).
    const auto clocks = transport->gather_from_all_ranks(std::to_string(detail::steady_now_ns()));
    const auto rank0_clock = static_cast<std::int64_t>(std::stoull(clocks.front()));
    for (auto& rank : ranks) {
      auto t = std::make_unique<detail::trace::rank_trace>(rank->id(), cfg.workers, cfg.channels, cfg.io_threads,
                                                           cfg.progress == rill::progress_mode::thread);
      const auto own_clock = static_cast<std::int64_t>(std::stoull(clocks[static_cast<std::size_t>(rank->id())]));
      t->set_clock_offset(rank0_clock - own_clock);
      rank->pool().set_trace(t.get());
      traces.push_back(std::move(t));
    }
  }

  // Every rank writes its part of the trace; once all have (a collective), rank 0's process merges them.
  void write_trace() {
    bool ok = true;
    try {
      for (auto& t : traces) detail::trace::write_part(*t, cfg.trace);
    } catch (const std::exception& e) {
      detail::log().error("--rill:trace: {}", e.what());
      ok = false;
    }
    const auto written = transport->gather_from_all_ranks(ok ? "ok" : "failed");
    if (ranks.front()->id() != 0) return;
    for (std::size_t r = 0; r < written.size(); ++r)
      if (written[r] != "ok") {
        detail::log().error("--rill:trace: rank {} could not write its part; {} was not merged", r, cfg.trace);
        return;
      }
    try {
      detail::trace::merge_parts(cfg.trace, transport->size());
      detail::log().info("trace of {} rank(s) written to {}", transport->size(), cfg.trace);
    } catch (const std::exception& e) {
      detail::log().error("--rill:trace: {}", e.what());
    }
  }
};

runtime::runtime(int& argc, char** argv) : impl_(std::make_unique<runtime_impl>()) {
  detail::parsed_options opts;
  try {
    opts = detail::parse_options(argc, argv);
    if (opts.help) {
      std::fputs(detail::options_help().c_str(), stdout);
      std::exit(0);
    }
    if (!opts.was_given("transport")) {
      opts.cfg.transport = rill::launched_by_mpi_launcher() ? transport_kind::mpi : transport_kind::local;
    }
    if (opts.cfg.transport == transport_kind::mpi && opts.cfg.ranks != 1) {
      throw usage_error(
          "--rill:ranks sets the ranks of the local transport; under mpi the launcher decides (mpirun -np N)");
    }
    const rill::fault_plan& faults = opts.cfg.faults;
    if (faults.any() && opts.cfg.transport == transport_kind::mpi)
      throw usage_error("--rill:faults injects faults into the local transport only");
    for (const int r : {faults.stall_rank, faults.slow_rank})
      if (r >= opts.cfg.ranks)
        throw usage_error(
            fmt::format("--rill:faults names rank {}, but there are {} (--rill:ranks)", r, opts.cfg.ranks));
  } catch (const usage_error& e) {
    std::fprintf(stderr, "rill: error: %s\n", e.what());
    std::exit(exit_usage);
  }
  auto& cfg = impl_->cfg;
  cfg = opts.cfg;
  detail::set_log_level(cfg.log);
  for (const std::string& w : opts.warnings) detail::log().warn("{}", w);
  impl_->transport =
      cfg.transport == transport_kind::mpi
          ? detail::make_mpi_transport(cfg, &detail::deep_call,
                                       {detail::build_fingerprint(), detail::options_every_rank_must_share(cfg)})
          : detail::make_local_transport(cfg, detail::has_control_message);
  detail::install_fault_report();
  detail::set_fault_handler_names(&detail::handler_name);
  if (cfg.ranks_per_node == 0)
    cfg.ranks_per_node = std::min(impl_->transport->ranks_per_node(), detail::wire::max_ranks_per_node);
  if (!opts.was_given("workers")) cfg.workers = impl_->transport->cores_per_rank();
  // A channel that must share its rank's cores with every worker costs more in hand-offs than it
  // saves (R5 and COPY in docs/performance.md): by default there is one only if a core is left.
  if (!opts.was_given("channels")) cfg.channels = impl_->transport->cores_per_rank() > cfg.workers ? 1 : 0;
  // Collective, like the start-up agreement: every rank learns the same description of the machine.
  const auto machine = detail::build_machine(
      *impl_->transport, cfg.workers,
      {detail::segment_layout::own_heap_bytes(cfg.segment_bytes, cfg.global_heap_bytes), cfg.shared_segments});
  for (detail::endpoint* ep : impl_->transport->local_endpoints()) {
    impl_->ranks.push_back(std::make_unique<detail::rank_core>(*ep, cfg));
    detail::add_builtin_modules(*impl_->ranks.back(), cfg, machine);
  }
  if (cfg.bind == bind_policy::cores) {
    const auto cores =
        detail::worker_cores(static_cast<int>(impl_->ranks.size()), cfg.workers, impl_->transport->node_index());
    for (std::size_t i = 0; i < impl_->ranks.size(); ++i) impl_->ranks[i]->pool().bind_workers(cores[i]);
  }
  // Collective too: the global-memory segments, and which of them this process can address.
  const detail::segment_memory memory = impl_->transport->map_segments(cfg.segment_bytes, cfg.shared_segments);
  detail::segment_directory segments;
  for (std::size_t r = 0; r < memory.owner_base.size(); ++r)
    segments.by_rank.emplace_back(memory.owner_base[r], memory.local_base[r], cfg.segment_bytes);
  for (std::size_t i = 0; i < impl_->ranks.size(); ++i)
    impl_->ranks[i]->modules().get<detail::global_module>().set_segments(memory.own[i], cfg.segment_bytes,
                                                                         cfg.global_heap_bytes, segments);
  if (!cfg.trace.empty()) impl_->start_tracing();
  detail::log().debug("{} rank(s) here of {}, {} worker(s) each, transport {}", impl_->ranks.size(),
                      impl_->transport->size(), cfg.workers, cfg.transport == transport_kind::mpi ? "mpi" : "local");
}

runtime::~runtime() {
  impl_->ranks.clear();
  impl_->transport.reset();
}

int runtime::ranks() const { return impl_->transport->size(); }
int runtime::local_ranks() const { return static_cast<int>(impl_->ranks.size()); }
const rill::config& runtime::options() const { return impl_->cfg; }

int runtime::run_top(std::function<int()> fn, bool spmd) {
  if (impl_->ran) throw misuse_error("rill::runtime::run may be called once per runtime");
  impl_->ran = true;
  auto shared_fn = std::make_shared<std::function<int()>>(std::move(fn));
  for (auto& rank : impl_->ranks) {
    if (!spmd && rank->id() != 0) continue;
    detail::rank_core* r = rank.get();
    r->pool().inject(detail::make_task([r, shared_fn, spmd] {
      int code = 0;
      try {
        code = (*shared_fn)();
      } catch (const std::exception& e) {
        detail::fatal("the top-level task on rank {} threw: {}", r->id(), e.what());
      }
      auto& term = r->modules().get<detail::termination>();
      if (spmd)
        term.spmd_done(r->id(), code);
      else
        term.top_level_done(code);
    }));
  }
  std::vector<detail::rank_core*> here;
  for (auto& rank : impl_->ranks) here.push_back(rank.get());
  detail::register_process_ranks(here);
  for (auto& rank : impl_->ranks) rank->pool().start(rank->id());
  for (auto& rank : impl_->ranks) rank->pool().join();
  detail::withdraw_process_ranks();
  if (!impl_->traces.empty()) impl_->write_trace();
  if (impl_->cfg.stats) {
    std::vector<int> ids;
    std::vector<std::vector<rill::counter>> counters;
    for (auto& rank : impl_->ranks) {
      ids.push_back(rank->id());
      counters.push_back(rank->counters());
    }
    std::fputs(detail::format_counters(ids, counters).c_str(), stderr);
  }
  if (!impl_->cfg.event_graph.empty()) {
    std::vector<const detail::event_trace*> traces;
    for (auto& rank : impl_->ranks) traces.push_back(&rank->modules().get<detail::events_module>().table().trace());
    detail::write_event_graph_files(impl_->cfg.event_graph, traces, impl_->transport->size());
  }
  int code = impl_->ranks.front()->exit_code();
  for (auto& rank : impl_->ranks) code = rank->end_of_run(code);
  impl_->transport->finish();
  return code;
}

}  // namespace rill
