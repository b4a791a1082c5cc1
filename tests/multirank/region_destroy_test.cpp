// Destroying a region tree (rill::region::destroy): its instances, on every rank, are destroyed
// once the launches made on it have ended (failed ones too), not before; later launches on it are
// refused with an error naming it; bad calls (twice, a subregion, inside a launched task) are
// refused; and the launches on other trees go on as before.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "harness.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"

namespace rill_test {
namespace {

class region_destroy : public ::testing::TestWithParam<setup> {};

using data::misuse_of;
using data::poison_of;
using data::says;

constexpr rill::field<std::uint64_t> value{1};
constexpr rill::coord_t points = 64;

// A tree written by an index launch over its quarters (points spread over the ranks), each point
// putting the instance it wrote in into `made`.
struct written_tree {
  rill::region root;
  rill::partition quarters;
  std::vector<rill::future<rill::instance>> made;

  written_tree() {
    root = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value});
    quarters = rill::partition_equal(root, 4);
    std::vector<rill::promise<rill::instance>> put(4);
    for (auto& p : put) made.push_back(p.get_future());
    rill::index_launch(
        [](const rill::physical_regions& rs, std::size_t c, std::vector<rill::promise<rill::instance>> out) {
          const auto v = rs[0].write<std::uint64_t, 1>(value);
          const rill::rect<1> b = rs[0].reg.space<1>().bounds();
          for (rill::coord_t x = b.lo[0]; x <= b.hi[0]; ++x) v[{x}] = static_cast<std::uint64_t>(x) * 3;
          out[c].put(rs[0].inst);
        },
        quarters, {rill::req(quarters, {value.id}, rill::privilege::write_discard)}, put)
        .wait();
  }

  // Each instance the points wrote in has been destroyed (destroying it again says it is gone).
  void expect_instances_gone() {
    for (auto& f : made) {
      const std::string again = poison_of(f.get().destroy());
      expect(says(again, "does not exist"), "an instance of a destroyed tree is still there: " + again);
    }
  }
};

std::uint64_t sum_of(rill::region r) {
  rill::promise<std::uint64_t> sum;
  rill::launch(
      [](const rill::physical_regions& rs, rill::promise<std::uint64_t> out) {
        const auto v = rs[0].read<std::uint64_t, 1>(value);
        const rill::rect<1> b = rs[0].reg.space<1>().bounds();
        std::uint64_t s = 0;
        for (rill::coord_t x = b.lo[0]; x <= b.hi[0]; ++x) s += v[{x}];
        out.put(s);
      },
      {rill::req(r, {value.id}, rill::privilege::read_only)}, sum);
  return sum.get_future().get();
}

constexpr std::uint64_t written_sum = 3 * points * (points - 1) / 2;

TEST_P(region_destroy, instances_go_once_the_launches_on_the_tree_have_ended) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          written_tree t;
                          // A read held back by a gate: the tree is destroyed while it waits.
                          rill::user_event gate = rill::user_event::create();
                          rill::promise<std::uint64_t> held;
                          const rill::event read = rill::launch(
                              rill::after(gate),
                              [](const rill::physical_regions& rs, rill::promise<std::uint64_t> out) {
                                const auto v = rs[0].read<std::uint64_t, 1>(value);
                                std::uint64_t s = 0;
                                for (rill::coord_t x = 0; x < points; ++x) s += v[{x}];
                                out.put(s);
                              },
                              {rill::req(t.root, {value.id}, rill::privilege::read_only)}, held);
                          const rill::event gone = t.root.destroy();
                          expect(!gone.has_triggered(), "a tree was destroyed before a launch on it ran");
                          gate.trigger();
                          const std::string failed = poison_of(read);
                          expect(failed == "no error", "the held read failed: " + failed);
                          expect(held.get_future().get() == written_sum, "the held read saw other data");
                          gone.wait();
                          t.expect_instances_gone();
                        }),
            0);
}

TEST_P(region_destroy, a_failed_launch_does_not_keep_the_tree) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          written_tree t;
                          const rill::event failed = rill::launch(
                              [](const rill::physical_regions&) { throw std::runtime_error("step failed"); },
                              {rill::req(t.root, {value.id}, rill::privilege::read_write)});
                          const rill::event gone = t.root.destroy(rill::event::none());
                          expect(says(poison_of(failed), "step failed"), "the failing launch did not fail");
                          expect(poison_of(gone) == "no error", "destroying a tree with a failed launch failed");
                          t.expect_instances_gone();
                        }),
            0);
}

TEST_P(region_destroy, launches_on_a_destroyed_tree_are_refused) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          written_tree t;
                          t.root.destroy().wait();
                          const auto refused = [](const std::string& why) {
                            return says(why, "destroyed") && says(why, "tree");
                          };
                          const std::string on_root = misuse_of([&] { (void)sum_of(t.root); });
                          expect(refused(on_root), "a launch on a destroyed root said: " + on_root);
                          const std::string on_sub = misuse_of([&] { (void)sum_of(t.quarters.subregion(2)); });
                          expect(refused(on_sub), "a launch on a destroyed subregion said: " + on_sub);
                          const std::string index = misuse_of([&] {
                            rill::index_launch([](const rill::physical_regions&, std::size_t) {}, t.quarters,
                                               {rill::req(t.quarters, {value.id}, rill::privilege::read_only)});
                          });
                          expect(refused(index), "an index launch on a destroyed tree said: " + index);
                          const std::string twice = misuse_of([&] { (void)t.root.destroy(); });
                          expect(says(twice, "destroyed already"), "destroying a tree twice said: " + twice);
                        }),
            0);
}

TEST_P(region_destroy, only_a_root_outside_launched_tasks_is_destroyed) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          written_tree t;
                          const std::string sub = misuse_of([&] { (void)t.quarters.subregion(1).destroy(); });
                          expect(says(sub, "subregion"), "destroying a subregion said: " + sub);
                          const std::string empty = misuse_of([] { (void)rill::region().destroy(); });
                          expect(says(empty, "empty"), "destroying an empty handle said: " + empty);
                          const rill::event inside =
                              rill::launch([](const rill::physical_regions& rs) { (void)rs[0].reg.destroy(); },
                                           {rill::req(t.root, {value.id}, rill::privilege::read_only)});
                          const std::string in_task = poison_of(inside);
                          expect(says(in_task, "launched task"), "destroying in a launched task said: " + in_task);
                          // Nothing of it was destroyed meanwhile.
                          expect(sum_of(t.root) == written_sum, "a refused destroy changed the tree");
                        }),
            0);
}

TEST_P(region_destroy, other_trees_go_on_after_one_is_destroyed) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          written_tree kept, dropped;
                          // Repeated launches on both (remembered analyses of the two trees).
                          for (int k = 0; k < 3; ++k) {
                            expect(sum_of(kept.root) == written_sum, "the kept tree's data changed");
                            expect(sum_of(dropped.root) == written_sum, "the dropped tree's data changed");
                          }
                          dropped.root.destroy().wait();
                          for (int k = 0; k < 3; ++k)
                            expect(sum_of(kept.root) == written_sum, "the kept tree lost its data");
                          // A tree never launched on is destroyed at once.
                          const rill::region idle = rill::region::create(rill::rect<1>{0, 7}, rill::field_space{value});
                          idle.destroy().wait();
                          dropped.expect_instances_gone();
                        }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, region_destroy, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
