// Files attached to regions (rill/attach.hpp): restricted launches read the file before they run
// and write it back after; acquire lets copies in memory stand for it, release writes back once
// (and a re-acquire of unchanged data reads nothing) without waiting for reads still running on
// the copies (early release; off, it waits); a file changed by another program while
// acquired poisons the release and is not written over; the points of a partitioned region are
// read by the ranks their launches run on, each its own part once (of an HDF5 dataset: its
// hyperslab), and its pieces may share one file, each attached on its rank; a checkpoint is a region
// attached write_discard and detached; bad calls are refused naming the cause.
#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "file_harness.hpp"
#include "harness.hpp"
#include "rill/attach.hpp"
#include "rill/launch.hpp"
#include "rill/partition.hpp"

namespace rill_test {
namespace {

class attach : public ::testing::TestWithParam<setup> {};

using data::misuse_of;
using data::poison_of;
using data::says;

constexpr rill::field<double> value{1};
constexpr rill::field<double> weight{2};  // a second field, for files of several
constexpr rill::coord_t points = 4096;
constexpr std::size_t file_bytes = points * sizeof(double);

// A file of `points` doubles, point i holding f(i).
template <class F>
void write_doubles(const std::string& path, F f) {
  std::ofstream out(path, std::ios::binary);
  for (rill::coord_t i = 0; i < points; ++i) {
    const double v = f(i);
    out.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
}

// How many points of the file do not hold f(i) (all of them when it has another size).
template <class F>
long wrong_in_file(const std::string& path, F f) {
  const std::vector<char> bytes = bytes_of_file(path);
  if (bytes.size() != file_bytes) return points;
  long wrong = 0;
  for (rill::coord_t i = 0; i < points; ++i) {
    double v = 0;
    std::memcpy(&v, bytes.data() + i * sizeof(double), sizeof v);
    if (v != f(i)) ++wrong;
  }
  return wrong;
}

struct grid {
  rill::region root = rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value});
  rill::partition pieces = rill::partition_equal(root, 4);
};

// Every point's value v becomes v * 2 + 1, a piece per point task, once `after` has triggered.
rill::event step(const grid& g, rill::event after = rill::event::none()) {
  return rill::index_launch(rill::after(after),
                            [](const rill::physical_regions& rs, std::size_t) {
                              const auto v = rs[0].write<double, 1>(value);
                              rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = v[p] * 2 + 1; });
                            },
                            g.pieces, {rill::req(g.pieces, {value.id}, rill::privilege::read_write)});
}

// The points of r whose value is not f(i), counted by a launch reading it (issued now, run after
// `after`).
template <class F>
rill::future<long> count_wrong(rill::region r, F, rill::event after = rill::event::none()) {
  rill::promise<long> wrong;
  rill::launch(
      rill::after(after),
      [](const rill::physical_regions& rs, rill::promise<long> out) {
        const auto v = rs[0].read<double, 1>(value);
        long bad = 0;
        rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) {
          if (v[p] != F{}(p[0])) ++bad;
        });
        out.put(bad);
      },
      {rill::req(r, {value.id}, rill::privilege::read_only)}, wrong);
  return wrong.get_future();
}
template <class F>
long wrong_in_region(rill::region r, F f) {
  return count_wrong(r, f).get();
}

rill::io_counts io_counts_of(int rank) {
  return rill::rpc(rank, [] { return rill::io_counts_here(); }).get();
}
std::vector<rill::io_counts> io_counts_of_every_rank() {
  std::vector<rill::io_counts> out;
  for (int k = 0; k < rill::rank_n(); ++k) out.push_back(io_counts_of(k));
  return out;
}

// How many of a grid's 4 pieces rank k holds when piece c is attached on rank c % n.
std::uint64_t pieces_on(int k, int n) { return (4 + static_cast<std::uint64_t>(n - 1 - k)) / n; }

struct identity {
  double operator()(rill::coord_t i) const { return static_cast<double>(i); }
};
struct once {  // identity after one step
  double operator()(rill::coord_t i) const { return static_cast<double>(i) * 2 + 1; }
};
struct twice {
  double operator()(rill::coord_t i) const { return once{}(i)*2 + 1; }
};
struct thrice {
  double operator()(rill::coord_t i) const { return twice{}(i)*2 + 1; }
};

// An HDF5 file whose dataset "v" of `shape` holds at each element its index (row-major).
void write_dataset_of_indices(const std::string& path, const std::vector<hsize_t>& shape) {
  std::size_t count = 1;
  for (hsize_t extent : shape) count *= extent;
  std::vector<double> v(count);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr);
  const hid_t ds = H5Dcreate2(file, "v", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(file);
}

// Restricted: each launch reads the file (its points, on the ranks the points run on: each part
// once) and a launch that writes gives its data back before anything later touches it.
TEST_P(attach, restricted_launches_read_the_file_and_write_it_back) {
  const scratch_dir dir;
  const std::string path = dir / "values.bin";
  write_doubles(path, identity{});
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          const int last = rill::rank_n() - 1;
                          grid g;
                          const rill::io_counts before = io_counts_of(last);
                          rill::attach(g.root, {value.id}, rill::file_resource{path, rill::io_mode::read_write},
                                       rill::event::none(), {.rank = last})
                              .wait();
                          const rill::io_counts attached = io_counts_of(last);
                          expect(attached.reads == before.reads, "the attach read the file");
                          step(g).wait();
                          const rill::io_counts stepped = io_counts_of(last);
                          expect(stepped.bytes_read - before.bytes_read == file_bytes,
                                 "a step over the pieces read " +
                                     std::to_string(stepped.bytes_read - before.bytes_read) +
                                     " bytes of the file, not each point once");
                          // The read comes after the writes back: the file holds the step already.
                          expect(wrong_in_region(g.root, once{}) == 0, "a restricted read saw wrong values");
                          expect(wrong_in_file(path, once{}) == 0, "a restricted step did not reach the file");
                          rill::detach(g.root).wait();
                          expect(wrong_in_file(path, once{}) == 0, "the detached file lost the step");
                          // After the detach the region keeps its data, in memory.
                          expect(wrong_in_region(g.root, once{}) == 0, "a detached region lost its data");
                        }),
            0);
}

// Acquired, steps work on copies in memory: the file is read once and written once, at the
// release. Re-acquired while unchanged, the copies are valid again without a byte read.
TEST_P(attach, acquire_keeps_copies_and_release_writes_back_once) {
  const scratch_dir dir;
  const std::string path = dir / "values.bin";
  write_doubles(path, identity{});
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          const int last = rill::rank_n() - 1;
                          grid g;
                          rill::attach(g.root, {value.id}, rill::file_resource{path, rill::io_mode::read_write},
                                       rill::event::none(), {.rank = last});
                          const rill::io_counts before = io_counts_of(last);
                          rill::acquire(g.root);
                          step(g);
                          step(g).wait();
                          const rill::io_counts stepped = io_counts_of(last);
                          expect(stepped.bytes_read - before.bytes_read == file_bytes,
                                 "two acquired steps read the file more than once");
                          expect(stepped.writes == before.writes, "an acquired step wrote the file");
                          expect(wrong_in_file(path, identity{}) == 0, "the file changed before the release");
                          rill::release(g.root).wait();
                          expect(wrong_in_file(path, twice{}) == 0, "the release did not write the steps back");
                          const rill::io_counts released = io_counts_of(last);
                          expect(released.bytes_written - stepped.bytes_written == file_bytes,
                                 "the release wrote " + std::to_string(released.bytes_written - stepped.bytes_written) +
                                     " bytes, not the file once");
                          rill::acquire(g.root).wait();
                          step(g).wait();
                          expect(io_counts_of(last).bytes_read == released.bytes_read,
                                 "a re-acquire of unchanged data read the file");
                          rill::detach(g.root).wait();  // (releases first)
                          expect(wrong_in_file(path, thrice{}) == 0, "the detach did not write the last step back");
                        }),
            0);
}

// Early release (Iris §IV-B): once the acquired writes have ended, a release writes them back
// without waiting for reads still running on the copies, which keep the data they started with --
// also when a restricted write of the same points follows (it waits for them).
TEST_P(attach, a_release_does_not_wait_for_reads_still_running_on_copies) {
  const scratch_dir dir;
  const std::string path = dir / "values.bin";
  write_doubles(path, identity{});
  EXPECT_EQ(run_checked(
                GetParam(),
                [&] {
                  grid g;
                  rill::attach(g.root, {value.id}, rill::file_resource{path, rill::io_mode::read_write},
                               rill::event::none(), {.rank = rill::rank_n() - 1});
                  rill::acquire(g.root);
                  step(g);
                  rill::user_event gate = rill::user_event::create();
                  rill::future<long> read = count_wrong(g.root, once{}, gate);
                  rill::release(g.root).wait();
                  expect(!read.ready(), "the held-back read ended before its gate opened");
                  expect(wrong_in_file(path, once{}) == 0, "the early release did not write the step back");
                  const rill::event stepped = step(g);
                  gate.trigger();
                  expect(read.get() == 0, "a read running across the release and a later write saw other data");
                  stepped.wait();
                  // (A read comes after the step's write back.)
                  expect(wrong_in_region(g.root, twice{}) == 0, "the restricted step after the release was lost");
                  expect(wrong_in_file(path, twice{}) == 0, "the restricted step after the release is not in the file");
                  rill::detach(g.root).wait();
                  expect(wrong_in_region(g.root, twice{}) == 0, "the detached region lost the last step");
                }),
            0);
}

// With --rill:write-after-read=off a release waits for every use before it, reads included.
TEST_P(attach, off_a_release_waits_for_the_reads_before_it) {
  const scratch_dir dir;
  const std::string path = dir / "values.bin", other = dir / "other.bin";
  write_doubles(path, identity{});
  write_doubles(other, identity{});
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          grid g, h;
                          const int last = rill::rank_n() - 1;
                          rill::attach(g.root, {value.id}, rill::file_resource{path, rill::io_mode::read_write},
                                       rill::event::none(), {.rank = last});
                          rill::attach(h.root, {value.id}, rill::file_resource{other, rill::io_mode::read_write},
                                       rill::event::none(), {.rank = last});
                          rill::acquire(g.root);
                          rill::acquire(h.root);
                          step(g);
                          step(h);
                          rill::user_event gate = rill::user_event::create();
                          rill::future<long> read = count_wrong(g.root, once{}, gate);
                          const rill::event released = rill::release(g.root);
                          rill::release(h.root).wait();  // independent, issued after: it wrote its file
                          expect(wrong_in_file(other, once{}) == 0, "the independent release did not write back");
                          expect(!released.has_triggered(), "a release ended before a read it follows");
                          expect(wrong_in_file(path, identity{}) == 0, "a release wrote back before a read it follows");
                          gate.trigger();
                          expect(read.get() == 0, "the read saw other data");
                          released.wait();
                          expect(wrong_in_file(path, once{}) == 0, "the release did not write the step back");
                          rill::detach(g.root).wait();
                          rill::detach(h.root).wait();
                        },
                        {"--rill:write-after-read=off"}),
            0);
}

// A restricted read after a release finds its copy unchanged and reads nothing from the file --
// also when a read before the release still runs on that copy: the refresh waits for the state the
// release leaves (and so for that read), instead of reading the file again under it.
TEST_P(attach, a_read_after_a_release_waits_for_it_and_reads_nothing_again) {
  const scratch_dir dir;
  const std::string path = dir / "values.bin";
  write_doubles(path, identity{});
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          grid g;
                          const int last = rill::rank_n() - 1;
                          const rill::io_counts before = io_counts_of(last);
                          rill::attach(g.root, {value.id}, rill::file_resource{path, rill::io_mode::read_write},
                                       rill::event::none(), {.rank = last});
                          rill::acquire(g.root);
                          rill::user_event gate = rill::user_event::create();
                          rill::future<long> during = count_wrong(g.root, identity{}, gate);
                          const rill::event released = rill::release(g.root);
                          rill::future<long> after = count_wrong(g.root, identity{});
                          expect(!released.has_triggered(), "a release ended before a read it follows");
                          gate.trigger();
                          expect(during.get() == 0, "the acquired read saw other data");
                          expect(after.get() == 0, "the read after the release saw other data");
                          const std::uint64_t read = io_counts_of(last).bytes_read - before.bytes_read;
                          expect(read == file_bytes, "the two reads read " + std::to_string(read) +
                                                         " bytes of the file, not the file once");
                          rill::detach(g.root).wait();
                        },
                        {"--rill:write-after-read=off"}),
            0);
}

// Another program appends to the file while it is acquired: the release is poisoned naming the
// file, and the other program's data is not written over.
TEST_P(attach, a_file_changed_while_acquired_poisons_the_release_and_is_kept) {
  const scratch_dir dir;
  const std::string path = dir / "shared.bin";
  write_doubles(path, identity{});
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          grid g;
                          rill::attach(g.root, {value.id}, rill::file_resource{path, rill::io_mode::read_write});
                          rill::acquire(g.root).wait();
                          step(g).wait();
                          {
                            std::ofstream other(path, std::ios::binary | std::ios::app);
                            other.write("!", 1);
                          }
                          const std::string released = poison_of(rill::release(g.root));
                          expect(says(released, "shared.bin") && says(released, "changed outside"),
                                 "a release over another program's change: " + released);
                          // (The detach fails for the same cause; it still closes the file.)
                          const std::string detached = poison_of(rill::detach(g.root));
                          expect(says(detached, "changed outside"), "a detach after a failed release: " + detached);
                          // The other program's bytes are there, and the file's own were not written over.
                          std::vector<char> bytes = bytes_of_file(path);
                          expect(bytes.size() == file_bytes + 1 && bytes.back() == '!',
                                 "the other program's change was lost");
                          bytes.pop_back();
                          {
                            std::ofstream out(dir / "before.bin", std::ios::binary);
                            out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
                          }
                          expect(wrong_in_file(dir / "before.bin", identity{}) == 0, "the release wrote over the file");
                        }),
            0);
}

// A checkpoint: data computed in memory, copied by a launch into a region attached write_discard
// to a new file, which the detach makes durable under its name.
TEST_P(attach, a_checkpoint_is_a_region_attached_write_discard_and_detached) {
  const scratch_dir dir;
  const std::string path = dir / "checkpoint.bin";
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          grid live;
                          rill::index_launch(
                              [](const rill::physical_regions& rs, std::size_t) {
                                const auto v = rs[0].write<double, 1>(value);
                                rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = once{}(p[0]); });
                              },
                              live.pieces, {rill::req(live.pieces, {value.id}, rill::privilege::write_discard)});
                          grid saved;
                          rill::attach(saved.root, {value.id}, rill::file_resource{path, rill::io_mode::write_discard},
                                       rill::event::none(), {.rank = rill::rank_n() - 1});
                          rill::index_launch(
                              [](const rill::physical_regions& rs, std::size_t) {
                                const auto from = rs[0].read<double, 1>(value);
                                const auto to = rs[1].write<double, 1>(value);
                                rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { to[p] = from[p]; });
                              },
                              live.pieces,
                              {rill::req(live.pieces, {value.id}, rill::privilege::read_only),
                               rill::req(saved.pieces, {value.id}, rill::privilege::write_discard)});
                          expect(!fs::exists(path), "the checkpoint took its name before the detach");
                          rill::detach(saved.root).wait();
                          expect(wrong_in_file(path, once{}) == 0, "the checkpoint does not hold the data");
                          expect(dir.names() == std::vector<std::string>{"checkpoint.bin"},
                                 "a temporary file was left beside the checkpoint");
                        }),
            0);
}

// A 2-D HDF5 dataset attached to a region whose blocks the ranks step: each point task reads and
// writes back only its block's hyperslab of the one file (legion#1137), the dataset never split.
TEST_P(attach, the_ranks_read_one_hdf5_file_each_its_hyperslab) {
  const scratch_dir dir;
  const std::string path = dir / "field.h5";
  constexpr hsize_t height = 32, width = 128;  // the region is width x height: (x, y)
  write_dataset_of_indices(path, {height, width});
  EXPECT_EQ(
      run_checked(GetParam(),
                  [&] {
                    const int last = rill::rank_n() - 1;
                    const rill::region field =
                        rill::region::create(rill::rect<2>{{0, 0}, {width - 1, height - 1}}, rill::field_space{value});
                    const rill::partition blocks = rill::partition_by_blocks(field, rill::point<2>{width, 8});
                    const rill::io_counts before = io_counts_of(last);
                    rill::attach(field, {value.id},
                                 rill::hdf5_resource{path, {rill::stored_as(value, "v")}, rill::io_mode::read_write},
                                 rill::event::none(), {.rank = last});
                    rill::index_launch(
                        [](const rill::physical_regions& rs, std::size_t) {
                          const auto v = rs[0].write<double, 2>(value);
                          rs[0].reg.space<2>().for_each_point([&](rill::point<2> p) { v[p] = v[p] * 2 + 1; });
                        },
                        blocks, {rill::req(blocks, {value.id}, rill::privilege::read_write)})
                        .wait();
                    const rill::io_counts stepped = io_counts_of(last);
                    expect(stepped.bytes_read - before.bytes_read == height * width * sizeof(double),
                           "the blocks read " + std::to_string(stepped.bytes_read - before.bytes_read) +
                               " bytes of the dataset, not each point once");
                    expect(stepped.reads - before.reads == 4, "the blocks did not read a hyperslab each");
                    rill::detach(field).wait();
                    std::vector<double> v(height * width);
                    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
                    const hid_t ds = H5Dopen2(file, "v", H5P_DEFAULT);
                    H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
                    H5Dclose(ds);
                    H5Fclose(file);
                    long wrong = 0;
                    for (std::size_t i = 0; i < v.size(); ++i)
                      if (v[i] != static_cast<double>(i) * 2 + 1) ++wrong;
                    expect(wrong == 0, "the dataset does not hold every block's step");
                  }),
      0);
}

// The pieces of a region attached each to its part of one file of the region (within), read_write,
// each on the rank its launches run on: every rank reads and writes its own pieces' bytes of the
// file and no others (with --rill:io-direct, through whole blocks: all of it direct where the file
// system allows), and the file holds each step; acquired and released, the parts write back
// without taking each other's writes for another program's.
void pieces_share_one_file(const setup& s, std::vector<std::string> flags, bool direct) {
  const scratch_dir dir;
  const std::string path = dir / "parts.bin";
  write_doubles(path, identity{});
  EXPECT_EQ(
      run_checked(
          s,
          [&] {
            grid g;
            const int n = rill::rank_n();
            const std::vector<rill::io_counts> before = io_counts_of_every_rank();
            const rill::file_resource file{path, rill::io_mode::read_write};
            std::vector<rill::event> attached;
            for (std::size_t c = 0; c < 4; ++c)
              attached.push_back(rill::attach(g.pieces.subregion(c), {value.id}, file, rill::event::none(),
                                              {.rank = static_cast<int>(c) % n, .within = g.root}));
            rill::merge(attached).wait();
            step(g).wait();
            for (int k = 0; k < n; ++k) {
              const rill::io_counts now = io_counts_of(k);
              const std::uint64_t mine = pieces_on(k, n) * (file_bytes / 4);
              expect(
                  now.bytes_read - before[k].bytes_read == mine && now.bytes_written - before[k].bytes_written == mine,
                  "rank " + std::to_string(k) + " read " + std::to_string(now.bytes_read - before[k].bytes_read) +
                      " and wrote " + std::to_string(now.bytes_written - before[k].bytes_written) +
                      " bytes of the file, not its pieces' " + std::to_string(mine));
            }
            for (int k = 0; k < n; ++k) {
              const std::uint64_t moved = io_counts_of(k).bytes_direct - before[k].bytes_direct;
              const std::uint64_t pieces_here = pieces_on(k, n);
              const std::uint64_t all = direct ? 2 * pieces_here * (file_bytes / 4) : 0;
              expect(moved == all, "rank " + std::to_string(k) + " moved " + std::to_string(moved) +
                                       " bytes of its pieces direct, not " + std::to_string(all));
            }
            expect(wrong_in_file(path, once{}) == 0, "the pieces' step did not reach the file");
            // Acquired, two steps on copies; each release writes its piece back after the
            // one before it changed the file.
            std::vector<rill::event> acquired, detached;
            for (std::size_t c = 0; c < 4; ++c) acquired.push_back(rill::acquire(g.pieces.subregion(c)));
            rill::merge(acquired).wait();
            step(g);
            step(g);
            for (std::size_t c = 0; c < 4; ++c) {
              const std::string released = poison_of(rill::release(g.pieces.subregion(c)));
              expect(released == "no error", "the release of piece " + std::to_string(c) + ": " + released);
            }
            expect(wrong_in_file(path, thrice{}) == 0, "the released pieces are not all in the file");
            for (std::size_t c = 0; c < 4; ++c) detached.push_back(rill::detach(g.pieces.subregion(c)));
            rill::merge(detached).wait();
            expect(wrong_in_file(path, thrice{}) == 0, "the detached file lost a piece");
            expect(wrong_in_region(g.root, thrice{}) == 0, "the region lost its data at the detaches");
          },
          std::move(flags)),
      0);
}

TEST_P(attach, the_pieces_of_a_region_share_its_file_each_attached_on_its_rank) {
  pieces_share_one_file(GetParam(), {}, false);
}

TEST_P(attach, pieces_sharing_a_file_move_their_blocks_direct) {
  const scratch_dir probe;
  pieces_share_one_file(GetParam(), {"--rill:io-direct=4KiB"}, direct_io_in(probe));
}

// Parts with several fields in an array-of-structs file: each part's rows hold all its fields,
// each rank moves bytes of its own pieces, as many for each, and the file holds each field's step.
TEST_P(attach, parts_of_an_aos_file_move_all_their_fields) {
  const scratch_dir dir;
  const std::string path = dir / "aos.bin";
  {
    std::ofstream out(path, std::ios::binary);
    for (rill::coord_t i = 0; i < points; ++i) {
      const double v[2] = {static_cast<double>(i), -static_cast<double>(i)};
      out.write(reinterpret_cast<const char*>(v), sizeof v);
    }
  }
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          const int n = rill::rank_n();
                          const rill::region root =
                              rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value, weight});
                          const rill::partition pieces = rill::partition_equal(root, 4);
                          const std::vector<rill::io_counts> before = io_counts_of_every_rank();
                          std::vector<rill::event> attached;
                          for (std::size_t c = 0; c < 4; ++c)
                            attached.push_back(rill::attach(
                                pieces.subregion(c), {weight.id, value.id},
                                rill::file_resource{path, rill::io_mode::read_write}, rill::event::none(),
                                {.rank = static_cast<int>(c) % n, .layout = rill::layout::aos(), .within = root}));
                          const std::string said = poison_of(rill::merge(attached));
                          expect(said == "no error", "the parts' attach: " + said);
                          rill::index_launch(
                              [](const rill::physical_regions& rs, std::size_t) {
                                const auto v = rs[0].write<double, 1>(value);
                                const auto w = rs[0].write<double, 1>(weight);
                                rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) {
                                  v[p] = v[p] * 2 + 1;
                                  w[p] = w[p] - 1;
                                });
                              },
                              pieces, {rill::req(pieces, {value.id, weight.id}, rill::privilege::read_write)})
                              .wait();
                          // (A field of an AoS file is not one range: how many bytes a piece moves is
                          // the store's business. Each piece moves as many, and ranks without one none.)
                          std::uint64_t per_piece = 0;
                          for (int k = 0; k < n; ++k) {
                            const std::uint64_t pieces_here = pieces_on(k, n);
                            const rill::io_counts now = io_counts_of(k);
                            const std::uint64_t moved =
                                now.bytes_read - before[k].bytes_read + now.bytes_written - before[k].bytes_written;
                            if (k == 0) per_piece = moved / pieces_here;
                            expect(moved == pieces_here * per_piece &&
                                       (now.bytes_written > before[k].bytes_written) == (pieces_here > 0),
                                   "rank " + std::to_string(k) + " moved " + std::to_string(moved) + " bytes for its " +
                                       std::to_string(pieces_here) + " pieces, rank 0 " + std::to_string(per_piece) +
                                       " a piece");
                          }
                          std::vector<rill::event> detached;
                          for (std::size_t c = 0; c < 4; ++c) detached.push_back(rill::detach(pieces.subregion(c)));
                          rill::merge(detached).wait();
                          const std::vector<char> bytes = bytes_of_file(path);
                          long wrong = bytes.size() == 2 * file_bytes ? 0 : points;
                          for (rill::coord_t i = 0; wrong == 0 && i < points; ++i) {
                            double v[2];
                            std::memcpy(v, bytes.data() + i * sizeof v, sizeof v);
                            if (v[0] != once{}(i) || v[1] != -static_cast<double>(i) - 1) ++wrong;
                          }
                          expect(wrong == 0, "the file does not hold both fields' step");
                        }),
            0);
}

// Read-only and read-write parts share a file: the writers' pieces reach it, the reader's bytes
// stay. Whoever has left no longer counts: once the writers are detached a reader of the whole
// file may join the read-only part, and once it has left a writing part may join again.
TEST_P(attach, read_only_and_read_write_parts_share_a_file_and_leavers_no_longer_count) {
  const scratch_dir dir;
  const std::string path = dir / "parts.bin";
  write_doubles(path, identity{});
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            grid g, other;
            const int n = rill::rank_n();
            const auto part = [&](std::size_t c, rill::io_mode mode) {
              return poison_of(rill::attach(g.pieces.subregion(c), {value.id}, rill::file_resource{path, mode},
                                            rill::event::none(), {.rank = static_cast<int>(c) % n, .within = g.root}));
            };
            const auto step_piece = [&](std::size_t c) {
              return rill::launch(
                  [](const rill::physical_regions& rs) {
                    const auto v = rs[0].write<double, 1>(value);
                    rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) { v[p] = v[p] * 2 + 1; });
                  },
                  {rill::req(g.pieces.subregion(c), {value.id}, rill::privilege::read_write)});
            };
            expect(part(0, rill::io_mode::read_only) == "no error", "the read-only part was refused");
            for (std::size_t c = 1; c < 4; ++c)
              expect(part(c, rill::io_mode::read_write) == "no error",
                     "read_write part " + std::to_string(c) + " was refused beside a read-only one");
            std::vector<rill::event> steps;
            for (std::size_t c = 1; c < 4; ++c) steps.push_back(step_piece(c));
            rill::merge(steps).wait();
            expect(count_wrong(g.pieces.subregion(0), identity{}).get() == 0, "the read-only part read wrong values");
            std::vector<rill::event> detached;
            for (std::size_t c = 1; c < 4; ++c) detached.push_back(rill::detach(g.pieces.subregion(c)));
            rill::merge(detached).wait();
            const auto stepped_but_0 = [](rill::coord_t i) { return i < points / 4 ? identity{}(i) : once{}(i); };
            expect(wrong_in_file(path, stepped_but_0) == 0, "the file does not hold the writing parts' step alone");
            const std::string reader =
                poison_of(rill::attach(other.root, {value.id}, rill::file_resource{path, rill::io_mode::read_only}));
            expect(reader == "no error", "a reader of the whole file, the writers gone: " + reader);
            expect(count_wrong(other.root, stepped_but_0).get() == 0, "the whole-file reader read wrong values");
            rill::detach(other.root).wait();
            expect(part(1, rill::io_mode::read_write) == "no error", "a writing part, the whole-file reader gone");
            step_piece(1).wait();
            rill::merge(rill::detach(g.pieces.subregion(1)), rill::detach(g.pieces.subregion(0))).wait();
            const auto piece_1_twice = [](rill::coord_t i) {
              return i < points / 4 ? identity{}(i) : i < points / 2 ? twice{}(i) : once{}(i);
            };
            expect(wrong_in_file(path, piece_1_twice) == 0, "the file does not hold the second step of piece 1");
          }),
      0);
}

// The pieces of a region attached read_only each to its hyperslab of one HDF5 dataset of the
// whole region (within), each on its rank: every rank reads its pieces' points and no others. A
// writing part beside them is refused: two ranks' HDF5 libraries may not write one file at once.
TEST_P(attach, pieces_read_their_hyperslabs_of_one_hdf5_dataset_of_the_region) {
  const scratch_dir dir;
  const std::string path = dir / "line.h5";
  write_dataset_of_indices(path, {points});
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          grid g;
                          const int n = rill::rank_n();
                          const auto dataset = [&](rill::io_mode mode) {
                            return rill::hdf5_resource{path, {rill::stored_as(value, "v")}, mode};
                          };
                          const std::vector<rill::io_counts> before = io_counts_of_every_rank();
                          std::vector<rill::event> attached;
                          for (std::size_t c = 0; c < 4; ++c)
                            attached.push_back(rill::attach(g.pieces.subregion(c), {value.id},
                                                            dataset(rill::io_mode::read_only), rill::event::none(),
                                                            {.rank = static_cast<int>(c) % n, .within = g.root}));
                          const std::string said = poison_of(rill::merge(attached));
                          expect(said == "no error", "the parts' attach: " + said);
                          std::vector<rill::future<long>> wrong;
                          for (std::size_t c = 0; c < 4; ++c)
                            wrong.push_back(count_wrong(g.pieces.subregion(c), identity{}));
                          for (std::size_t c = 0; c < 4; ++c)
                            expect(wrong[c].get() == 0, "piece " + std::to_string(c) + " read wrong values");
                          for (int k = 0; k < n; ++k) {
                            const std::uint64_t pieces_here = pieces_on(k, n);
                            const std::uint64_t read = io_counts_of(k).bytes_read - before[k].bytes_read;
                            expect(read == pieces_here * file_bytes / 4,
                                   "rank " + std::to_string(k) + " read " + std::to_string(read) +
                                       " bytes of the dataset for its " + std::to_string(pieces_here) + " pieces");
                          }
                          rill::detach(g.pieces.subregion(3)).wait();
                          const std::string writer = misuse_of([&] {
                            rill::attach(g.pieces.subregion(3), {value.id}, dataset(rill::io_mode::read_write),
                                         rill::event::none(), {.within = g.root});
                          });
                          expect(says(writer, "attached already"),
                                 "a writing HDF5 part beside reading ones: " + writer);
                          std::vector<rill::event> detached;
                          for (std::size_t c = 0; c < 3; ++c) detached.push_back(rill::detach(g.pieces.subregion(c)));
                          rill::merge(detached).wait();
                        }),
            0);
}

// Parts share a file only as parts of one region, with the same fields and layout, made of whole
// rows of it, none of them write_discard (a file of its own, renamed over the path); a region
// outside `within` is refused.
TEST_P(attach, parts_that_cannot_share_a_file_are_refused_naming_the_cause) {
  const scratch_dir dir;
  const std::string path = dir / "parts.bin";
  write_doubles(path, identity{});
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            grid g, other;
            const rill::file_resource file{path, rill::io_mode::read_write};
            const auto part = [&](std::size_t c, const rill::file_resource& f, rill::layout l) {
              return misuse_of([&] {
                rill::attach(g.pieces.subregion(c), {value.id}, f, rill::event::none(),
                             {.layout = l, .within = g.root});
              });
            };
            expect(part(0, file, rill::layout::soa()) == "no error", "a first part was refused");
            const std::string discard =
                part(1, rill::file_resource{path, rill::io_mode::write_discard}, rill::layout::soa());
            expect(says(discard, "write_discard as a part"), "a write_discard part: " + discard);
            const std::string laid_out = part(2, file, rill::layout::aos());
            expect(says(laid_out, "attached already"), "a part in another layout: " + laid_out);
            const std::string whole = misuse_of([&] { rill::attach(other.root, {value.id}, file); });
            expect(says(whole, "attached already"), "another region over the whole file: " + whole);
            const std::string outside = misuse_of([&] {
              rill::attach(other.pieces.subregion(1), {value.id}, file, rill::event::none(), {.within = g.root});
            });
            expect(says(outside, "is not a part of region"), "a region of another tree: " + outside);
            expect(part(3, file, rill::layout::soa()) == "no error", "a second part was refused");
            rill::merge(rill::detach(g.pieces.subregion(0)), rill::detach(g.pieces.subregion(3))).wait();
            // In two dimensions a part is whole rows (of the layout's order): a
            // block of half rows would have its bytes among another block's.
            const rill::region plane = rill::region::create(rill::rect<2>{{0, 0}, {63, 63}}, rill::field_space{value});
            const rill::partition halves = rill::partition_by_blocks(plane, rill::point<2>{32, 64});
            const rill::partition rows = rill::partition_by_blocks(plane, rill::point<2>{64, 32});
            const std::string half = misuse_of(
                [&] { rill::attach(halves.subregion(1), {value.id}, file, rill::event::none(), {.within = plane}); });
            expect(says(half, "whole rows") && says(half, "dimension 0"), "a block of half rows: " + half);
            const std::string column_major = misuse_of([&] {
              rill::attach(rows.subregion(1), {value.id}, file, rill::event::none(),
                           {.layout = rill::layout::soa().order({1, 0}), .within = plane});
            });
            expect(says(column_major, "whole rows") && says(column_major, "dimension 1"),
                   "rows of a file ordered dimension 1 fastest: " + column_major);
            const rill::event rows_attached =
                rill::attach(rows.subregion(1), {value.id}, file, rill::event::none(), {.within = plane});
            expect(poison_of(rows_attached) == "no error", "a part of whole rows: " + poison_of(rows_attached));
            rill::detach(rows.subregion(1)).wait();
          }),
      0);
}

// Two regions (two trees) attached to one file in turn: the reader's attach comes after the
// writer's detach, whatever the order their work would otherwise run in (legion#316). The writer's
// step is held back until the reader's launch has been issued.
TEST_P(attach, a_reader_attached_after_a_writer_detached_reads_its_data) {
  const scratch_dir dir;
  const std::string path = dir / "shared.bin";
  write_doubles(path, identity{});
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            rill::user_event gate = rill::user_event::create();
            grid writer;
            rill::attach(writer.root, {value.id}, rill::file_resource{path, rill::io_mode::read_write});
            step(writer, gate);
            const rill::event written = rill::detach(writer.root);
            grid reader;
            // (The same file by another name: the identity is the canonical path.)
            rill::attach(reader.root, {value.id}, rill::file_resource{dir / "./shared.bin", rill::io_mode::read_only});
            rill::future<long> wrong = count_wrong(reader.root, once{});
            gate.trigger();
            written.wait();
            expect(wrong.get() == 0, "a reader attached after a writer read stale data");
            // Two attachments of one file, one of them writing: refused.
            const std::string both = misuse_of([&] {
              rill::attach(writer.root, {value.id}, rill::file_resource{path, rill::io_mode::read_write});
            });
            expect(says(both, "shared.bin") && says(both, "attached already"),
                   "a writer attached beside a reader: " + both);
            rill::detach(reader.root).wait();
          }),
      0);
}

TEST_P(attach, bad_calls_are_refused_naming_the_cause) {
  const scratch_dir dir;
  const std::string path = dir / "values.bin";
  write_doubles(path, identity{});
  const std::string input_path = dir / "input.bin";
  write_doubles(input_path, identity{});
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            grid g;
            const rill::file_resource file{path, rill::io_mode::read_write};
            expect(says(misuse_of([&] { rill::detach(g.root); }), "not attached"),
                   "a detach of a region that is not attached");
            const rill::event wrong_size = rill::attach(g.pieces.subregion(1), {value.id}, file);
            const std::string twice = misuse_of([&] { rill::attach(g.root, {value.id}, file); });
            expect(says(twice, "attached already"), "an attach over an attached region: " + twice);
            {  // One attachment a region (detach names the region); a refused attach holds nothing.
              const rill::region both =
                  rill::region::create(rill::rect<1>{0, points - 1}, rill::field_space{value, weight});
              const std::string laid_out = misuse_of([&] {
                rill::attach(both, {value.id}, rill::file_resource{input_path, rill::io_mode::read_write},
                             rill::event::none(), {.layout = rill::layout::soa().order({1, 0})});
              });
              expect(laid_out != "no error", "a 2-D order for a 1-D region was taken");
              rill::attach(both, {value.id}, rill::file_resource{input_path, rill::io_mode::read_write});
              const std::string second = misuse_of([&] {
                rill::attach(both, {weight.id}, rill::file_resource{dir / "weights.bin", rill::io_mode::write_discard});
              });
              expect(says(second, "one attachment"), "a second attachment of a region: " + second);
              rill::detach(both).wait();
              both.destroy();
            }
            // A failed attach fails its detach for the same cause.
            const std::string sized = poison_of(wrong_size);
            expect(says(sized, "values.bin") && says(sized, "needs 8192"), "a wrong size: " + sized);
            expect(poison_of(rill::detach(g.pieces.subregion(1))) == sized, "the detach of a failed attach");

            rill::attach(g.root, {value.id}, file);
            expect(says(misuse_of([&] { rill::release(g.root); }), "not acquired"), "a release without an acquire");
            rill::acquire(g.root);
            expect(says(misuse_of([&] { rill::acquire(g.root); }), "acquired already"), "an acquire twice");
            const std::string reduce = misuse_of([&] {
              rill::launch([](const rill::physical_regions&) {},
                           {rill::req(g.root, {value.id}, rill::reduce_with<rill::reduce::sum<double>>())});
            });
            expect(says(reduce, "attached"), "a reduction on attached points: " + reduce);
            const std::string destroyed = misuse_of([&] { g.root.destroy(); });
            // A file attached read_only: its points may be read, not written.
            grid input;
            rill::attach(input.root, {value.id}, rill::file_resource{input_path, rill::io_mode::read_only});
            expect(wrong_in_region(input.pieces.subregion(2), identity{}) == 0, "a read_only attachment");
            const std::string written = misuse_of([&] { step(input); });
            expect(says(written, "attached read_only") && says(written, "input.bin"),
                   "a write of points attached read_only: " + written);
            rill::detach(input.root).wait();
            expect(wrong_in_region(input.pieces.subregion(2), identity{}) == 0,
                   "a region read from a read_only file lost its data at the detach");
            step(input).wait();
            expect(says(destroyed, "detach it first"), "a tree destroyed while attached: " + destroyed);
            rill::promise<std::string> said;
            rill::launch([](const rill::physical_regions& rs,
                            rill::promise<std::string> out) { out.put(misuse_of([&] { rill::detach(rs[0].reg); })); },
                         {rill::req(g.root, {value.id}, rill::privilege::read_only)}, said);
            const std::string in_task = said.get_future().get();
            expect(says(in_task, "launched task"), "a detach in a launched task: " + in_task);
            rill::detach(g.root).wait();
          }),
      0);
}

// An attach of a missing file is poisoned, and so is every launch that needs its data.
TEST_P(attach, a_missing_file_poisons_the_attach_and_the_launches_that_need_it) {
  const scratch_dir dir;
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          grid g;
                          const rill::event attached = rill::attach(
                              g.root, {value.id}, rill::file_resource{dir / "missing.bin", rill::io_mode::read_only});
                          const std::string why = poison_of(attached);
                          expect(says(why, "missing.bin") && says(why, "No such file"), "a missing file: " + why);
                          const std::string launched = poison_of(
                              rill::index_launch([](const rill::physical_regions&, std::size_t) {}, g.pieces,
                                                 {rill::req(g.pieces, {value.id}, rill::privilege::read_only)}));
                          expect(says(launched, "missing.bin"), "a launch on a missing file's points: " + launched);
                          expect(says(poison_of(rill::detach(g.root)), "missing.bin"), "the detach of a missing file");
                        }),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, attach, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
