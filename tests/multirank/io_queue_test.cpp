// The I/O queue (src/data/io_queue.hpp): a backlog of writes into a file goes to it front to back
// under the elevator whatever order their copies became ready in (and as they came under fifo),
// and no more reads and writes of one device run at once than --rill:io-depth. The backlog is made
// by holding the I/O threads in a copy of attached objects whose serialize waits for a gate.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "data_harness.hpp"
#include "file_harness.hpp"
#include "harness.hpp"
#include "rill/copy.hpp"
#include "rill/external.hpp"
#include "rill/instance.hpp"
#include "rill/opaque.hpp"

namespace rill_test::io_queue_objects {

// An object whose serialize, run by an I/O thread copying it, says it began and waits for the gate.
struct latch {
  std::int64_t v = 0;
};
inline std::atomic<int> held{0};
inline std::atomic<bool> open{false};

}  // namespace rill_test::io_queue_objects

template <>
struct rill::serdes<rill_test::io_queue_objects::latch> {
  using latch = rill_test::io_queue_objects::latch;
  static std::size_t size(const latch&) { return 8; }
  static void serialize(const latch& l, std::span<std::byte> out) {
    rill_test::io_queue_objects::held.fetch_add(1);
    while (!rill_test::io_queue_objects::open.load()) std::this_thread::yield();
    std::memcpy(out.data(), &l.v, 8);
  }
  static latch* deserialize(std::span<const std::byte> in) {
    auto* l = new latch;
    std::memcpy(&l->v, in.data(), 8);
    return l;
  }
  static void destroy(latch* l) { delete l; }
};

namespace rill_test {
namespace {

using namespace io_queue_objects;  // NOLINT(google-build-using-namespace): the suite's shared names
using data::key;

class io_queue : public ::testing::TestWithParam<setup> {};

constexpr rill::opaque_field<latch> latches{{7}};
constexpr int pieces = 8;
constexpr rill::coord_t piece_points = 4096;
const rill::rect<1> line{0, pieces* piece_points - 1};

rill::rect<1> piece(int k) { return {k * piece_points, (k + 1) * piece_points - 1}; }

void wait_until(const std::atomic<int>& n, int want) {
  while (n.load() < want) std::this_thread::yield();
}
void wait_until_scheduled(std::uint64_t want) {
  while (rill::io_counts_here().scheduled < want) std::this_thread::yield();
}

// On rank 0 with `threads` I/O threads: each held in a copy out of attached latches (one latch
// each) -- then one copy per piece of a memory instance into an attached file, issued last piece
// first, queued behind them (each first finds where it writes: work of no device, which the I/O
// threads take before any write); then the gate opens. Returns the I/O counts of the copies into
// the file, and checks the file holds every piece.
rill::io_counts backlog_of_pieces(int threads) {
  held = 0;
  open = false;
  const scratch_dir dir;
  const std::string path = dir / "backlog.bin";
  std::vector<latch*> objects;
  for (int t = 0; t < threads; ++t) objects.push_back(new latch{t});
  auto [latched, attached] =
      rill::attach_instance(rill::memory::external(0), rill::rect<1>{0, threads - 1}, rill::field_space{latches},
                            rill::opaque_resource::of(std::span(objects)));
  auto [copies, made] =
      rill::instance::create(rill::memory::system(0), rill::rect<1>{0, threads - 1}, rill::field_space{latches});
  auto [src, made_src] = rill::instance::create(rill::memory::system(0), line, rill::field_space{key});
  auto [file, opened] = rill::attach_instance(rill::memory::external(0), line, rill::field_space{key},
                                              rill::file_resource{path, rill::io_mode::write_discard});
  rill::merge(attached, made, made_src, opened).wait();
  {
    rill::accessor<std::int64_t, 1> k(src, key);
    for (rill::coord_t i = 0; i <= line.hi[0]; ++i) k[{i}] = 3 * i + 1;
  }
  std::vector<rill::event> gates;
  for (int t = 0; t < threads; ++t) {
    const rill::index_space<1> one(rill::rect<1>{t, t});
    gates.push_back(rill::copy(latched, copies, {latches.id}, one));
  }
  wait_until(held, threads);
  const rill::io_counts before = rill::io_counts_here();
  std::vector<rill::event> writes;
  for (int k = pieces - 1; k >= 0; --k) writes.push_back(rill::copy(src, file, {key}, rill::index_space<1>(piece(k))));
  wait_until_scheduled(before.scheduled + pieces);
  open = true;
  rill::merge(gates).wait();
  rill::merge(writes).wait();
  rill::io_counts after = rill::io_counts_here();
  after.scheduled -= before.scheduled;
  after.seeks_back -= before.seeks_back;
  after.writes -= before.writes;
  file.destroy().wait();
  const std::vector<char> bytes = bytes_of_file(path);
  long wrong = 0;
  for (rill::coord_t i = 0; i <= line.hi[0]; ++i) {
    std::int64_t v = 0;
    std::memcpy(&v, bytes.data() + 8 * i, 8);
    if (v != 3 * i + 1) ++wrong;
  }
  expect(bytes.size() == 8 * static_cast<std::size_t>(line.volume()) && wrong == 0,
         std::to_string(wrong) + " points of the file written piece by piece are wrong");
  rill::merge(latched.destroy(), copies.destroy(), src.destroy()).wait();
  for (latch* l : objects) delete l;
  return after;
}

TEST_P(io_queue, a_backlog_of_writes_goes_to_the_file_front_to_back) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const rill::io_counts c = backlog_of_pieces(1);
                          expect(c.seeks_back == 0, "the I/O queue wrote a backlog issued last piece first with " +
                                                        std::to_string(c.seeks_back) + " seeks back, not in one sweep");
                        },
                        {"--rill:io-threads=1", "--rill:channels=1"}),
            0);
}

// The same backlog as it came: every piece starts before the one before it ended. (The one
// channel queues the copies' I/O in the order they were issued.)
TEST_P(io_queue, fifo_takes_the_backlog_as_it_came) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const rill::io_counts c = backlog_of_pieces(1);
                          expect(c.seeks_back == pieces - 1, "fifo wrote a backlog issued last piece first with " +
                                                                 std::to_string(c.seeks_back) + " seeks back, not " +
                                                                 std::to_string(pieces - 1));
                        },
                        {"--rill:io-threads=1", "--rill:channels=1", "--rill:io-order=fifo"}),
            0);
}

// Two I/O threads released at once onto a backlog of one device: with io-depth 1 only one writes.
// (Not necessarily in one sweep: while one thread still finds where the last copies write, the
// other may start on the writes queued so far, and the sweep wraps round for the rest.)
TEST_P(io_queue, one_device_runs_at_most_io_depth_operations_at_once) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const rill::io_counts c = backlog_of_pieces(2);
                          expect(c.most_running == 1, "with --rill:io-depth=1, " + std::to_string(c.most_running) +
                                                          " reads and writes of one device ran at once");
                        },
                        {"--rill:io-threads=2", "--rill:io-depth=1", "--rill:channels=1"}),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, io_queue, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
