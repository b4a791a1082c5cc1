// Global pointers and async_copy: allocation in the registered segments, pointer arithmetic,
// local() and its checks, and copies between every pair of ranks (puts, gets and copies between
// two other ranks), with preconditions, poison, finish, large copies in pieces and bad pointers.
// Each test runs twice: ranks of one process addressing each other's segments directly, and not
// (--rill:shared-segments=off), so that the local transport's chaos also reorders the messages.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "global_harness.hpp"
#include "harness.hpp"
#include "rill/async_copy.hpp"
#include "rill/global_ptr.hpp"

namespace rill_test {
namespace {

class global_copy : public ::testing::TestWithParam<setup> {};

// Whether p[i] == pattern(from, first + i) for i < n, checked on p's rank.
bool holds(rill::global_ptr<long> p, std::size_t n, int from, std::size_t first) {
  return rill::rpc(
             p.where(),
             [](rill::global_ptr<long> q, std::size_t count, int f, std::size_t start) {
               const long* a = q.local(count);
               for (std::size_t i = 0; i < count; ++i)
                 if (a[i] != pattern(f, start + i)) return false;
               return true;
             },
             p, n, from, first)
      .get();
}

TEST_P(global_copy, pointers_allocate_move_and_address_their_segment) {
  both_ways(GetParam(), [](bool shared) {
    const int n = rill::rank_n();
    rill::global_ptr<long> mine = rill::new_array<long>(100);
    expect(mine.where() == 0 && mine.is_local() && !mine.is_null(), "a new array is not local to its rank");
    rill::global_ptr<long> p = mine + 40;
    expect(p - mine == 40 && (p - 40) == mine && mine < p && (++p) - mine == 41, "pointer arithmetic is wrong");
    mine.local(100)[99] = 7;
    expect((mine + 99).local()[0] == 7, "local() does not address the array");
    bool threw = false;
    try {
      (void)(mine + (std::ptrdiff_t{1} << 40)).local();
    } catch (const rill::misuse_error& e) {
      threw = std::string(e.what()).find("outside rank 0's registered segment") != std::string::npos;
    }
    expect(threw, "local() of a pointer outside the segment did not say so");
    rill::delete_array(mine);
    for (int r = 1; r < n; ++r) {
      rill::global_ptr<long> remote = array_on(r, 10, true);
      // Shared segments: the local transport's ranks, and MPI processes on one node (the tests'
      // mpirun runs them all here) through a shared-memory window.
      const bool addressable = shared;
      expect(remote.where() == r && remote.is_local() == addressable, "is_local() of another rank's memory is wrong");
      if (addressable) {
        expect(remote.local(10)[3] == pattern(r, 3), "another rank's memory does not read through local()");
      } else {
        bool refused = false;
        try {
          (void)remote.local();
        } catch (const rill::misuse_error&) {
          refused = true;
        }
        expect(refused, "local() of memory this rank cannot address did not throw");
      }
      bool refused_free = false;
      try {
        rill::delete_array(remote);
      } catch (const rill::misuse_error& e) {
        refused_free = std::string(e.what()).find("freed on rank") != std::string::npos;
      }
      expect(refused_free, "freeing another rank's memory here did not throw");
      free_on(remote);
    }
  });
}

TEST_P(global_copy, copies_between_every_pair_of_ranks_in_flight_at_once) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    constexpr std::size_t len = 1000;
    std::vector<rill::global_ptr<long>> src, dst;
    for (int r = 0; r < n; ++r) {
      src.push_back(array_on(r, len, true));
      dst.push_back(array_on(r, len * static_cast<std::size_t>(n), false));
    }
    // Every rank's source to every rank's destination, at slot s; from offset 1, one element less.
    std::vector<rill::future<void>> copies;
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        rill::global_ptr<const long> from = src[static_cast<std::size_t>(s)] + 1;
        copies.push_back(
            rill::async_copy(from, dst[static_cast<std::size_t>(d)] + s * static_cast<long>(len), len - 1));
      }
    for (auto& f : copies) f.wait();
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d)
        expect(holds(dst[static_cast<std::size_t>(d)] + s * static_cast<long>(len), len - 1, s, 1),
               "a copy from rank " + std::to_string(s) + " to rank " + std::to_string(d) + " is wrong");
    for (auto& p : src) free_on(p);
    for (auto& p : dst) free_on(p);
  });
}

TEST_P(global_copy, a_large_copy_travels_in_pieces_and_arrives_whole) {
  both_ways(GetParam(), [](bool) {
    const int last = rill::rank_n() - 1;
    constexpr std::size_t len = (std::size_t{9} << 20) / sizeof(long) + 3;  // 9 MiB and a bit: three pieces
    rill::global_ptr<long> a = array_on(0, len, true);
    rill::global_ptr<long> b = array_on(last, len, false);
    rill::async_copy(a, b, len).wait();
    expect(holds(b, len, 0, 0), "a large put is wrong");
    rill::global_ptr<long> c = array_on(0, len, false);
    rill::async_copy(b, c, len).wait();
    expect(holds(c, len, 0, 0), "a large get is wrong");
    free_on(a);
    free_on(b);
    free_on(c);
  });
}

TEST_P(global_copy, a_copy_waits_for_its_precondition_and_poison_reaches_its_future) {
  both_ways(GetParam(), [](bool) {
    const int last = rill::rank_n() - 1;
    rill::global_ptr<long> a = array_on(last, 64, true);
    rill::global_ptr<long> b = array_on(0, 64, false);
    rill::user_event go = rill::user_event::create();
    rill::future<void> f = rill::async_copy(a, b, 64, go);
    for (int i = 0; i < 20; ++i) rill::yield();
    expect(!f.ready() && b.local(64)[5] == 0, "the copy started before its precondition triggered");
    go.trigger();
    f.wait();
    expect(holds(b, 64, last, 0), "the copy after its precondition is wrong");

    rill::user_event bad = rill::user_event::create();
    rill::future<void> g = rill::async_copy(a, b + 1, 10, bad);
    bad.poison("the input was not produced");
    bool poisoned = false;
    try {
      g.wait();
    } catch (const rill::poisoned_error& e) {
      poisoned = std::string(e.what()).find("the input was not produced") != std::string::npos;
    }
    expect(poisoned, "a poisoned precondition did not poison the copy");
    free_on(a);
    free_on(b);
  });
}

TEST_P(global_copy, finish_waits_for_copies_started_inside_it) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    rill::global_ptr<long> a = array_on(n - 1, 500, true);
    std::vector<rill::global_ptr<long>> dst;
    for (int r = 0; r < n; ++r) dst.push_back(array_on(r, 500, false));
    rill::finish([&] {
      for (auto& d : dst) (void)rill::async_copy(a, d, 500);  // futures dropped: finish covers them
    });
    for (auto& d : dst) {
      expect(holds(d, 500, n - 1, 0), "finish returned before a copy inside it completed");
      free_on(d);
    }
    free_on(a);
  });
}

TEST_P(global_copy, bad_pointers_are_errors_naming_the_cause) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    rill::global_ptr<long> a = array_on(n - 1, 16, true);
    rill::global_ptr<long> b = array_on(0, 16, false);
    const long far = std::ptrdiff_t{1} << 40;
    expect(poisoned_saying(rill::async_copy(a + far, b, 4), "outside rank " + std::to_string(n - 1)),
           "a source outside its segment was not reported");
    expect(poisoned_saying(rill::async_copy(a, b + far, 4), "outside rank 0"),
           "a destination outside its segment was not reported");
    expect(holds(a, 16, n - 1, 0), "a failed copy changed its source");
    bool no_rank = false, null = false;
    try {
      (void)rill::async_copy(rill::global_ptr<long>(n + 3, b.local()), b, 4);
    } catch (const rill::misuse_error& e) {
      no_rank = std::string(e.what()).find("names rank " + std::to_string(n + 3)) != std::string::npos;
    }
    try {
      (void)rill::async_copy(a, rill::global_ptr<long>(), 4);
    } catch (const rill::misuse_error& e) {
      null = std::string(e.what()).find("null pointer") != std::string::npos;
    }
    expect(no_rank, "a copy naming a rank that does not exist was not refused at the call");
    expect(null, "a copy to a null pointer was not refused at the call");
    free_on(a);
    free_on(b);
  });
}

INSTANTIATE_TEST_SUITE_P(setups, global_copy, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
