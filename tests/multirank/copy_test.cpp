// Copies and fills of instances (rill/copy.hpp): between memories of every kind on the same and
// other ranks, across layouts, in 1-3 dimensions over dense and sparse subspaces, in pieces,
// after their preconditions, and refused whole (nothing written) when fields or points do not match.
// Each test runs twice: with ranks that share a process or node copying straight into each other's
// instances (--rill:shared-segments=on), and with every copy between ranks in messages (off).
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "global_harness.hpp"
#include "harness.hpp"
#include "rill/copy.hpp"
#include "rill/instance.hpp"
#include "rill/proc.hpp"

namespace rill_test {
namespace {

class copies : public ::testing::TestWithParam<setup> {};

using namespace data;  // NOLINT(google-build-using-namespace): the suite's shared names

constexpr std::int64_t unset = -7;  // what a fill leaves in key before a copy

rill::instance made(rill::memory m, const auto& space, const rill::layout& l) {
  auto [inst, ready] = rill::instance::create(m, space, fields, l);
  ready.wait();
  return inst;
}

// Fills key with `unset`, weight with 0.5 and flag with 9 everywhere.
void reset(rill::instance inst) {
  rill::fill(inst, key, unset).wait();
  rill::fill(inst, weight, 0.5).wait();
  rill::fill(inst, flag, std::uint8_t{9}).wait();
}

// On the instance's rank: key and weight of every point of `space` from code_of(p, salt).
template <int N>
void write_codes(rill::instance inst, const rill::index_space<N>& space, std::int64_t salt) {
  rill::rpc(
      inst.owner(),
      [](rill::instance i, const rill::index_space<N>& s, std::int64_t sa) {
        rill::accessor<std::int64_t, N> k(i, key);
        rill::accessor<double, N> w(i, weight);
        s.for_each_point([&](const rill::point<N>& p) {
          k[p] = code_of(p, sa);
          w[p] = static_cast<double>(code_of(p, sa)) / 4;
        });
      },
      inst, space, salt)
      .get();
}

// On the instance's rank: how many points of `all` differ from the expectation: codes (salt) in
// `copied`, `unset` and 0.5 elsewhere, flag 9 everywhere.
template <int N>
long wrong_points(rill::instance inst, const rill::index_space<N>& all, const rill::index_space<N>& copied,
                  std::int64_t salt) {
  return rill::rpc(
             inst.owner(),
             [](rill::instance i, const rill::index_space<N>& a, const rill::index_space<N>& c, std::int64_t sa) {
               rill::accessor<std::int64_t, N> k(i, key);
               rill::accessor<double, N> w(i, weight);
               rill::accessor<std::uint8_t, N> f(i, flag);
               long wrong = 0;
               a.for_each_point([&](const rill::point<N>& p) {
                 const bool in = c.contains(p);
                 const std::int64_t want = in ? code_of(p, sa) : unset;
                 const double want_w = in ? static_cast<double>(code_of(p, sa)) / 4 : 0.5;
                 if (k[p] != want || w[p] != want_w || f[p] != 9) ++wrong;
               });
               return wrong;
             },
             inst, all, copied, salt)
      .get();
}

template <int N>
void copy_every_way(const rill::index_space<N>& space, const rill::index_space<N>& part) {
  const int last = rill::rank_n() - 1;
  const std::vector<std::pair<int, int>> ranks{{0, 0}, {0, last}, {last, 0}};
  const std::vector<std::pair<bool, bool>> kinds{{false, true}, {true, false}, {false, false}, {true, true}};
  std::vector<int> reversed;
  for (int d = N - 1; d >= 0; --d) reversed.push_back(d);
  const std::vector<std::pair<rill::layout, rill::layout>> layouts{
      {rill::layout::soa(), rill::layout::aos()},
      {rill::layout::aos(), rill::layout::soa()},
      {rill::layout::grouped({{weight.id, key.id}}).order(reversed), rill::layout::soa()}};
  std::int64_t salt = 0;
  for (const auto& [from, to] : ranks)
    for (const auto& [src_registered, dst_registered] : kinds)
      for (const auto& [src_layout, dst_layout] : layouts) {
        ++salt;
        const auto where = [](int r, bool registered) {
          return registered ? rill::memory::registered(r) : rill::memory::system(r);
        };
        const rill::instance src = made(where(from, src_registered), space, src_layout);
        const rill::instance dst = made(where(to, dst_registered), space, dst_layout);
        reset(dst);
        write_codes<N>(src, space, salt);
        rill::copy(src, dst, {key, weight}, part).wait();
        const long wrong = wrong_points<N>(dst, space, part, salt);
        expect(wrong == 0, std::to_string(wrong) + " point(s) wrong after a copy from rank " + std::to_string(from) +
                               " to rank " + std::to_string(to));
        // The whole space, in one call without a subspace.
        write_codes<N>(src, space, salt + 1000);
        rill::copy(src, dst, {key, weight}).wait();
        expect(wrong_points<N>(dst, space, space, salt + 1000) == 0, "a whole copy left points wrong");
        src.destroy().wait();
        dst.destroy().wait();
      }
}

TEST_P(copies, between_every_memory_layout_and_rank) {
  const auto every_way = [](bool) {
    copy_every_way<1>(rill::rect<1>{-3, 60}, rill::index_space<1>::from_points(
                                                 std::vector<rill::point<1>>{{-3}, {0}, {1}, {2}, {30}, {59}, {60}}));
    const rill::index_space<2> grid(rill::rect<2>{{0, 0}, {11, 8}});
    copy_every_way<2>(grid, grid.subtract(rill::rect<2>{{2, 2}, {9, 6}}));
    std::vector<rill::point<3>> pts;
    for (int i = 0; i < 40; ++i) pts.push_back({i % 4, (i * 3) % 5, (i * 7) % 3});
    copy_every_way<3>(rill::index_space<3>(rill::rect<3>{{0, 0, 0}, {3, 4, 2}}),
                      rill::index_space<3>::from_points(pts));
  };
  // Moved by the workers, and by a data-movement channel.
  both_ways(GetParam(), every_way, {"--rill:channels=0"});
  both_ways(GetParam(), every_way, {"--rill:channels=1"});
}

// A task that keeps its worker, never yielding, until `copied` has triggered (or a minute has
// passed, so that a copy that cannot move fails the test instead of hanging it).
void keep_the_worker_until(rill::event copied) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!copied.has_triggered() && std::chrono::steady_clock::now() < give_up) {
  }
}

// A task that never yields issues a copy between two instances of its rank and waits for it
// without yielding, while the rank's other workers do the same: only a data-movement channel can
// move the data (with --rill:channels=0 nothing does, and the task gives up).
TEST_P(copies, move_while_every_worker_of_their_rank_runs_a_task_that_does_not_yield) {
  both_ways(GetParam(),
            [](bool) {
              const int last = rill::rank_n() - 1;
              const rill::index_space<1> line(rill::rect<1>{0, 199'999});  // 3.2 MB
              const rill::instance src = made(rill::memory::system(last), line, rill::layout::soa());
              const rill::instance dst = made(rill::memory::registered(last), line, rill::layout::aos());
              reset(dst);
              write_codes<1>(src, line, 5);
              const bool moved = rill::rpc(
                                     last,
                                     [](rill::instance s, rill::instance d, int workers) {
                                       const rill::event copied = rill::copy(s, d, {key, weight});
                                       for (int w = 1; w < workers; ++w)
                                         rill::proc::here().spawn(keep_the_worker_until, copied);
                                       keep_the_worker_until(copied);
                                       return copied.has_triggered();
                                     },
                                     src, dst, GetParam().workers)
                                     .get();
              expect(moved, "a copy did not move while the workers ran tasks");
              expect(wrong_points<1>(dst, line, line, 5) == 0, "a copy moved by a channel left points wrong");
              src.destroy().wait();
              dst.destroy().wait();
            },
            {"--rill:channels=1"});
}

TEST_P(copies, large_copies_travel_in_pieces) {
  both_ways(GetParam(), [](bool) {
    // 16 bytes a point over 400 x 300 points: 1.9 MB, two pieces or more.
    const rill::index_space<2> big(rill::rect<2>{{0, 0}, {399, 299}});
    const int last = rill::rank_n() - 1;
    const rill::instance src = made(rill::memory::system(0), big, rill::layout::aos());
    const rill::instance dst = made(rill::memory::registered(last), big, rill::layout::soa());
    reset(dst);
    write_codes<2>(src, big, 5);
    rill::copy(src, dst, {key, weight}).wait();
    expect(wrong_points<2>(dst, big, big, 5) == 0, "a large copy left points wrong");
    src.destroy().wait();
    dst.destroy().wait();
  });
}

// Into a node neighbour's system memory under mpirun, pieces are staged in the source rank's
// segment a window at a time (src/data/copy.cpp): 10.6 MB is more than one window. With the
// segment full, pieces that find no room travel as messages instead.
TEST_P(copies, copies_into_system_memory_of_another_rank_outgrow_the_staging_window) {
  both_ways(GetParam(), [](bool) {
    const int last = rill::rank_n() - 1;
    const rill::index_space<2> big(rill::rect<2>{{0, 0}, {1023, 639}});  // 17 bytes a point
    const rill::instance src = made(rill::memory::system(0), big, rill::layout::aos());
    const rill::instance dst = made(rill::memory::system(last), big, rill::layout::soa());
    reset(dst);
    write_codes<2>(src, big, 11);
    rill::copy(src, dst, {key, weight}).wait();
    expect(wrong_points<2>(dst, big, big, 11) == 0, "a copy larger than the staging window left points wrong");

    // Rank 0's segment taken by instances of 1 MiB, then of 32 KiB, until no more fits.
    const rill::field_space one_word = rill::field_space{}.add(99, 8);
    std::vector<rill::instance> filler;
    for (const rill::coord_t words : {rill::coord_t{1} << 17, rill::coord_t{1} << 12})
      for (;;) {
        auto [inst, ready] = rill::instance::create(rill::memory::registered(0), rill::rect<1>{0, words - 1}, one_word);
        try {
          ready.wait();
        } catch (const rill::poisoned_error&) {
          break;
        }
        filler.push_back(inst);
      }
    expect(!filler.empty(), "no instance fitted in rank 0's segment");
    write_codes<2>(src, big, 12);
    rill::copy(src, dst, {key, weight}).wait();
    expect(wrong_points<2>(dst, big, big, 12) == 0, "a copy with no room to stage left points wrong");
    for (rill::instance i : filler) i.destroy().wait();
    src.destroy().wait();
    dst.destroy().wait();
  });
}

TEST_P(copies, the_source_is_read_after_the_precondition_and_chains_hold) {
  both_ways(GetParam(), [](bool) {
    const int last = rill::rank_n() - 1;
    const rill::index_space<1> line(rill::rect<1>{0, 999});
    const rill::instance a = made(rill::memory::system(last), line, rill::layout::soa());
    const rill::instance b = made(rill::memory::system(0), line, rill::layout::aos());
    const rill::instance c = made(rill::memory::registered(last), line, rill::layout::soa());
    reset(b);
    reset(c);
    write_codes<1>(a, line, 1);
    rill::user_event go = rill::user_event::create();
    const rill::event ab = rill::copy(a, b, {key, weight}, go);
    const rill::event bc = rill::copy(b, c, {key, weight}, ab);
    // Written after the copies were issued, before their precondition: copied.
    write_codes<1>(a, line, 2);
    go.trigger();
    bc.wait();
    expect(wrong_points<1>(c, line, line, 2) == 0, "a chain of copies did not carry the values");
    for (rill::instance i : {a, b, c}) i.destroy().wait();
  });
}

TEST_P(copies, mismatches_are_refused_and_nothing_is_written) {
  both_ways(GetParam(), [](bool) {
    const int last = rill::rank_n() - 1;
    const rill::index_space<2> grid(rill::rect<2>{{0, 0}, {9, 9}});
    const rill::instance src = made(rill::memory::system(0), grid, rill::layout::soa());
    const rill::instance dst = made(rill::memory::system(last), grid, rill::layout::aos());
    // Field 2 holds 4 bytes in this one.
    const rill::field_space narrow{key, rill::field<float>{2}, flag};
    auto [other, ready] = rill::instance::create(rill::memory::system(last), grid, narrow);
    ready.wait();
    write_codes<2>(src, grid, 3);
    reset(dst);
    const auto poison_of = [](rill::event e) {
      try {
        e.wait();
        return std::string("no error");
      } catch (const rill::poisoned_error& err) {
        return std::string(err.what());
      }
    };
    const std::string sizes = poison_of(rill::copy(src, other, {key, weight}));
    expect(sizes.find("field 2 has 8 bytes in the source and 4 in the destination") != std::string::npos,
           "a size mismatch said: " + sizes);
    const std::string missing = poison_of(rill::copy(src, dst, {key, 7}));
    expect(missing.find("has no field 7") != std::string::npos, "a missing field said: " + missing);
    const std::string outside = poison_of(rill::copy(src, dst, {key, weight}, rill::rect<2>{{5, 5}, {10, 10}}));
    expect(outside.find("11 point(s) to copy are not in the index space of the source") != std::string::npos,
           "points outside said: " + outside);
    rill::user_event failed = rill::user_event::create();
    failed.poison("upstream broke");
    const std::string upstream = poison_of(rill::copy(src, dst, {key, weight}, failed));
    expect(upstream.find("upstream broke") != std::string::npos, "a poisoned precondition said: " + upstream);
    expect(wrong_points<2>(dst, grid, rill::index_space<2>(), 0) == 0, "a refused copy wrote into its destination");
    const std::string fill_size = poison_of(rill::fill(other, rill::field<double>{2}, 1.0));
    expect(fill_size.find("has 4 bytes, the value 8") != std::string::npos,
           "a fill of the wrong size said: " + fill_size);
    for (rill::instance i : {src, dst, other}) i.destroy().wait();
  });
}

TEST_P(copies, fills_cover_exactly_their_subspace) {
  both_ways(GetParam(), [](bool) {
    const int last = rill::rank_n() - 1;
    const rill::index_space<3> box(rill::rect<3>{{0, 0, 0}, {5, 4, 3}});
    const rill::index_space<3> part = box.subtract(rill::rect<3>{{1, 1, 1}, {4, 3, 2}});
    const rill::instance inst = made(rill::memory::registered(last), box, rill::layout::aos());
    reset(inst);
    rill::fill(inst, key, std::int64_t{42}, part).wait();
    const long wrong = rill::rpc(
                           last,
                           [](rill::instance i, const rill::index_space<3>& all, const rill::index_space<3>& p) {
                             rill::accessor<std::int64_t, 3> k(i, key);
                             long bad = 0;
                             all.for_each_point([&](const rill::point<3>& q) {
                               if (k[q] != (p.contains(q) ? 42 : unset)) ++bad;
                             });
                             return bad;
                           },
                           inst, box, part)
                           .get();
    expect(wrong == 0, std::to_string(wrong) + " point(s) wrong after a fill");
    inst.destroy().wait();
  });
}

INSTANTIATE_TEST_SUITE_P(setups, copies, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
