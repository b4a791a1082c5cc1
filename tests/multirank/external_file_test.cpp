// Files attached as external instances (rill/external.hpp): data round-trips bit-exact through
// files in every layout, in 1-3 dimensions, attached on one rank and copied to and from another;
// nothing is read or written until a copy; the I/O runs on I/O threads while every worker is busy;
// write_discard replaces a file whole at the destroy; and every bad input poisons the operation
// that met it, naming the file and the cause.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data_harness.hpp"
#include "file_harness.hpp"
#include "harness.hpp"
#include "rill/copy.hpp"
#include "rill/external.hpp"
#include "rill/instance.hpp"
#include "rill/proc.hpp"
#include "rill/reduction.hpp"

namespace rill_test {
namespace {

class external_files : public ::testing::TestWithParam<setup> {};

using namespace data;  // NOLINT(google-build-using-namespace): the suite's shared names

template <int N>
rill::instance in_memory(int rank, const rill::index_space<N>& space, const rill::layout& l = rill::layout::soa()) {
  auto [inst, ready] = rill::instance::create(rill::memory::system(rank), space, fields, l);
  ready.wait();
  return inst;
}

template <int N>
rill::instance attached(int rank, const rill::index_space<N>& space, const std::string& path, rill::io_mode mode,
                        const rill::layout& l = rill::layout::soa()) {
  auto [inst, ready] =
      rill::attach_instance(rill::memory::external(rank), space, fields, rill::file_resource{path, mode}, l);
  ready.wait();
  return inst;
}

// On the instance's rank: key and weight of every point of `space` from code_of(p, salt), flag 9.
template <int N>
void write_codes(rill::instance inst, const rill::index_space<N>& space, std::int64_t salt) {
  rill::rpc(
      inst.owner(),
      [](rill::instance i, const rill::index_space<N>& s, std::int64_t sa) {
        rill::accessor<std::int64_t, N> k(i, key);
        rill::accessor<double, N> w(i, weight);
        rill::accessor<std::uint8_t, N> f(i, flag);
        s.for_each_point([&](const rill::point<N>& p) {
          k[p] = code_of(p, sa);
          w[p] = static_cast<double>(code_of(p, sa)) / 4;
          f[p] = 9;
        });
      },
      inst, space, salt)
      .get();
}

// On the instance's rank: the points of `space` whose fields are not code_of(p, salt) (of the
// salt `old_salt` outside `changed`).
template <int N>
long wrong_points(rill::instance inst, const rill::index_space<N>& space, std::int64_t salt,
                  const rill::index_space<N>& changed, std::int64_t old_salt) {
  return rill::rpc(
             inst.owner(),
             [](rill::instance i, const rill::index_space<N>& s, std::int64_t sa, const rill::index_space<N>& c,
                std::int64_t old) {
               rill::accessor<std::int64_t, N> k(i, key);
               rill::accessor<double, N> w(i, weight);
               rill::accessor<std::uint8_t, N> f(i, flag);
               long wrong = 0;
               s.for_each_point([&](const rill::point<N>& p) {
                 const std::int64_t want = code_of(p, c.contains(p) ? sa : old);
                 if (k[p] != want || w[p] != static_cast<double>(want) / 4 || f[p] != 9) ++wrong;
               });
               return wrong;
             },
             inst, space, salt, changed, old_salt)
      .get();
}

rill::io_counts io_counts_of(int rank) {
  return rill::rpc(rank, [] { return rill::io_counts_here(); }).get();
}

// Written through a file attached on rank `at` from memory on rank `mem`, read back into memory on
// the other; then a part rewritten in place (read_write) and read back again.
template <int N>
void round_trip(const scratch_dir& dir, const rill::index_space<N>& space, const rill::index_space<N>& part) {
  const int last = rill::rank_n() - 1;
  std::vector<int> reversed;
  for (int d = N - 1; d >= 0; --d) reversed.push_back(d);
  const std::vector<rill::layout> layouts{rill::layout::soa(), rill::layout::aos(),
                                          rill::layout::grouped({{weight.id, key.id}}).order(reversed)};
  std::int64_t salt = 0;
  for (const auto& [at, mem] : std::vector<std::pair<int, int>>{{0, last}, {last, 0}, {0, 0}})
    for (const rill::layout& file_layout : layouts) {
      salt += 2;
      const std::string path = dir / ("grid" + std::to_string(N) + "-" + std::to_string(salt) + ".bin");
      const rill::instance src = in_memory(mem, space, rill::layout::aos());
      write_codes<N>(src, space, salt);
      const rill::instance out = attached(at, space, path, rill::io_mode::write_discard, file_layout);
      rill::copy(src, out, {key, weight, flag}).wait();
      out.destroy().wait();

      const rill::instance in = attached(at, space, path, rill::io_mode::read_only, file_layout);
      const rill::instance back = in_memory(at == mem ? last : at, space);
      rill::copy(in, back, {key, weight, flag}).wait();
      const long wrong = wrong_points<N>(back, space, salt, space, salt);
      expect(wrong == 0, std::to_string(wrong) + " point(s) wrong after a round trip through a file on rank " +
                             std::to_string(at) + " from rank " + std::to_string(mem));
      in.destroy().wait();

      // A part rewritten in place, from memory, the rest of the file untouched.
      write_codes<N>(src, space, salt + 1);
      const rill::instance rw = attached(at, space, path, rill::io_mode::read_write, file_layout);
      rill::copy(src, rw, {key, weight, flag}, part).wait();
      rill::copy(rw, back, {key, weight, flag}).wait();
      expect(wrong_points<N>(back, space, salt + 1, part, salt) == 0, "a partial write in place left points wrong");
      rw.destroy().wait();
      src.destroy().wait();
      back.destroy().wait();
    }
}

TEST_P(external_files, round_trip_bit_exact_in_every_layout_and_dimension_between_ranks) {
  const scratch_dir dir;
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          round_trip<1>(dir, rill::index_space<1>(rill::rect<1>{-3, 60}),
                                        rill::index_space<1>::from_points(
                                            std::vector<rill::point<1>>{{-3}, {0}, {1}, {2}, {30}, {59}, {60}}));
                          const rill::index_space<2> grid(rill::rect<2>{{0, 0}, {11, 7}});  // not square
                          round_trip<2>(dir, grid, grid.subtract(rill::rect<2>{{2, 2}, {9, 5}}));
                          std::vector<rill::point<3>> pts;
                          for (int i = 0; i < 40; ++i) pts.push_back({i % 4, (i * 3) % 5, (i * 7) % 3});
                          round_trip<3>(dir, rill::index_space<3>(rill::rect<3>{{0, 0, 0}, {3, 4, 2}}),
                                        rill::index_space<3>::from_points(pts));
                        }),
            0);
}

// A file written by another program -- a 2-D matrix of doubles, dimension 0 fastest -- is a
// one-field struct-of-arrays instance: read bit-exact, and written back as the same bytes.
constexpr int rows = 37, cols = 23;
TEST_P(external_files, a_file_is_the_instance_layout_as_bytes) {
  const scratch_dir dir;
  const std::string path = dir / "matrix.bin";
  {
    std::ofstream out(path, std::ios::binary);
    for (int j = 0; j < cols; ++j)
      for (int i = 0; i < rows; ++i) {
        const double v = i * 1000.5 + j;
        out.write(reinterpret_cast<const char*>(&v), sizeof v);
      }
  }
  const std::vector<char> before = bytes_of_file(path);
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          constexpr rill::field<double> value{7};
                          const rill::rect<2> m{{0, 0}, {rows - 1, cols - 1}};
                          const int last = rill::rank_n() - 1;
                          auto [file, ready] =
                              rill::attach_instance(rill::memory::external(last), m, rill::field_space{value},
                                                    rill::file_resource{path, rill::io_mode::read_write});
                          auto [mem, made] =
                              rill::instance::create(rill::memory::system(0), m, rill::field_space{value});
                          rill::copy(file, mem, {value.id}, rill::merge(ready, made)).wait();
                          const long wrong = rill::rpc(
                                                 0,
                                                 [](rill::instance i) {
                                                   rill::accessor<double, 2> a(i, rill::field<double>{7});
                                                   long bad = 0;
                                                   for (int j = 0; j < cols; ++j)
                                                     for (int r = 0; r < rows; ++r)
                                                       if (a[{r, j}] != r * 1000.5 + j) ++bad;
                                                   return bad;
                                                 },
                                                 mem)
                                                 .get();
                          expect(wrong == 0, std::to_string(wrong) + " element(s) read wrong from a matrix file");
                          rill::copy(mem, file, {value.id}).wait();
                          file.destroy().wait();
                          mem.destroy().wait();
                        }),
            0);
  EXPECT_EQ(bytes_of_file(path), before) << "writing the same data back changed the file's bytes";
}

// Attaching opens and checks the file and moves no data; copies do, on the attaching rank.
TEST_P(external_files, attach_does_no_io_until_a_copy) {
  const scratch_dir dir;
  const std::string path = dir / "lazy.bin";
  EXPECT_EQ(run_checked(
                GetParam(),
                [&] {
                  const int last = rill::rank_n() - 1;
                  const rill::index_space<1> line(rill::rect<1>{0, 999});
                  const rill::instance src = in_memory(0, line);
                  write_codes<1>(src, line, 3);
                  const rill::io_counts before = io_counts_of(last);
                  const rill::instance file = attached(last, line, path, rill::io_mode::write_discard);
                  const rill::io_counts after_attach = io_counts_of(last);
                  expect(after_attach.attached == before.attached + 1, "an attach was not counted");
                  expect(after_attach.reads == before.reads && after_attach.writes == before.writes,
                         "attaching read or wrote data");
                  rill::copy(src, file, {key, weight, flag}).wait();
                  const rill::io_counts after_copy = io_counts_of(last);
                  expect(after_copy.writes > before.writes, "a copy into a file wrote nothing");
                  expect(after_copy.bytes_written - before.bytes_written == 1000 * (8 + 8 + 1),
                         "a copy into a file wrote " + std::to_string(after_copy.bytes_written - before.bytes_written) +
                             " bytes, not the 17,000 of its points");
                  expect(after_copy.reads == before.reads, "a copy into a file read it");
                  file.destroy().wait();
                  expect(io_counts_of(last).syncs > after_copy.syncs, "destroying a written file synced nothing");
                  src.destroy().wait();
                }),
            0);
}

// A task that never yields waits for a copy out of a file while every other worker of its rank
// does the same, with no data-movement channel: only an I/O thread can do the read.
TEST_P(external_files, io_runs_while_every_worker_runs_a_task_that_does_not_yield) {
  const scratch_dir dir;
  const std::string path = dir / "busy.bin";
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          const int last = rill::rank_n() - 1;
                          const rill::index_space<1> line(rill::rect<1>{0, 99'999});
                          const rill::instance src = in_memory(last, line);
                          write_codes<1>(src, line, 4);
                          const rill::instance file = attached(last, line, path, rill::io_mode::write_discard);
                          const rill::instance dst = in_memory(last, line);
                          const bool moved =
                              rill::rpc(
                                  last,
                                  [](rill::instance s, rill::instance f, rill::instance d, int workers) {
                                    const rill::event done =
                                        rill::copy(f, d, {key, weight, flag}, rill::copy(s, f, {key, weight, flag}));
                                    const auto spin = [](rill::event e) {
                                      const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
                                      while (!e.has_triggered() && std::chrono::steady_clock::now() < give_up) {
                                      }
                                    };
                                    for (int w = 1; w < workers; ++w) rill::proc::here().spawn(spin, done);
                                    spin(done);
                                    return done.has_triggered();
                                  },
                                  src, file, dst, GetParam().workers)
                                  .get();
                          expect(moved, "a copy through a file did not move while the workers ran tasks");
                          expect(wrong_points<1>(dst, line, 4, line, 4) == 0,
                                 "a copy through a file left points wrong");
                          file.destroy().wait();
                          src.destroy().wait();
                          dst.destroy().wait();
                        },
                        {"--rill:channels=0"}),
            0);
}

// write_discard builds the new file beside the old one: until the destroy, the path holds the
// old bytes; after it, the new ones, and no temporary file is left.
TEST_P(external_files, write_discard_replaces_the_file_whole_at_the_destroy) {
  const scratch_dir dir;
  const std::string path = dir / "state.bin";
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          const rill::index_space<1> line(rill::rect<1>{0, 4095});
                          constexpr rill::field<double> value{7};
                          const rill::field_space one{value};
                          write_file(path, 4096 * sizeof(double), 'x');
                          const std::vector<char> old = bytes_of_file(path);
                          const int last = rill::rank_n() - 1;
                          auto [file, ready] =
                              rill::attach_instance(rill::memory::external(last), line, one,
                                                    rill::file_resource{path, rill::io_mode::write_discard});
                          rill::fill(file, value, 2.5, ready).wait();
                          expect(bytes_of_file(path) == old, "the file changed before its instance was destroyed");
                          file.destroy().wait();
                          const std::vector<char> now = bytes_of_file(path);
                          expect(now.size() == 4096 * sizeof(double), "the new file has the wrong size");
                          double v = 0;
                          std::memcpy(&v, now.data() + 100 * sizeof(double), sizeof v);
                          expect(v == 2.5, "the new file does not hold what was written");
                          expect(dir.names() == std::vector<std::string>{"state.bin"},
                                 "a temporary file was left beside the new one");
                        }),
            0);
}

TEST_P(external_files, bad_input_is_refused_naming_the_file_and_the_cause) {
  const scratch_dir dir;
  const std::string small = dir / "small.bin", locked = dir / "locked.bin";
  write_file(small, 100, 'a');
  write_file(locked, 64 * 8, 'b');
  ::chmod(locked.c_str(), 0444);
  EXPECT_EQ(
      run_checked(
          GetParam(),
          [&] {
            const int last = rill::rank_n() - 1;
            constexpr rill::field<double> value{7};
            const rill::field_space one{value};
            const rill::rect<1> line{0, 63};
            const auto attach_error = [&](const std::string& path, rill::io_mode mode) {
              return poison_of(
                  rill::attach_instance(rill::memory::external(last), line, one, rill::file_resource{path, mode})
                      .ready);
            };
            const std::string missing = attach_error(dir / "missing.bin", rill::io_mode::read_only);
            expect(says(missing, "missing.bin") && says(missing, "No such file"), "a missing file: " + missing);
            const std::string wrong_size = attach_error(small, rill::io_mode::read_only);
            expect(says(wrong_size, "small.bin") && says(wrong_size, "has 100 bytes") && says(wrong_size, "needs 512"),
                   "a file of the wrong size: " + wrong_size);
            const std::string read_only = attach_error(locked, rill::io_mode::read_write);
            expect(says(read_only, "locked.bin") && says(read_only, "read-only"),
                   "a read-only file attached read_write: " + read_only);
            const std::string no_dir = attach_error(dir / "no/such/dir/new.bin", rill::io_mode::write_discard);
            expect(says(no_dir, "new.bin") && says(no_dir, "cannot be created"),
                   "a file in a missing directory: " + no_dir);

            // Attached read_only, it takes no copy in; it gives no address; it takes no reduction.
            auto [file, ready] = rill::attach_instance(rill::memory::external(last), line, one,
                                                       rill::file_resource{locked, rill::io_mode::read_only});
            ready.wait();
            auto [mem, made] = rill::instance::create(rill::memory::system(0), line, one);
            made.wait();
            rill::copy(file, mem, {value.id}).wait();  // reading is allowed
            const std::string into = poison_of(rill::copy(mem, file, {value.id}));
            expect(says(into, "locked.bin") && says(into, "read_only"), "a copy into a read-only attachment: " + into);
            const std::string access =
                rill::rpc(
                    last,
                    [](rill::instance f) {
                      return misuse_of([&] { rill::accessor<double, 1> a(f, rill::field<double>{7}); });
                    },
                    file)
                    .get();
            expect(says(access, "locked.bin") && says(access, "no address"),
                   "an accessor on an attached file: " + access);
            const std::string reduce =
                misuse_of([&] { (void)rill::reduce_into<rill::reduce::sum<double>>(mem, value.id, file, value.id); });
            expect(says(reduce, "external memory"), "a reduction into an attached file: " + reduce);
            const std::string create =
                misuse_of([&] { (void)rill::instance::create(rill::memory::external(0), line, one); });
            expect(says(create, "attach"), "an instance made in external memory: " + create);
            const std::string in_system = misuse_of([&] {
              (void)rill::attach_instance(rill::memory::system(0), line, one,
                                          rill::file_resource{locked, rill::io_mode::read_only});
            });
            expect(says(in_system, "external memory"), "a file attached in system memory: " + in_system);
            file.destroy().wait();
            mem.destroy().wait();
          }),
      0);
  EXPECT_EQ(bytes_of_file(locked), std::vector<char>(64 * 8, 'b')) << "a refused operation changed a file";
}

// A file system with no room: the attach of a write_discard file that does not fit is poisoned
// naming the cause, and the file it would have replaced is whole.
TEST_P(external_files, a_full_disk_poisons_the_attach_and_loses_nothing) {
  const scratch_dir dir;
  const std::string mount_point = dir / "small-fs";
  fs::create_directory(mount_point);
  ASSERT_EQ(::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=256k"), 0)
      << "mounting a 256 KiB tmpfs for the test failed: " << std::strerror(errno) << " (the tests run as root)";
  const std::string path = mount_point + "/big.bin";
  write_file(path, 128 * 1024, 'k');
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          constexpr rill::field<double> value{7};
                          const rill::rect<1> line{0, 64 * 1024 - 1};  // 512 KiB
                          const std::string full =
                              poison_of(rill::attach_instance(rill::memory::external(rill::rank_n() - 1), line,
                                                              rill::field_space{value},
                                                              rill::file_resource{path, rill::io_mode::write_discard})
                                            .ready);
                          expect(says(full, "big.bin") && says(full, "No space left"), "a full disk: " + full);
                        }),
            0);
  EXPECT_EQ(bytes_of_file(path), std::vector<char>(128 * 1024, 'k')) << "the old file was not kept whole";
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(mount_point)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"big.bin"}) << "a temporary file was left on the full file system";
  ::umount(mount_point.c_str());
}

INSTANTIATE_TEST_SUITE_P(setups, external_files, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
