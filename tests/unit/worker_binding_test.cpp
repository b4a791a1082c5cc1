// --rill:bind (src/machine/worker_binding.*, worker_pool::bind_workers): the processors each thread
// of a rank may run on, read from /proc/self/task while the ranks run.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "rill/rill.hpp"
#include "test_argv.hpp"

namespace {

using cpus = std::set<int>;

cpus affinity_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  cpus out;
  if (sched_getaffinity(tid, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.insert(c);
  return out;
}

// Every thread of the runtime (named rill-rRwW, rill-rRcC, rill-rRioI) and where it may run.
std::map<std::string, cpus> rill_threads() {
  std::map<std::string, cpus> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("rill-r", 0) == 0) out[name] = affinity_of(static_cast<pid_t>(std::stol(task.path().filename())));
  }
  return out;
}

struct observed {
  std::map<std::string, cpus> threads;
  int cores_allowed = 0;  // whole cores this process may run on
};

std::string worker_name(int rank, int w) { return "rill-r" + std::to_string(rank) + "w" + std::to_string(w); }

// Runs ranks x workers with `bind`. Each worker reports where it may run from its own thread: each
// rank spawns one task per worker, and each task waits (holding its thread) until as many
// different threads of its rank have reported, so every worker must take one. Then rank 0 adds
// the channels and I/O threads it finds in /proc.
observed run_and_look(const std::string& bind, int ranks, int workers) {
  rill_test::test_argv a(rill_test::command_line("worker_binding_test",
                                                 {"--rill:bind=" + bind, "--rill:ranks=" + std::to_string(ranks),
                                                  "--rill:workers=" + std::to_string(workers), "--rill:channels=1"}));
  rill::runtime rt(a.argc, a.ptrs.data());
  observed seen;
  std::mutex lock;                                                          // guards seen.threads
  std::vector<std::atomic<int>> reported(static_cast<std::size_t>(ranks));  // per rank
  const std::size_t process_cpus = affinity_of(0).size();
  rt.run_spmd([&] {
    std::atomic<int>& mine = reported[static_cast<std::size_t>(rill::rank_me())];
    rill::latch all_reported(workers);
    for (int w = 0; w < workers; ++w) {
      rill::spawn([&] {
        char name[16] = {};
        pthread_getname_np(pthread_self(), name, sizeof(name));
        {
          std::lock_guard g(lock);
          seen.threads[name] = affinity_of(0);
        }
        mine.fetch_add(1);
        while (mine.load() < workers) std::this_thread::yield();  // the others take the other tasks
        all_reported.count_down();
      });
    }
    all_reported.wait();
    rill::team::world().barrier().wait();
    if (rill::rank_me() == 0) {
      for (auto& [name, where] : rill_threads())
        if (name.find('w') == std::string::npos) seen.threads[name] = where;  // channels, I/O threads
      const auto& node = rill::machine::get().nodes().at(0);
      const int per_core = std::max(1, node.pus / std::max(1, node.cores));
      seen.cores_allowed = static_cast<int>(process_cpus) / per_core;
    }
    rill::team::world().barrier().wait();
    return 0;
  });
  return seen;
}

TEST(WorkerBinding, UnboundThreadsMayRunWhereTheProcessMay) {
  const cpus process = affinity_of(0);
  const observed seen = run_and_look("none", 2, 1);
  ASSERT_TRUE(seen.threads.count(worker_name(0, 0)));
  ASSERT_TRUE(seen.threads.count(worker_name(1, 0)));
  for (const auto& [name, where] : seen.threads) EXPECT_EQ(where, process) << name;
}

// One worker per rank: each on a core of its own while there are cores enough; channels and I/O
// threads stay where the process may run.
TEST(WorkerBinding, EachRanksWorkerGetsACoreOfItsOwn) {
  const cpus process = affinity_of(0);
  const observed seen = run_and_look("cores", 2, 1);
  const cpus& w0 = seen.threads.at(worker_name(0, 0));
  const cpus& w1 = seen.threads.at(worker_name(1, 0));
  for (const cpus* w : {&w0, &w1}) {
    ASSERT_FALSE(w->empty());
    EXPECT_LT(w->size(), process.size() > 1 ? process.size() : 2) << "a worker bound to every processor";
    for (int c : *w) EXPECT_TRUE(process.count(c)) << c;
  }
  if (seen.cores_allowed >= 2) {
    for (int c : w0) EXPECT_FALSE(w1.count(c)) << "ranks 0 and 1 share processor " << c;
  }
  int others = 0;
  for (const auto& [name, where] : seen.threads)
    if (name.find('w') == std::string::npos) {
      ++others;
      EXPECT_EQ(where, process) << name;
    }
  EXPECT_GE(others, 2);  // each rank's channel and I/O thread were seen
}

// More workers than cores: every core carries workers, and none carries two before each carries one.
TEST(WorkerBinding, WorkersTakeTheCoresInTurn) {
  const observed seen = run_and_look("cores", 2, 2);
  std::map<cpus, int> per_core;
  for (int r = 0; r < 2; ++r)
    for (int w = 0; w < 2; ++w) ++per_core[seen.threads.at(worker_name(r, w))];
  const int cores = std::max(1, seen.cores_allowed);
  EXPECT_EQ(static_cast<int>(per_core.size()), std::min(4, cores));
  for (const auto& [core, n] : per_core) EXPECT_LE(n, (4 + cores - 1) / cores);
}

}  // namespace
