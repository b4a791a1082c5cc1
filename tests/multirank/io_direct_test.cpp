// Direct I/O (--rill:io-direct): a raw file's reads and writes of at least the threshold, between
// the file and memory of its rank, bypass the page cache where the file system takes O_DIRECT -- the aligned blocks in
// their middle, the unaligned ends through the cache -- and the data is the same whichever way each part went: a direct
// read sees what a write through the cache left, and a read through the cache what a direct write left. Below the
// threshold, with 0, or on a file system without direct I/O, nothing goes direct.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "file_harness.hpp"
#include "harness.hpp"
#include "rill/copy.hpp"
#include "rill/external.hpp"
#include "rill/instance.hpp"
#include "rill/proc.hpp"

namespace rill_test {
namespace {

class io_direct : public ::testing::TestWithParam<setup> {};

constexpr rill::field<double> value{1};
constexpr rill::coord_t points = 64 * 1024;  // 512 KiB of doubles
const rill::rect<1> line{0, points - 1};

double old_value(rill::coord_t i) { return static_cast<double>(i) * 0.5; }
double new_value(rill::coord_t i, double salt) { return static_cast<double>(i) * 3 + salt; }

void write_old_values(const std::string& path) {
  std::vector<double> v(points);
  for (rill::coord_t i = 0; i < points; ++i) v[static_cast<std::size_t>(i)] = old_value(i);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(double)));
}

std::vector<double> values_in_file(const std::string& path) {
  const std::vector<char> bytes = bytes_of_file(path);
  std::vector<double> out(bytes.size() / sizeof(double));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(double));
  return out;
}

rill::instance in_memory(int rank, double salt) {
  auto [inst, ready] = rill::instance::create(rill::memory::system(rank), line, rill::field_space{value});
  ready.wait();
  rill::rpc(
      rank,
      [](rill::instance i, double s) {
        rill::accessor<double, 1> v(i, value);
        for (rill::coord_t p = 0; p < points; ++p) v[rill::point<1>{p}] = new_value(p, s);
      },
      inst, salt)
      .get();
  return inst;
}

// The points of `inst` (on its rank) in `over` whose value is not want(p).
template <class F>
long wrong_in(rill::instance inst, const rill::rect<1>& over, F) {
  return rill::rpc(
             inst.owner(),
             [](rill::instance i, rill::rect<1> o) {
               rill::accessor<double, 1> v(i, value);
               long bad = 0;
               for (rill::coord_t p = o.lo[0]; p <= o.hi[0]; ++p) bad += v[rill::point<1>{p}] != F{}(p) ? 1 : 0;
               return bad;
             },
             inst, over)
      .get();
}
struct salted_one {
  double operator()(rill::coord_t i) const { return new_value(i, 1); }
};
struct salted_two {
  double operator()(rill::coord_t i) const { return new_value(i, 2); }
};

// The file at `path` attached read_write on `rank`, and its ready event.
rill::created_instance attached_file(int rank, const std::string& path) {
  return rill::attach_instance(rill::memory::external(rank), line, rill::field_space{value},
                               rill::file_resource{path, rill::io_mode::read_write});
}

std::uint64_t direct_bytes_of(int rank) {
  return rill::rpc(rank, [] { return rill::io_counts_here().bytes_direct; }).get();
}

// The file's points in [lo, hi] hold new_value(salt), the others old_value: how many do not.
long wrong_in_file(const std::string& path, rill::coord_t lo, rill::coord_t hi, double salt) {
  const std::vector<double> v = values_in_file(path);
  if (v.size() != static_cast<std::size_t>(points)) return points;
  long bad = 0;
  for (rill::coord_t i = 0; i < points; ++i)
    bad += v[static_cast<std::size_t>(i)] != (i >= lo && i <= hi ? new_value(i, salt) : old_value(i)) ? 1 : 0;
  return bad;
}

// A whole write and a whole read go direct; a write of a few points between them goes through the
// cache, and the direct read sees it; a read of a few points through the cache after a direct
// write sees that.
TEST_P(io_direct, large_transfers_go_direct_and_agree_with_the_cache) {
  const scratch_dir dir;
  const std::string path = dir / "values.bin";
  write_old_values(path);
  const bool direct = direct_io_in(dir);
  EXPECT_EQ(
      run_checked(GetParam(),
                  [&] {
                    const int last = rill::rank_n() - 1;
                    const std::uint64_t before = direct_bytes_of(last);
                    auto [file, attached] = attached_file(last, path);
                    attached.wait();
                    const rill::instance one = in_memory(last, 1), two = in_memory(last, 2);
                    rill::copy(one, file, {value.id}).wait();
                    expect(wrong_in_file(path, 0, points - 1, 1) == 0, "the direct write did not reach the file");
                    const std::uint64_t whole = static_cast<std::uint64_t>(points) * sizeof(double);
                    expect(direct_bytes_of(last) - before == (direct ? whole : 0),
                           "the whole write moved " + std::to_string(direct_bytes_of(last) - before) + " bytes direct");
                    // A few points through the cache, then a direct read of them all.
                    const rill::rect<1> few{100, 163};
                    rill::copy(two, file, {value.id}, few).wait();
                    expect(direct_bytes_of(last) - before == (direct ? whole : 0), "a write of 64 points went direct");
                    const rill::instance back = in_memory(last, 7);
                    rill::copy(file, back, {value.id}).wait();
                    expect(direct_bytes_of(last) - before == (direct ? 2 * whole : 0),
                           "the whole read did not go direct");
                    expect(wrong_in(back, few, salted_two{}) == 0, "a direct read missed a write through the cache");
                    expect(wrong_in(back, rill::rect<1>{0, 99}, salted_one{}) == 0 &&
                               wrong_in(back, rill::rect<1>{164, points - 1}, salted_one{}) == 0,
                           "a direct read saw other data");
                    // A direct write, then a read of a few points through the cache.
                    rill::copy(two, file, {value.id}).wait();
                    const rill::instance small = in_memory(last, 9);
                    rill::copy(file, small, {value.id}, few).wait();
                    expect(wrong_in(small, few, salted_two{}) == 0, "a read through the cache missed a direct write");
                    file.destroy().wait();
                    expect(wrong_in_file(path, 0, points - 1, 2) == 0, "the file does not hold the last write");
                  },
                  {"--rill:io-direct=64KiB"}),
      0);
}

// A piece that starts and ends off the blocks goes direct in its middle only; the points around
// it keep their data.
TEST_P(io_direct, an_unaligned_piece_goes_direct_in_its_middle) {
  const scratch_dir dir;
  const std::string path = dir / "values.bin";
  write_old_values(path);
  const bool direct = direct_io_in(dir);
  EXPECT_EQ(run_checked(GetParam(),
                        [&] {
                          const int last = rill::rank_n() - 1;
                          const std::uint64_t before = direct_bytes_of(last);
                          auto [file, attached] = attached_file(last, path);
                          const rill::instance one = in_memory(last, 1);
                          const rill::rect<1> piece{3, points - 6};
                          rill::copy(one, file, {value.id}, piece, attached).wait();
                          const std::uint64_t moved = direct_bytes_of(last) - before;
                          const std::uint64_t piece_bytes = piece.volume() * sizeof(double);
                          expect(direct ? moved > 0 && moved < piece_bytes && moved % 512 == 0 : moved == 0,
                                 "the piece moved " + std::to_string(moved) + " of its " + std::to_string(piece_bytes) +
                                     " bytes direct");
                          file.destroy().wait();
                          expect(wrong_in_file(path, 3, points - 6, 1) == 0,
                                 "the piece, or the points around it, do not hold their data");
                        },
                        {"--rill:io-direct=64KiB"}),
            0);
}

// Below the threshold, or with --rill:io-direct=0, everything goes through the cache.
TEST_P(io_direct, small_transfers_and_off_go_through_the_cache) {
  const scratch_dir dir;
  const std::string path = dir / "values.bin";
  for (const char* flag : {"--rill:io-direct=1MiB", "--rill:io-direct=0"}) {
    write_old_values(path);
    EXPECT_EQ(run_checked(GetParam(),
                          [&] {
                            const int last = rill::rank_n() - 1;
                            const std::uint64_t before = direct_bytes_of(last);
                            auto [file, attached] = attached_file(last, path);
                            const rill::instance one = in_memory(last, 1);
                            rill::copy(one, file, {value.id}, attached).wait();
                            expect(direct_bytes_of(last) == before,
                                   std::string("with ") + flag + ", a 512 KiB write went direct");
                            file.destroy().wait();
                            expect(wrong_in_file(path, 0, points - 1, 1) == 0, "the write did not reach the file");
                          },
                          {flag}),
              0)
        << flag;
  }
}

INSTANTIATE_TEST_SUITE_P(setups, io_direct, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
