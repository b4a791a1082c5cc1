// The MPI transport: one rank per MPI process, on a duplicate of MPI_COMM_WORLD. Start-up: MPI
// initialised with MPI_THREAD_SERIALIZED (or whatever the program already initialised, if at least
// that), the build check, the all-gathers, the segments' MPI-3 shared window over the node and the
// node rings' second window (connect_node_rings). The endpoint is mpi_endpoint.hpp.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "common/log.hpp"
#include "common/wake_word.hpp"
#include "rill/error.hpp"
#include "transport/clear_pages.hpp"
#include "transport/launcher.hpp"
#include "transport/mpi_endpoint.hpp"
#include "transport/node_layout.hpp"
#include "transport/populate_pages.hpp"
#include "transport/private_memory.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

namespace {

MPI_Comm abort_comm = MPI_COMM_WORLD;
void abort_all(int code) { MPI_Abort(abort_comm, code); }

class mpi_transport final : public transport {
 public:
  mpi_transport(const rill::config& cfg, deep_call_fn deep, const start_agreement& agreement) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      int provided = MPI_THREAD_SINGLE;
      MPI_Query_thread(&provided);
      if (provided < MPI_THREAD_SERIALIZED) {
        std::fprintf(stderr,
                     "rill: fatal: the program initialised MPI with thread level %d; Rill's workers need at least "
                     "MPI_THREAD_SERIALIZED (MPI_Init_thread)\n",
                     provided);
        std::exit(exit_fatal);
      }
    } else {
      int provided = MPI_THREAD_SINGLE;
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      if (provided < MPI_THREAD_SERIALIZED) {
        std::fprintf(stderr, "rill: fatal: this MPI library does not provide MPI_THREAD_SERIALIZED\n");
        MPI_Finalize();
        std::exit(exit_fatal);
      }
      owns_mpi_ = true;
    }
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    abort_comm = comm_;
    set_fatal_abort_hook(&abort_all);
    check_launcher();
    check_agreement(agreement);
    MPI_Comm node;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &ranks_on_node_);
    MPI_Comm_rank(node, &node_index_);
    ranks_per_node_ = launcher_ranks_per_node(node, cfg.ranks_per_node);
    ep_ = std::make_unique<mpi_endpoint>(comm_, cfg, deep);
    if (ranks_on_node_ > 1 && cfg.node_ring_bytes > 0) connect_node_rings(node, cfg.node_ring_bytes);
    MPI_Comm_free(&node);
  }

  ~mpi_transport() override {
    ep_.reset();
    if (ring_window_ != MPI_WIN_NULL) MPI_Win_free(&ring_window_);  // collective on the node
    if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);            // collective on the node, like the end
    if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
    set_fatal_abort_hook(nullptr);
    MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }

  int size() const override { return ep_->size(); }
  std::vector<endpoint*> local_endpoints() override { return {ep_.get()}; }
  int cores_per_rank() const override {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return std::max(1, cores / std::max(1, ranks_on_node_));
  }
  int node_index() const override { return node_index_; }
  int ranks_per_node() const override { return ranks_per_node_; }

  std::vector<std::string> gather_from_all_ranks(const std::string& mine) override {
    int n = 0;
    MPI_Comm_size(comm_, &n);
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<std::size_t>(n)), offsets(static_cast<std::size_t>(n));
    check_mpi(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_), "MPI_Allgather");
    int total = 0;
    for (int r = 0; r < n; ++r) {
      offsets[static_cast<std::size_t>(r)] = total;
      total += lens[static_cast<std::size_t>(r)];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    check_mpi(MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, comm_),
              "MPI_Allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < n; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(lens[static_cast<std::size_t>(r)])));
    return out;
  }

  segment_memory map_segments(std::size_t bytes, bool share) override {
    const int n = size(), me = ep_->rank();
    std::byte* mine = share ? shared_window(bytes) : nullptr;
    if (!mine) {
      private_ = std::make_unique<private_memory>(bytes);
      mine = private_->data();
    }
    segment_memory m;
    m.own = {mine};
    m.owner_base.resize(static_cast<std::size_t>(n));
    m.local_base.assign(static_cast<std::size_t>(n), nullptr);
    const auto base = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(mine));
    check_mpi(MPI_Allgather(&base, 1, MPI_UINT64_T, m.owner_base.data(), 1, MPI_UINT64_T, comm_), "MPI_Allgather");
    m.local_base[static_cast<std::size_t>(me)] = mine;
    if (window_ != MPI_WIN_NULL) {
      // Where each process of the node sees its neighbours' parts of the window.
      int node_n = 0;
      MPI_Comm_size(node_comm_, &node_n);
      std::vector<int> world_of(static_cast<std::size_t>(node_n));
      check_mpi(MPI_Allgather(&me, 1, MPI_INT, world_of.data(), 1, MPI_INT, node_comm_), "MPI_Allgather");
      for (int i = 0; i < node_n; ++i) {
        MPI_Aint got = 0;
        int unit = 0;
        void* at = nullptr;
        check_mpi(MPI_Win_shared_query(window_, i, &got, &unit, &at), "MPI_Win_shared_query");
        m.local_base[static_cast<std::size_t>(world_of[static_cast<std::size_t>(i)])] = page_aligned(at);
      }
    }
    return m;
  }

  void finish() override { ep_->finish(); }

 private:
  // Collective: the launcher's nodes as nodes of consecutive ranks, if they are (node_layout.hpp).
  // `asked` is --rill:ranks-per-node (0: automatic, which this serves).
  int launcher_ranks_per_node(MPI_Comm node, int asked) {
    int me = 0, n = 0, first = 0;
    MPI_Comm_rank(comm_, &me);
    MPI_Comm_size(comm_, &n);
    check_mpi(MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce");
    std::vector<int> first_of(static_cast<std::size_t>(n));
    check_mpi(MPI_Allgather(&first, 1, MPI_INT, first_of.data(), 1, MPI_INT, comm_), "MPI_Allgather");
    const int k = consecutive_ranks_per_node(first_of);
    bool shared_nodes = false;
    for (int r = 0; r < n; ++r) shared_nodes = shared_nodes || first_of[static_cast<std::size_t>(r)] != r;
    if (asked == 0 && k == 1 && shared_nodes && me == 0)
      log().warn(
          "the launcher's nodes do not hold consecutive ranks, or differ in size: each rank keeps an "
          "aggregation buffer per rank of other nodes; place ranks in blocks (mpirun --map-by core) or set "
          "--rill:ranks-per-node");
    return k;
  }

  // This process' part of an MPI-3 shared-memory window over the node's processes, or nullptr
  // (alone on the node, or the library could not make one on some process: then none uses one).
  std::byte* shared_window(std::size_t bytes) {
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int node_n = 0;
    MPI_Comm_size(node, &node_n);
    if (node_n == 1) {
      MPI_Comm_free(&node);
      return nullptr;
    }
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each part page-aligned, near its owner
    void* base = nullptr;
    MPI_Win win = MPI_WIN_NULL;
    // A page more than asked: the library need not start a part on a page (Open MPI does not), and
    // a segment starts on one (its granules, delegate locks and page-wise clearing count on it).
    const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes + page_bytes()), 1, info, node, &base, &win);
    MPI_Info_free(&info);
    // MPI does not promise zeroes, and a segment must start as zeroes. Before the collective
    // below, so that no process reads a part before its owner has cleared it.
    if (rc == MPI_SUCCESS) clear_pages(page_aligned(base), bytes);
    int ok = rc == MPI_SUCCESS ? 1 : 0, all_ok = 0;
    check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce");
    if (!all_ok) {
      if (rc == MPI_SUCCESS) MPI_Win_free(&win);
      log().info("no MPI shared-memory window for {}-byte segments; ranks on this node use messages", bytes);
      MPI_Comm_free(&node);
      return nullptr;
    }
    window_ = win;
    node_comm_ = node;
    return page_aligned(base);
  }

  // Collective on the node: each process allocates, in a shared window, one ring per other process
  // of the node for the buffers that process sends it, and connects the endpoint to both ends.
  // Without such a window (the library cannot make one on some process) MPI carries everything.
  void connect_node_rings(MPI_Comm node, std::size_t capacity) {
    int node_n = 0, node_me = 0;
    MPI_Comm_size(node, &node_n);
    MPI_Comm_rank(node, &node_me);
    const int me = ep_->rank();
    std::vector<int> world_of(static_cast<std::size_t>(node_n));
    check_mpi(MPI_Allgather(&me, 1, MPI_INT, world_of.data(), 1, MPI_INT, node), "MPI_Allgather");
    // Each process's part: a cache line for the word its workers sleep on (wake_word), then its
    // incoming rings.
    const std::size_t ring = byte_ring::bytes_for(capacity);
    const std::size_t part = word_line + ring * static_cast<std::size_t>(node_n - 1);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    void* base = nullptr;
    MPI_Win win = MPI_WIN_NULL;
    // 64 bytes more than asked, to start the rings on a cache line.
    const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(part + 64), 1, info, node, &base, &win);
    MPI_Info_free(&info);
    // Rings must start empty (zeroes), before any peer can write: the collective below orders it.
    if (rc == MPI_SUCCESS) std::memset(line_aligned(base), 0, part);
    int ok = rc == MPI_SUCCESS ? 1 : 0, all_ok = 0;
    check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce");
    if (!all_ok) {
      if (rc == MPI_SUCCESS) MPI_Win_free(&win);
      log().info("no MPI shared-memory window for node rings; ranks on this node talk through MPI");
      return;
    }
    auto part_of = [&](int owner) {
      MPI_Aint got = 0;
      int unit = 0;
      void* at = nullptr;
      check_mpi(MPI_Win_shared_query(win, owner, &got, &unit, &at), "MPI_Win_shared_query");
      return line_aligned(at);
    };
    // In process p's part, ring k carries what the k-th other process of the node (in node order)
    // sends to p.
    auto ring_in = [&](int owner, int sender) {
      const auto k = static_cast<std::size_t>(sender < owner ? sender : sender - 1);
      return part_of(owner) + word_line + k * ring;
    };
    // Each process makes its own word before the barrier below; the others use it after.
    auto word_of = [&](int owner) { return std::launder(reinterpret_cast<wake_word*>(part_of(owner))); };
    new (part_of(node_me)) wake_word(true);
    // Every ring is mapped now, by an access of each page from this process, not by the first pass
    // of messages through it: on this machine's hypervisor the first access of a page faults into
    // the host, and a 1 MiB ring's first pass made Task Bench's first 100 ms of messages 2.3x
    // slower (M3). The barrier keeps every rank from sending until all have done so.
    for (int p = 0; p < node_n; ++p) {
      if (p == node_me) continue;
      populate_pages(ring_in(p, node_me), ring);
      populate_pages(ring_in(node_me, p), ring);
    }
    check_mpi(MPI_Barrier(node), "MPI_Barrier");
    for (int p = 0; p < node_n; ++p) {
      if (p == node_me) continue;
      ep_->add_node_rings(world_of[static_cast<std::size_t>(p)], ring_in(p, node_me), ring_in(node_me, p), capacity,
                          *word_of(p));
    }
    ep_->sleep_on(*word_of(node_me));
    ring_window_ = win;
    log().info("rank {} reaches {} other rank(s) of its node through shared-memory rings of {} bytes", me, node_n - 1,
               capacity);
  }

  // A launcher of another MPI starts N processes that this MPI sees as N jobs of one rank each,
  // every one doing all the work: stop before that.
  void check_launcher() {
    int n = 0;
    MPI_Comm_size(comm_, &n);
    const launcher_count launched = launcher_processes();
    if (launched.processes <= 1 || n != 1) return;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string library(version, static_cast<std::size_t>(len));
    library = library.substr(0, library.find_first_of("\n,"));
    stop_at_start_up(fmt::format(
        "the launcher started {} processes ({}={}, set by {}) but this program's MPI ({}) sees a job of 1: each "
        "process would run the whole program alone. Start it with the mpirun of the MPI it was built with",
        launched.processes, launched.variable, launched.processes, launched.launcher, library));
  }

  // Every rank's build and shared options against rank 0's; on a difference every rank says
  // which, and stops.
  void check_agreement(const start_agreement& mine) {
    const std::vector<std::string> all = gather_from_all_ranks(fmt::format("{:016x}\n{}", mine.build, mine.options));
    for (std::size_t r = 1; r < all.size(); ++r) {
      if (all[r] == all[0]) continue;
      const auto lines = [](const std::string& s) {
        std::vector<std::string> out;
        for (std::size_t at = 0; at < s.size();) {
          const std::size_t end = s.find('\n', at);
          out.push_back(s.substr(at, end - at));
          at = end == std::string::npos ? s.size() : end + 1;
        }
        return out;
      };
      const std::vector<std::string> theirs = lines(all[r]), first = lines(all[0]);
      if (theirs[0] != first[0])
        stop_at_start_up(fmt::format(
            "rank {} runs a different build than rank 0 (fingerprint {} vs {}): every rank must run the same binary", r,
            theirs[0], first[0]));
      for (std::size_t i = 1; i < std::min(theirs.size(), first.size()); ++i)
        if (theirs[i] != first[i])
          stop_at_start_up(
              fmt::format("rank {} was started with {} but rank 0 with {}: this option must be the same on every rank",
                          r, theirs[i], first[i]));
      stop_at_start_up(fmt::format("rank {} and rank 0 were started with different options", r));
    }
  }

  // A fatal error found by every rank alike, before the runtime runs: each rank says it and exits,
  // with nothing left for an MPI_Abort to tear down.
  [[noreturn]] void stop_at_start_up(const std::string& why) {
    int me = 0;
    MPI_Comm_rank(comm_, &me);
    std::fprintf(stderr, "rill: fatal: (on rank %d) %s\n", me, why.c_str());
    std::fflush(stderr);
    set_fatal_abort_hook(nullptr);
    MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
    std::exit(exit_fatal);
  }

  // The room for a wake_word at the start of each process's part of the node rings' window.
  static constexpr std::size_t word_line = 64;
  static_assert(sizeof(wake_word) <= word_line);

  static std::byte* line_aligned(void* p) {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    return reinterpret_cast<std::byte*>((at + 63) / 64 * 64);
  }

  static std::size_t page_bytes() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
  // The first page boundary at or after p: where the segment starts in a part of the window (the
  // same in every process' mapping of it, since mappings keep offsets within pages).
  static std::byte* page_aligned(void* p) {
    const auto at = reinterpret_cast<std::uintptr_t>(p), page = page_bytes();
    return reinterpret_cast<std::byte*>((at + page - 1) / page * page);
  }

  bool owns_mpi_ = false;
  MPI_Win ring_window_ = MPI_WIN_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  std::unique_ptr<private_memory> private_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int ranks_on_node_ = 1;
  int node_index_ = 0;
  int ranks_per_node_ = 1;
  std::unique_ptr<mpi_endpoint> ep_;
};

}  // namespace

std::unique_ptr<transport> make_mpi_transport(const rill::config& cfg, deep_call_fn deep,
                                              const start_agreement& agreement) {
  return std::make_unique<mpi_transport>(cfg, deep, agreement);
}

}  // namespace rill::detail
