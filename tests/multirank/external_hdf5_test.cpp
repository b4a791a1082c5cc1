// HDF5 files attached as external instances (rill::hdf5_resource): fields round-trip bit-exact
// through datasets in 1-3 dimensions, the datasets have the instance's shape with its dimensions
// reversed (checked with the HDF5 library, as another program would read them); a copy of a
// subspace writes only its hyperslab; read_write makes a missing file and datasets; and a wrong
// shape, type, missing dataset, missing or non-HDF5 file is refused naming the file and cause.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "file_harness.hpp"
#include "harness.hpp"
#include "rill/copy.hpp"
#include "rill/external.hpp"
#include "rill/instance.hpp"
#include "rill/proc.hpp"

namespace rill_test {
namespace {

class external_hdf5 : public ::testing::TestWithParam<setup> {};

using namespace data;  // NOLINT(google-build-using-namespace): the suite's shared names

constexpr rill::field<std::int64_t> id_field{1};
constexpr rill::field<double> mass{2};
const rill::field_space two_fields{id_field, mass};

rill::hdf5_resource h5(const std::string& path, rill::io_mode mode) {
  return {path, {rill::stored_as(id_field, "ids"), rill::stored_as(mass, "physics/mass")}, mode};
}

double mass_of(std::int64_t code) { return static_cast<double>(code) / 8; }

template <int N>
rill::instance with_codes(int rank, const rill::index_space<N>& space, std::int64_t salt) {
  auto [inst, ready] = rill::instance::create(rill::memory::system(rank), space, two_fields);
  ready.wait();
  rill::rpc(
      rank,
      [](rill::instance i, const rill::index_space<N>& s, std::int64_t sa) {
        rill::accessor<std::int64_t, N> k(i, id_field);
        rill::accessor<double, N> m(i, mass);
        s.for_each_point([&](const rill::point<N>& p) {
          k[p] = code_of(p, sa);
          m[p] = mass_of(code_of(p, sa));
        });
      },
      inst, space, salt)
      .get();
  return inst;
}

// Points of `space` in `inst` whose fields are not of `salt` (of `old` outside `changed`).
template <int N>
long wrong_points(rill::instance inst, const rill::index_space<N>& space, std::int64_t salt,
                  const rill::index_space<N>& changed, std::int64_t old) {
  return rill::rpc(
             inst.owner(),
             [](rill::instance i, const rill::index_space<N>& s, std::int64_t sa, const rill::index_space<N>& c,
                std::int64_t o) {
               rill::accessor<std::int64_t, N> k(i, id_field);
               rill::accessor<double, N> m(i, mass);
               long wrong = 0;
               s.for_each_point([&](const rill::point<N>& p) {
                 const std::int64_t want = code_of(p, c.contains(p) ? sa : o);
                 if (k[p] != want || m[p] != mass_of(want)) ++wrong;
               });
               return wrong;
             },
             inst, space, salt, changed, old)
      .get();
}

rill::instance attached(int rank, const auto& space, const rill::hdf5_resource& r) {
  auto [inst, ready] = rill::attach_instance(rill::memory::external(rank), space, two_fields, r);
  ready.wait();
  return inst;
}

// The dataset as another program sees it: its shape and its values, in the file's order.
struct seen_dataset {
  std::vector<hsize_t> shape;
  std::vector<std::int64_t> values;
};
seen_dataset read_ids(const std::string& path) {
  seen_dataset out;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(file, "ids", H5P_DEFAULT);
  const hid_t space = H5Dget_space(ds);
  out.shape.resize(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, out.shape.data(), nullptr);
  out.values.resize(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data());
  H5Sclose(space);
  H5Dclose(ds);
  H5Fclose(file);
  return out;
}

template <int N>
void round_trip(const scratch_dir& dir, const rill::rect<N>& bounds, const rill::index_space<N>& part) {
  const int last = rill::rank_n() - 1;
  const rill::index_space<N> space(bounds);
  const std::string path = dir / ("grid" + std::to_string(N) + ".h5");
  const rill::instance src = with_codes(0, space, 3);
  const rill::instance out = attached(last, space, h5(path, rill::io_mode::write_discard));
  rill::copy(src, out, {id_field.id, mass.id}).wait();
  out.destroy().wait();

  // As another program sees it: dimensions reversed, the file's order the index space's.
  const seen_dataset seen = read_ids(path);
  std::vector<hsize_t> want_shape;
  for (int d = N - 1; d >= 0; --d) want_shape.push_back(static_cast<hsize_t>(bounds.hi[d] - bounds.lo[d] + 1));
  expect(seen.shape == want_shape, "a dataset of another shape than the instance's, reversed");
  std::size_t at = 0;
  long wrong = 0;
  space.for_each_point([&](const rill::point<N>& p) {
    if (at >= seen.values.size() || seen.values[at++] != code_of(p, 3)) ++wrong;
  });
  expect(wrong == 0, std::to_string(wrong) + " element(s) of the dataset are not in index-space order");

  // Read back on the other rank, then a part rewritten in place: only its hyperslabs change.
  const rill::instance back = [&] {
    auto [inst, ready] = rill::instance::create(rill::memory::system(last), space, two_fields);
    ready.wait();
    return inst;
  }();
  const rill::instance in = attached(0, space, h5(path, rill::io_mode::read_write));
  rill::copy(in, back, {id_field.id, mass.id}).wait();
  expect(wrong_points<N>(back, space, 3, space, 3) == 0, "a round trip through HDF5 left points wrong");
  const rill::instance newer = with_codes(last, space, 4);
  rill::copy(newer, in, {id_field.id, mass.id}, part).wait();
  rill::copy(in, back, {id_field.id, mass.id}).wait();
  expect(wrong_points<N>(back, space, 4, part, 3) == 0, "a copy of a subspace into HDF5 changed other points");
  for (const rill::instance& i : {in, src, back, newer}) i.destroy().wait();
}

TEST_P(external_hdf5, fields_round_trip_through_datasets_in_every_dimension) {
  const scratch_dir dir;
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          round_trip<1>(dir, rill::rect<1>{-3, 60},
                                        rill::index_space<1>::from_points(
                                            std::vector<rill::point<1>>{{-3}, {0}, {1}, {30}, {60}}));
                          const rill::rect<2> grid{{0, 0}, {11, 7}};
                          round_trip<2>(dir, grid, rill::index_space<2>(grid).subtract(rill::rect<2>{{2, 2}, {9, 5}}));
                          round_trip<3>(dir, rill::rect<3>{{0, 0, 0}, {3, 4, 2}},
                                        rill::index_space<3>(rill::rect<3>{{1, 1, 0}, {2, 3, 1}}));
                        }),
            0);
}

TEST_P(external_hdf5, read_write_makes_a_missing_file_and_its_datasets) {
  const scratch_dir dir;
  const std::string path = dir / "new.h5";
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          const rill::index_space<2> space(rill::rect<2>{{0, 0}, {5, 9}});
                          const rill::instance src = with_codes(0, space, 5);
                          const rill::instance file =
                              attached(rill::rank_n() - 1, space, h5(path, rill::io_mode::read_write));
                          rill::copy(src, file, {id_field.id, mass.id}).wait();
                          file.destroy().wait();
                          src.destroy().wait();
                          const seen_dataset seen = read_ids(path);
                          expect(seen.shape == std::vector<hsize_t>{10, 6} && seen.values.size() == 60 &&
                                     seen.values[7] == code_of(rill::point<2>{1, 1}, 5),
                                 "read_write did not make the file's datasets");
                        }),
            0);
}

TEST_P(external_hdf5, a_wrong_file_is_refused_naming_it_and_the_cause) {
  const scratch_dir dir;
  const std::string good = dir / "good.h5", garbage = dir / "garbage.h5";
  write_file(garbage, 4096, 'g');
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            const int last = rill::rank_n() - 1;
            const rill::index_space<2> space(rill::rect<2>{{0, 0}, {5, 9}});
            attached(0, space, h5(good, rill::io_mode::write_discard)).destroy().wait();
            const auto error = [&](const auto& shape, const rill::hdf5_resource& r) {
              return poison_of(rill::attach_instance(rill::memory::external(last), shape, two_fields, r).ready);
            };
            const std::string shape = error(rill::rect<2>{{0, 0}, {9, 5}}, h5(good, rill::io_mode::read_only));
            expect(says(shape, "good.h5") && says(shape, "shape (10, 6)") && says(shape, "(6, 10)"),
                   "a dataset of another shape: " + shape);
            rill::hdf5_resource wrong_type = h5(good, rill::io_mode::read_only);
            wrong_type.datasets[id_field.id].type = rill::element_type::f64;
            const std::string type = error(space, wrong_type);
            expect(says(type, "64-bit integers") && says(type, "64-bit floats"), "a dataset of another type: " + type);
            rill::hdf5_resource missing_dataset = h5(good, rill::io_mode::read_only);
            missing_dataset.datasets[mass.id].name = "nowhere";
            const std::string none = error(space, missing_dataset);
            expect(says(none, "no dataset 'nowhere'"), "a missing dataset: " + none);
            rill::hdf5_resource unnamed = h5(good, rill::io_mode::read_only);
            unnamed.datasets.erase(mass.id);
            const std::string unnamed_field = error(space, unnamed);
            expect(says(unnamed_field, "no dataset named for field 2"), "a field with no dataset: " + unnamed_field);
            const std::string missing = error(space, h5(dir / "missing.h5", rill::io_mode::read_only));
            expect(says(missing, "missing.h5") && says(missing, "No such file"), "a missing file: " + missing);
            const std::string not_hdf5 = error(space, h5(garbage, rill::io_mode::read_only));
            expect(says(not_hdf5, "garbage.h5") && says(not_hdf5, "as HDF5"), "a file that is not HDF5: " + not_hdf5);
          }),
      0);
}

INSTANTIATE_TEST_SUITE_P(setups, external_hdf5, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
