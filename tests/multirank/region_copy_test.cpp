// Copies between regions (rill/region_copy.hpp): fields paired in order, point by point over a
// partition on random ranks, ordered with the launches around them (a write of the source after
// the copy does not reach the destination; a launch after it sees the copy); into a file attached
// and not acquired, one write of the resource straight from the source's instance (no instance
// made, no copy in memory); reduction copies, folded into the destination as a reducing task's
// values are; in a launched task, copies between its regions, in order with its
// other sub-launches, their writes the task's when it ends; bad copies refused naming the cause.
#include <cstring>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "file_harness.hpp"
#include "harness.hpp"
#include "launch_harness.hpp"
#include "rill/attach.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"
#include "rill/region_copy.hpp"

namespace rill_test {
namespace {

class region_copy : public ::testing::TestWithParam<setup> {};

using data::misuse_of;
using data::poison_of;
using data::says;

constexpr rill::field<double> value{1}, other{2};
constexpr rill::field<float> narrow{3};
constexpr rill::field<double> saved{4};
constexpr rill::coord_t points = 4096;
constexpr std::size_t pieces = 4;

// Sets field f of every point of the task's region to p * scale + shift.
void set_values(const rill::physical_regions& rs, rill::field_id f, double scale, double shift) {
  const auto v = rs[0].write<double, 1>(rill::field<double>{f});
  rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = static_cast<double>(p[0]) * scale + shift; });
}

// How many points of field f of r do not hold p * scale + shift, counted by a launch.
long wrong_in(rill::region r, rill::field_id f, double scale, double shift) {
  rill::promise<long> wrong;
  rill::launch(
      [](const rill::physical_regions& rs, rill::field_id g, double a, double b, rill::promise<long> out) {
        const auto v = rs[0].read<double, 1>(rill::field<double>{g});
        long bad = 0;
        rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) {
          if (v[p] != static_cast<double>(p[0]) * a + b) ++bad;
        });
        out.put(bad);
      },
      {rill::req(r, {f}, rill::privilege::read_only)}, f, scale, shift, wrong);
  return wrong.get_future().get();
}

TEST_P(region_copy, fields_pair_in_order_and_copies_keep_program_order) {
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [] {
            rill::set_mapper(std::make_shared<random_mapper>(7));
            const rill::region a = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value, other});
            const rill::region b = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{saved, value});
            const rill::partition pa = rill::partition_equal(a, pieces);
            const rill::partition pb = rill::partition_equal(b, pieces);
            rill::launch(set_values, {rill::req(a, {value.id}, rill::privilege::write_discard)}, value.id, 1.0, 0.0);
            rill::launch(set_values, {rill::req(a, {other.id}, rill::privilege::write_discard)}, other.id, 2.0, 5.0);
            // a.value -> b.saved and a.other -> b.value, piece by piece on random ranks.
            rill::index_copy(pa, rill::req(pa, {value.id, other.id}, rill::privilege::read_only),
                             rill::req(pb, {saved.id, value.id}, rill::privilege::write_discard));
            // A write of the source after the copy: the copy saw the data before it.
            rill::index_launch(
                [](const rill::physical_regions& rs, std::size_t) {
                  const auto v = rs[0].write<double, 1>(value);
                  rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = -1; });
                },
                pa, {rill::req(pa, {value.id}, rill::privilege::read_write)});
            expect(wrong_in(b, saved.id, 1.0, 0.0) == 0, "the copy of a.value into b.saved");
            expect(wrong_in(b, value.id, 2.0, 5.0) == 0, "the copy of a.other into b.value");
            expect(wrong_in(a, value.id, 0.0, -1.0) == 0, "the write of the source after the copy");
            // One piece back, read_write: the rest of the destination keeps its data.
            rill::copy(rill::req(pa.subregion(2), {other.id}, rill::privilege::read_only),
                       rill::req(pb.subregion(2), {saved.id}, rill::privilege::read_write))
                .wait();
            const rill::rect<1> two = pb.subregion(2).space<1>().bounds();
            long wrong = 0;
            for (std::size_t p = 0; p < pieces; ++p)
              wrong += wrong_in(pb.subregion(p), saved.id, p == 2 ? 2.0 : 1.0, p == 2 ? 5.0 : 0.0);
            expect(wrong == 0, "a copy of piece 2 [" + std::to_string(two.lo[0]) + ", " + std::to_string(two.hi[0]) +
                                   "]: " + std::to_string(wrong) + " points wrong");
            a.destroy().wait();
            b.destroy().wait();
          }),
      0);
}

// Reduction copies (privilege reduce on the destination): two sources summed into b piece by piece
// on random ranks, and one whole, all on top of what b held; a task's reduction between them
// commutes with them. Then b holds the sum, whichever order the reductions ran in.
TEST_P(region_copy, reduction_copies_fold_into_the_destination) {
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [] {
            rill::set_mapper(std::make_shared<random_mapper>(13));
            const auto sum = rill::reduce_with<rill::reduce::sum<double>>();
            const rill::region a = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value, other});
            const rill::region b = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{saved});
            const rill::partition pa = rill::partition_equal(a, pieces);
            const rill::partition pb = rill::partition_equal(b, pieces);
            rill::launch(set_values, {rill::req(a, {value.id}, rill::privilege::write_discard)}, value.id, 1.0, 0.0);
            rill::launch(set_values, {rill::req(a, {other.id}, rill::privilege::write_discard)}, other.id, 2.0, 5.0);
            rill::launch(set_values, {rill::req(b, {saved.id}, rill::privilege::write_discard)}, saved.id, 0.0, 100.0);
            // b += a.value, piece by piece; b += 1 by tasks; b += a.other, whole.
            rill::index_copy(pa, rill::req(pa, {value.id}, rill::privilege::read_only), rill::req(pb, {saved.id}, sum));
            rill::index_launch(
                [](const rill::physical_regions& rs, std::size_t) {
                  const auto v = rs[0].reduce<rill::reduce::sum<double>, 1>(saved);
                  rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v(p, 1.0); });
                },
                pb, {rill::req(pb, {saved.id}, sum)});
            rill::copy(rill::req(a, {other.id}, rill::privilege::read_only), rill::req(b, {saved.id}, sum));
            // 100 + p + 1 + (2p + 5) = 3p + 106
            expect(wrong_in(b, saved.id, 3.0, 106.0) == 0, "b after the reduction copies");
            expect(wrong_in(a, value.id, 1.0, 0.0) == 0, "a, their source, unchanged");
            a.destroy().wait();
            b.destroy().wait();
          }),
      0);
}

// A task that holds a (read_only) and b (read_write) copies a's pieces into b's from its body, in
// order with its sub-launches: one that writes a piece of b before the copies (overwritten by
// them), a reduction copy that adds a's piece 0 to b's again, and a launch after them that reads
// what they wrote and doubles piece 3. When the task has ended, b holds a's values but in those
// two pieces (twice a's), whichever ranks the pieces were mapped to.
TEST_P(region_copy, a_launched_task_copies_between_its_regions) {
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [] {
            // (On every rank: the task's copies are mapped on the task's rank.)
            for (int r = 0; r < rill::rank_n(); ++r)
              rill::rpc(r, [] { rill::set_mapper(std::make_shared<random_mapper>(11 + rill::rank_me())); }).get();
            const rill::region a = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value});
            const rill::region b = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{saved});
            const rill::partition pa = rill::partition_equal(a, pieces);
            const rill::partition pb = rill::partition_equal(b, pieces);
            rill::launch(set_values, {rill::req(a, {value.id}, rill::privilege::write_discard)}, value.id, 3.0, 1.0);
            rill::launch(set_values, {rill::req(b, {saved.id}, rill::privilege::write_discard)}, saved.id, 0.0, -7.0);
            const rill::event task = rill::launch(
                [](const rill::physical_regions&, rill::partition from, rill::partition to) {
                  rill::launch(set_values, {rill::req(to.subregion(1), {saved.id}, rill::privilege::write_discard)},
                               saved.id, 0.0, 99.0);
                  rill::index_copy(from, rill::req(from, {value.id}, rill::privilege::read_only),
                                   rill::req(to, {saved.id}, rill::privilege::write_discard));
                  // Piece 0 gets a's values added again: a reduction copy under the task's read_write.
                  rill::copy(rill::req(from.subregion(0), {value.id}, rill::privilege::read_only),
                             rill::req(to.subregion(0), {saved.id}, rill::reduce_with<rill::reduce::sum<double>>()));
                  // Reads piece 3 as copied (a's values) and writes it doubled.
                  rill::launch(
                      [](const rill::physical_regions& rs) {
                        const auto v = rs[0].write<double, 1>(saved);
                        rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = v[p] * 2; });
                      },
                      {rill::req(to.subregion(3), {saved.id}, rill::privilege::read_write)});
                },
                {rill::req(a, {value.id}, rill::privilege::read_only),
                 rill::req(b, {saved.id}, rill::privilege::read_write)},
                pa, pb);
            task.wait();
            long wrong = 0;
            for (std::size_t p = 0; p < pieces; ++p)
              wrong += wrong_in(pb.subregion(p), saved.id, p == 0 || p == 3 ? 6.0 : 3.0, p == 0 || p == 3 ? 2.0 : 1.0);
            expect(wrong == 0, "b after the task's copies: " + std::to_string(wrong) + " points wrong");
            expect(wrong_in(a, value.id, 3.0, 1.0) == 0, "a, the copies' source, unchanged");
            a.destroy().wait();
            b.destroy().wait();
          }),
      0);
}

// Into a file attached write_discard and not acquired: each piece is written into the file from
// the source's instance by the I/O thread of the attaching rank -- the file's bytes once, no
// instance made and no copy in memory on the way -- and the detach makes it durable.
TEST_P(region_copy, a_copy_into_an_attached_file_writes_the_file_from_the_source) {
  const scratch_dir dir;
  const std::string path = dir / "snapshot.bin";
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            const int last = rill::rank_n() - 1;
            const rill::region grid = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value});
            const rill::partition pieces_of_grid = rill::partition_equal(grid, pieces);
            rill::index_launch(
                [](const rill::physical_regions& rs, std::size_t) { set_values(rs, value.id, 3.0, 1.0); },
                pieces_of_grid, {rill::req(pieces_of_grid, {value.id}, rill::privilege::write_discard)})
                .wait();
            const rill::region snap = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{saved});
            const rill::partition snap_pieces = rill::partition_equal(snap, pieces);
            rill::attach(snap, {saved.id}, rill::file_resource{path, rill::io_mode::write_discard}, rill::event::none(),
                         {.rank = last});
            const rill::launch_counts before = rill::launch_counts_here();
            const rill::io_counts io_before = rill::rpc(last, [] { return rill::io_counts_here(); }).get();
            rill::index_copy(pieces_of_grid, rill::req(pieces_of_grid, {value.id}, rill::privilege::read_only),
                             rill::req(snap_pieces, {saved.id}, rill::privilege::write_discard))
                .wait();
            const rill::launch_counts after = rill::launch_counts_here();
            const rill::io_counts io_after = rill::rpc(last, [] { return rill::io_counts_here(); }).get();
            expect(after.instances_made == before.instances_made, "the copy made an instance");
            expect(after.copies == before.copies, "the copy went through a copy in memory");
            expect(io_after.bytes_written - io_before.bytes_written == points * sizeof(double),
                   "the copy wrote " + std::to_string(io_after.bytes_written - io_before.bytes_written) +
                       " bytes of the file, not each point once");
            rill::detach(snap).wait();
            const std::vector<char> bytes = bytes_of_file(path);
            long wrong = bytes.size() == points * sizeof(double) ? 0 : points;
            for (rill::coord_t i = 0; wrong == 0 && i < points; ++i) {
              double v = 0;
              std::memcpy(&v, bytes.data() + i * sizeof(double), sizeof v);
              if (v != static_cast<double>(i) * 3 + 1) ++wrong;
            }
            expect(wrong == 0, "the snapshot file does not hold the grid");
            grid.destroy().wait();
            snap.destroy().wait();
          }),
      0);
}

TEST_P(region_copy, bad_copies_are_refused_naming_the_cause) {
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [] {
            const rill::region a = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value, narrow});
            const rill::region small = rill::region::create(rill::rect<1>{0, 9}, rill::field_space{value});
            const auto ro = rill::privilege::read_only;
            const auto wd = rill::privilege::write_discard;
            expect(says(misuse_of([&] {
                          rill::copy(rill::req(a, {value.id}, rill::privilege::read_write),
                                     rill::req(small, {value.id}, wd));
                        }),
                        "must be read_only"),
                   "a source that writes");
            expect(says(misuse_of([&] { rill::copy(rill::req(a, {value.id}, ro), rill::req(small, {value.id}, ro)); }),
                        "write_discard, read_write or reduce"),
                   "a destination that reads");
            expect(says(misuse_of([&] {
                          rill::copy(rill::req(a, {narrow.id}, ro),
                                     rill::req(small, {value.id}, rill::reduce_with<rill::reduce::sum<double>>()));
                        }),
                        "reduces by values of 8"),
                   "a reduction copy from a field of another size than the operator's values");
            expect(says(misuse_of([&] {
                          rill::copy(rill::req(a, {value.id, narrow.id}, ro), rill::req(small, {value.id}, wd));
                        }),
                        "pair in order"),
                   "fields that do not pair");
            expect(says(misuse_of([&] { rill::copy(rill::req(a, {narrow.id}, ro), rill::req(small, {value.id}, wd)); }),
                        "bytes"),
                   "fields of other sizes");
            expect(says(misuse_of([&] { rill::copy(rill::req(small, {value.id}, ro), rill::req(a, {value.id}, wd)); }),
                        "has points that source"),
                   "a destination larger than the source");
            const rill::partition halves = rill::partition_equal(a, 2);
            expect(says(misuse_of(
                            [&] { rill::index_copy(halves, rill::requirement{}, rill::req(halves, {value.id}, wd)); }),
                        "requirement 0 names no region or partition"),
                   "an index copy whose source names nothing");
            expect(says(misuse_of([&] {
                          rill::index_copy(rill::partition_equal(a, 3), rill::req(halves, {value.id}, ro),
                                           rill::req(a, {value.id}, wd));
                        }),
                        "requirement 0 names a partition of 2 colors for a launch over 3"),
                   "an index copy over more colors than its source's partition");
            {  // A reduction copy into attached points: their fold would apply to the file's data.
              const scratch_dir dir;
              const rill::region attached = rill::region::create(rill::rect<1>{0, 9}, rill::field_space{value});
              rill::attach(attached, {value.id}, rill::file_resource{dir / "r.bin", rill::io_mode::write_discard})
                  .wait();
              expect(says(misuse_of([&] {
                            rill::copy(rill::req(a, {value.id}, ro),
                                       rill::req(attached, {value.id}, rill::reduce_with<rill::reduce::sum<double>>()));
                          }),
                          "rill::copy: a reduction on region"),
                     "a reduction copy into attached points");
              rill::detach(attached).wait();
              attached.destroy().wait();
            }
            // In a launched task: into a region the task only reads; from a region it does not hold.
            const auto a_into_small = [](const rill::physical_regions&, rill::region x, rill::region y) {
              rill::copy(rill::req(x, {value.id}, rill::privilege::read_only),
                         rill::req(y, {value.id}, rill::privilege::write_discard));
            };
            const std::string into_read_only = poison_of(
                rill::launch(a_into_small, {rill::req(a, {value.id}, ro), rill::req(small, {value.id}, ro)}, a, small));
            expect(says(into_read_only, "requirement 1 of a copy in a launched task") &&
                       says(into_read_only, "not within the launching task's regions"),
                   "a copy in a task into a region it only reads: " + into_read_only);
            // (A region of its own: a failed task poisons the launches after it on its regions.)
            const rill::region fresh = rill::region::create(rill::rect<1>{0, 9}, rill::field_space{value});
            const std::string from_nowhere = poison_of(
                rill::launch(a_into_small, {rill::req(fresh, {value.id}, rill::privilege::read_write)}, a, fresh));
            expect(says(from_nowhere, "requirement 0 of a copy in a launched task"),
                   "a copy in a task from a region it does not hold: " + from_nowhere);
            a.destroy().wait();
            small.destroy().wait();
            fresh.destroy().wait();
          }),
      0);
}

INSTANTIATE_TEST_SUITE_P(setups, region_copy, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
