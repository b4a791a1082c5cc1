// Physical instances (rill/instance.hpp): deferred creation in system and registered memory of
// every rank, accessors over every layout in 1-3 dimensions, out of memory, destroyed instances,
// accessors on the wrong rank and layouts that do not fit.
#include <cstdint>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "harness.hpp"
#include "rill/instance.hpp"

namespace rill_test {
namespace {

class instances : public ::testing::TestWithParam<setup> {};

using namespace data;  // NOLINT(google-build-using-namespace): the suite's shared names

// On the instance's rank: what building an accessor of T in N dimensions for field f threw.
template <class T, int N>
std::string accessor_misuse(rill::instance inst, rill::field_id f) {
  return rill::rpc(
             inst.owner(),
             [](rill::instance i, rill::field_id id) { return misuse_of([&] { (void)rill::accessor<T, N>(i, id); }); },
             inst, f)
      .get();
}

// On the instance's rank: writes every field of every point, then reads them all back; returns
// the number of points whose fields read back wrong (so fields overlapping would show).
template <int N>
long write_and_check(rill::instance inst, const rill::index_space<N>& space) {
  rill::accessor<std::int64_t, N> k(inst, key);
  rill::accessor<double, N> w(inst, weight);
  rill::accessor<std::uint8_t, N> f(inst, flag);
  space.for_each_point([&](const rill::point<N>& p) {
    k[p] = code_of(p);
    w[p] = static_cast<double>(code_of(p)) * 0.5;
    f[p] = static_cast<std::uint8_t>(code_of(p) & 0xff);
  });
  long wrong = 0;
  space.for_each_point([&](const rill::point<N>& p) {
    const std::int64_t c = code_of(p);
    if (k[p] != c || w[p] != static_cast<double>(c) * 0.5 || f[p] != static_cast<std::uint8_t>(c & 0xff)) ++wrong;
  });
  return wrong;
}

// Accessors run in tasks spawned after the instance's ready event.
template <int N>
void check_layouts(const rill::index_space<N>& space) {
  const int n = rill::rank_n();
  std::vector<rill::layout> layouts{rill::layout::soa(), rill::layout::aos(),
                                    rill::layout::grouped({{weight.id, flag.id}}),
                                    rill::layout::grouped({{flag.id, key.id}, {weight.id}})};
  if (N >= 2) {
    std::vector<int> reversed;
    for (int d = N - 1; d >= 0; --d) reversed.push_back(d);
    layouts.push_back(rill::layout::soa().order(reversed));
    layouts.push_back(rill::layout::aos().order(reversed));
  }
  for (const rill::layout& l : layouts) {
    for (int r = 0; r < n; ++r) {
      for (rill::memory m : {rill::memory::system(r), rill::memory::registered(r)}) {
        auto [inst, ready] = rill::instance::create(m, space, fields, l);
        rill::promise<long> wrong;
        rill::proc(r).spawn(
            rill::after(ready),
            [](rill::instance i, const rill::index_space<N>& s, rill::promise<long> out) {
              try {
                out.put(write_and_check<N>(i, s));
              } catch (const std::exception& e) {
                out.poison(e.what());
              }
            },
            inst, space, wrong);
        expect(wrong.get_future().get() == 0, "points of an instance read back wrong");
        inst.destroy().wait();
      }
    }
  }
}

TEST_P(instances, every_layout_holds_every_field_of_every_point) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    check_layouts<1>(rill::rect<1>{-5, 40});
                    check_layouts<2>(
                        rill::index_space<2>(rill::rect<2>{{0, 0}, {9, 6}}).subtract(rill::rect<2>{{2, 2}, {7, 4}}));
                    std::vector<rill::point<3>> pts;
                    for (int i = 0; i < 50; ++i) pts.push_back({i % 5, (i * 7) % 4, i % 3 - 1});
                    check_layouts<3>(rill::index_space<3>::from_points(pts));
                  }),
      0);
}

TEST_P(instances, creation_waits_for_its_precondition) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int last = rill::rank_n() - 1;
                          rill::user_event go = rill::user_event::create();
                          auto [inst, ready] = rill::instance::create(rill::memory::system(last), rill::rect<1>{0, 9},
                                                                      fields, rill::layout::soa(), go);
                          // Until go triggers, the instance does not exist on its rank.
                          const std::string early = accessor_misuse<double, 1>(inst, weight);
                          expect(says(early, "not made yet"), "before its precondition, an accessor said: " + early);
                          go.trigger();
                          ready.wait();
                          expect(accessor_misuse<double, 1>(inst, weight) == "no error", "no accessor once ready");
                          inst.destroy().wait();
                        }),
            0);
}

TEST_P(instances, a_memory_without_room_poisons_the_ready_event) {
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [] {
            const int last = rill::rank_n() - 1;
            // 2^40 points of 17 bytes: more than any memory of these machines.
            const rill::rect<2> huge{{0, 0}, {(1 << 20) - 1, (1 << 20) - 1}};
            for (rill::memory m : {rill::memory::system(last), rill::memory::registered(last)}) {
              auto [inst, ready] = rill::instance::create(m, huge, fields);
              const std::string why = poison_of(ready);
              // The capacity named is the one the machine states for that memory.
              const std::string capacity = "capacity " + std::to_string(rill::machine::get().capacity(m)) + " bytes";
              expect(says(why, capacity) && says(why, "rank " + std::to_string(last)),
                     "no room was reported as: " + why);
              // Nothing was made, so there is nothing to destroy.
              const std::string again = poison_of(inst.destroy());
              expect(says(again, "does not exist"), "destroying what was never made said: " + again);
            }
            // The memory is still usable afterwards.
            auto [small, ok] = rill::instance::create(rill::memory::registered(last), rill::rect<1>{0, 99}, fields);
            ok.wait();
            small.destroy().wait();
          }),
      0);
}

TEST_P(instances, a_destroyed_instance_is_named_when_used) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int last = rill::rank_n() - 1;
                          auto [inst, ready] =
                              rill::instance::create(rill::memory::system(last), rill::rect<2>{{0, 0}, {3, 3}}, fields);
                          inst.destroy(ready).wait();
                          const std::string why = accessor_misuse<std::int64_t, 2>(inst, key);
                          expect(says(why, "does not exist") && says(why, "destroyed"),
                                 "using a destroyed instance said: " + why);
                          const std::string twice = poison_of(inst.destroy());
                          expect(says(twice, "does not exist"), "destroying an instance twice said: " + twice);
                        }),
            0);
}

TEST_P(instances, accessors_check_rank_dimensions_and_field) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int last = rill::rank_n() - 1;
                          auto [inst, ready] =
                              rill::instance::create(rill::memory::system(last), rill::rect<2>{{0, 0}, {3, 3}}, fields);
                          ready.wait();
                          if (last != 0) {
                            const std::string elsewhere =
                                misuse_of([&] { (void)rill::accessor<double, 2>(inst, weight); });
                            expect(says(elsewhere, "lives in system memory of rank " + std::to_string(last)),
                                   "an accessor on another rank said: " + elsewhere);
                          }
                          const std::string dims = accessor_misuse<double, 3>(inst, weight);
                          const std::string field = accessor_misuse<double, 2>(inst, 9);
                          const std::string size = accessor_misuse<float, 2>(inst, weight);
                          expect(says(dims, "has 2 dimension(s), the accessor 3"), dims);
                          expect(says(field, "has no field 9"), field);
                          expect(says(size, "has 8 bytes, the accessor's type 4"), size);
                          inst.destroy().wait();
                        }),
            0);
}

TEST_P(instances, layouts_that_do_not_fit_are_refused_at_once) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    const auto refusal = [](const rill::layout& l) {
                      return misuse_of([&] {
                        (void)rill::instance::create(rill::memory::system(0), rill::rect<2>{{0, 0}, {3, 3}}, fields, l);
                      });
                    };
                    expect(says(refusal(rill::layout::grouped({{key.id, 7}})), "names field 7"), "unknown field");
                    expect(says(refusal(rill::layout::grouped({{key.id}, {key.id}})), "in two groups"), "twice");
                    expect(says(refusal(rill::layout::soa().order({0, 0})), "is not an order"), "bad order");
                    expect(says(refusal(rill::layout::soa().order({0, 1, 2})), "is not an order"), "3 of 2");
                    const std::string nowhere = misuse_of([] {
                      (void)rill::instance::create(rill::memory::system(rill::rank_n()), rill::rect<1>{0, 1}, fields);
                    });
                    expect(says(nowhere, "no such memory"), "a memory of no rank: " + nowhere);
                  }),
      0);
}

INSTANTIATE_TEST_SUITE_P(setups, instances, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
