// The accessor's bounds check, which builds without NDEBUG compile in (rill/instance.hpp). Every
// preset of the suite defines NDEBUG, so this executable alone is built with it undefined
// (tests/unit/CMakeLists.txt): a point outside the instance is a misuse_error naming the point
// and the bounds, in every dimension, and points inside stay plain loads and stores.
#ifdef NDEBUG
#error "accessor_bounds_test checks the debug build's bounds check: build it without NDEBUG"
#endif

#include <gtest/gtest.h>

#include <string>

#include "one_rank.hpp"
#include "rill/rill.hpp"

namespace {

constexpr rill::field_id value = 7;

// The message of the misuse_error `fn` throws, or "" when it throws none.
template <class F>
std::string misuse_of(F&& fn) {
  try {
    fn();
  } catch (const rill::misuse_error& e) {
    return e.what();
  }
  return "";
}

TEST(AccessorBounds, PointsOutsideTheInstanceAreErrorsNamingPointAndBounds) {
  EXPECT_EQ(
      rill_test::run_on_one_rank(
          1,
          [] {
            const rill::field_space fields = rill::field_space{}.add(value, sizeof(double));
            auto [line, line_ready] = rill::instance::create(rill::memory::system(0), rill::rect<1>{10, 19}, fields);
            auto [grid, grid_ready] =
                rill::instance::create(rill::memory::system(0), rill::rect<3>{{0, 0, 0}, {3, 4, 5}}, fields);
            rill::merge(line_ready, grid_ready).wait();

            const rill::accessor<double, 1> a(line, value);
            a[{10}] = 1.0;
            a[{19}] = 2.0;
            EXPECT_EQ(a[{10}] + a[{19}], 3.0);
            EXPECT_EQ(misuse_of([&] { a[{20}] = 0; }),
                      "rill::accessor: point (20) is outside the instance's bounds (10) .. (19)");
            EXPECT_EQ(misuse_of([&] { (void)a.ptr({9}); }),
                      "rill::accessor: point (9) is outside the instance's bounds (10) .. (19)");

            const rill::accessor<double, 3> g(grid, value);
            const rill::point<3> corner{3, 4, 5}, past_y{0, 5, 0}, before_z{0, 0, -1};
            g[corner] = 4.0;
            EXPECT_EQ(g[corner], 4.0);
            EXPECT_EQ(misuse_of([&] { (void)g[past_y]; }),
                      "rill::accessor: point (0, 5, 0) is outside the instance's bounds (0, 0, 0) .. (3, 4, 5)");
            EXPECT_EQ(misuse_of([&] { (void)g[before_z]; }),
                      "rill::accessor: point (0, 0, -1) is outside the instance's bounds (0, 0, 0) .. (3, 4, 5)");
            EXPECT_EQ(a[{10}], 1.0) << "nothing was written by the rejected stores";
            rill::merge(line.destroy(), grid.destroy()).wait();
            return 0;
          }),
      0);
}

}  // namespace
