// The I/O queue (src/data/io_queue.hpp): a backlog of writes into a file goes to it front to back
// under the elevator whatever order their copies became ready in (and as they came under fifo);
// no more reads and writes of one device run at once than --rill:io-depth; adjacent reads and
// writes waiting at once are fused into one call of at most --rill:io-fuse bytes, and a fused call
// that fails fails only the operations whose own I/O fails. The backlog is made by holding the I/O
// threads in a copy of attached objects whose serialize waits for a gate.
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "data_harness.hpp"
#include "file_harness.hpp"
#include "harness.hpp"
#include "rill/copy.hpp"
#include "rill/external.hpp"
#include "rill/instance.hpp"
#include "rill/opaque.hpp"
#include "rill/task.hpp"

namespace rill_test::io_queue_objects {

// An object whose serialize, run by an I/O thread copying it, says it began and waits for its
// gate (gates[v]).
struct latch {
  std::int64_t v = 0;
};
inline std::atomic<int> held{0};
inline std::array<std::atomic<bool>, 2> gates{};

}  // namespace rill_test::io_queue_objects

template <>
struct rill::serdes<rill_test::io_queue_objects::latch> {
  using latch = rill_test::io_queue_objects::latch;
  static std::size_t size(const latch&) { return 8; }
  static void serialize(const latch& l, std::span<std::byte> out) {
    rill_test::io_queue_objects::held.fetch_add(1);
    while (!rill_test::io_queue_objects::gates.at(static_cast<std::size_t>(l.v)).load()) std::this_thread::yield();
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
using data::poison_of;
using data::says;

class io_queue : public ::testing::TestWithParam<setup> {};

constexpr rill::opaque_field<latch> latches{{7}};
constexpr int pieces = 8;
constexpr rill::coord_t piece_points = 4096;
constexpr std::size_t piece_bytes = 8 * piece_points;
const rill::rect<1> line{0, pieces* piece_points - 1};

rill::rect<1> piece(int k) { return {k * piece_points, (k + 1) * piece_points - 1}; }
std::int64_t value_at(rill::coord_t i) { return 3 * i + 1; }

// (Yielding to the runtime: this rank's messages -- pieces from another rank -- must get through.)
void wait_until(const std::atomic<int>& n, int want) {
  while (n.load() < want) rill::yield();
}
void wait_until_scheduled(std::uint64_t want) {
  while (rill::io_counts_here().scheduled < want) rill::yield();
}

rill::io_counts since(const rill::io_counts& before) {
  rill::io_counts c = rill::io_counts_here();
  c.reads -= before.reads;
  c.writes -= before.writes;
  c.scheduled -= before.scheduled;
  c.seeks_back -= before.seeks_back;
  c.fused -= before.fused;
  return c;
}

// A memory instance of the line holding value_at, on `rank`.
rill::instance line_on(int rank) {
  auto [here, made] = rill::instance::create(rill::memory::system(0), line, rill::field_space{key});
  made.wait();
  {
    rill::accessor<std::int64_t, 1> k(here, key);
    for (rill::coord_t i = 0; i <= line.hi[0]; ++i) k[{i}] = value_at(i);
  }
  if (rank == 0) return here;
  auto [there, made_there] = rill::instance::create(rill::memory::system(rank), line, rill::field_space{key});
  rill::copy(here, there, {key}, made_there).wait();
  here.destroy().wait();
  return there;
}

// The points of the line whose value in `bytes` (the file's, or an instance's) is wrong.
long wrong_points(const std::vector<char>& bytes, int first_piece = 0, int end_piece = pieces) {
  long wrong = 0;
  for (rill::coord_t i = piece(first_piece).lo[0]; i <= piece(end_piece - 1).hi[0]; ++i) {
    std::int64_t v = 0;
    std::memcpy(&v, bytes.data() + 8 * i, 8);
    if (v != value_at(i)) ++wrong;
  }
  return wrong;
}

// On rank 0, `threads` I/O threads each held in a copy out of attached latches (one each), while
// `issue` queues copies into or out of pieces of a file, last piece first: each of them first
// finds where it reads or writes (work of no device, which the I/O threads take before any
// device's). Then the gate opens. With `until_queued`, more latches are queued behind those first
// steps and hold the threads again until the copies' I/O is queued -- when it comes from another
// rank it is queued only once that rank has sent it -- and then open.
class held_io_threads {
 public:
  explicit held_io_threads(int threads) : threads_(threads) {
    held = 0;
    for (auto& g : gates) g = false;
    for (int t = 0; t < 2 * threads; ++t) objects_.push_back(new latch{t < threads ? 0 : 1});
    const rill::rect<1> all{0, 2 * threads - 1};
    auto [latched, attached] = rill::attach_instance(rill::memory::external(0), all, rill::field_space{latches},
                                                     rill::opaque_resource::of(std::span(objects_)));
    auto [copies, made] = rill::instance::create(rill::memory::system(0), all, rill::field_space{latches});
    rill::merge(attached, made).wait();
    latched_ = latched;
    copies_ = copies;
    hold(0);
    wait_until(held, threads_);
  }
  held_io_threads(const held_io_threads&) = delete;
  held_io_threads& operator=(const held_io_threads&) = delete;
  ~held_io_threads() {
    rill::merge(latched_.destroy(), copies_.destroy()).wait();
    for (latch* l : objects_) delete l;
  }

  // Opens the gate once the copies are queued; `io_operations`: how many steps of I/O work they
  // queue in all, to wait for with until_queued.
  void release(bool until_queued, std::uint64_t scheduled_before, std::uint64_t io_operations) {
    if (until_queued) hold(1);
    gates[0] = true;
    if (until_queued) {
      wait_until(held, 2 * threads_);
      // (Each latch copy queues two steps too.)
      wait_until_scheduled(scheduled_before + io_operations + 2 * static_cast<std::uint64_t>(threads_));
      gates[1] = true;
    }
    rill::merge(holds_).wait();
  }

 private:
  void hold(int gate) {
    for (int t = 0; t < threads_; ++t) {
      const rill::coord_t at = gate * threads_ + t;
      holds_.push_back(rill::copy(latched_, copies_, {latches.id}, rill::index_space<1>(rill::rect<1>{at, at})));
    }
  }

  const int threads_;
  std::vector<latch*> objects_;
  rill::instance latched_, copies_;
  std::vector<rill::event> holds_;
};

// Copies every piece of the line from a memory instance on `from_rank` into a file attached on
// rank 0, last piece first, as a backlog behind `threads` held I/O threads (held_io_threads).
// Returns the I/O counts of rank 0 over the copies, and checks the file holds every piece.
rill::io_counts backlog_of_writes(int threads, int from_rank, bool until_queued) {
  const scratch_dir dir;
  const std::string path = dir / "backlog.bin";
  const rill::instance src = line_on(from_rank);
  auto [file, opened] = rill::attach_instance(rill::memory::external(0), line, rill::field_space{key},
                                              rill::file_resource{path, rill::io_mode::write_discard});
  opened.wait();
  rill::io_counts after;
  {
    held_io_threads io(threads);
    const rill::io_counts before = rill::io_counts_here();
    std::vector<rill::event> writes;
    for (int k = pieces - 1; k >= 0; --k)
      writes.push_back(rill::copy(src, file, {key}, rill::index_space<1>(piece(k))));
    if (!until_queued) wait_until_scheduled(before.scheduled + pieces);
    io.release(until_queued, before.scheduled, 2 * pieces);
    rill::merge(writes).wait();
    after = since(before);
  }
  file.destroy().wait();
  const std::vector<char> bytes = bytes_of_file(path);
  expect(bytes.size() == 8 * static_cast<std::size_t>(line.volume()) && wrong_points(bytes) == 0,
         std::to_string(wrong_points(bytes)) + " points of the file written piece by piece are wrong");
  src.destroy().wait();
  return after;
}

// A file of the line, written by `rill` beforehand.
void write_line_file(const std::string& path) {
  const rill::instance src = line_on(0);
  auto [file, opened] = rill::attach_instance(rill::memory::external(0), line, rill::field_space{key},
                                              rill::file_resource{path, rill::io_mode::write_discard});
  rill::copy(src, file, {key}, opened).wait();
  rill::merge(file.destroy(), src.destroy()).wait();
}

// Reads every piece of a file of the line into a memory instance on rank 0, last piece first, as
// a backlog behind one held I/O thread; the file is cut to `kept_pieces` pieces behind the
// runtime's back after it is attached. Returns the I/O counts of the reads, and checks that the
// pieces the file still holds were read right and that the copies of the others failed, naming
// the file.
rill::io_counts backlog_of_reads(int kept_pieces) {
  const scratch_dir dir;
  const std::string path = dir / "line.bin";
  write_line_file(path);
  auto [dst, made] = rill::instance::create(rill::memory::system(0), line, rill::field_space{key});
  auto [file, opened] = rill::attach_instance(rill::memory::external(0), line, rill::field_space{key},
                                              rill::file_resource{path, rill::io_mode::read_only});
  rill::merge(made, opened).wait();
  if (kept_pieces < pieces) fs::resize_file(path, kept_pieces * piece_bytes);
  rill::io_counts after;
  std::vector<rill::event> reads(pieces);
  std::vector<std::string> outcomes(pieces);
  {
    held_io_threads io(1);
    const rill::io_counts before = rill::io_counts_here();
    for (int k = pieces - 1; k >= 0; --k) reads[k] = rill::copy(file, dst, {key}, rill::index_space<1>(piece(k)));
    wait_until_scheduled(before.scheduled + pieces);
    io.release(false, before.scheduled, 0);
    for (int k = 0; k < pieces; ++k) outcomes[k] = poison_of(reads[k]);
    after = since(before);
  }
  for (int k = 0; k < pieces; ++k) {
    const std::string& outcome = outcomes[k];
    if (k < kept_pieces)
      expect(outcome == "no error",
             "the read of piece " + std::to_string(k) + ", which the file holds, failed: " + outcome);
    else
      expect(says(outcome, "file '" + path + "'") && says(outcome, "ended at offset"),
             "the read of piece " + std::to_string(k) + " past the file's new end failed with: " + outcome);
  }
  std::vector<char> bytes(8 * static_cast<std::size_t>(line.volume()));
  {
    rill::accessor<std::int64_t, 1> k(dst, key);
    std::memcpy(bytes.data(), &k[{0}], bytes.size());
  }
  expect(wrong_points(bytes, 0, kept_pieces) == 0,
         std::to_string(wrong_points(bytes, 0, kept_pieces)) + " points read piece by piece are wrong");
  rill::merge(file.destroy(), dst.destroy()).wait();
  return after;
}

std::string counts(const rill::io_counts& c) {
  return std::to_string(c.writes) + " write(s), " + std::to_string(c.reads) + " read(s), " + std::to_string(c.fused) +
         " fused";
}

TEST_P(io_queue, a_backlog_of_writes_goes_to_the_file_front_to_back) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const rill::io_counts c = backlog_of_writes(1, 0, false);
                          expect(c.seeks_back == 0, "the I/O queue wrote a backlog issued last piece first with " +
                                                        std::to_string(c.seeks_back) + " seeks back, not in one sweep");
                        },
                        {"--rill:io-threads=1", "--rill:channels=1", "--rill:io-fuse=0"}),
            0);
}

// The same backlog as it came: every piece starts before the one before it ended. (The one
// channel queues the copies' I/O in the order they were issued.) Nothing is fused.
TEST_P(io_queue, fifo_takes_the_backlog_as_it_came) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const rill::io_counts c = backlog_of_writes(1, 0, false);
                          expect(c.seeks_back == pieces - 1 && c.writes == pieces && c.fused == 0,
                                 "fifo wrote a backlog issued last piece first with " + std::to_string(c.seeks_back) +
                                     " seeks back, not " + std::to_string(pieces - 1) + ", in " + counts(c));
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
                          const rill::io_counts c = backlog_of_writes(2, 0, false);
                          expect(c.most_running == 1, "with --rill:io-depth=1, " + std::to_string(c.most_running) +
                                                          " reads and writes of one device ran at once");
                        },
                        {"--rill:io-threads=2", "--rill:io-depth=1", "--rill:channels=1", "--rill:io-fuse=0"}),
            0);
}

// The backlog's writes, each the next range of the file, are fused: one pwritev writes them all.
// From the last rank, the pieces come in messages, and are fused as they wait all the same.
TEST_P(io_queue, writes_of_adjacent_pieces_waiting_at_once_are_fused_into_one_call) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          for (const int from : {0, rill::rank_n() - 1}) {
                            const rill::io_counts c = backlog_of_writes(1, from, true);
                            expect(c.writes == 1 && c.fused == pieces - 1,
                                   "a backlog of " + std::to_string(pieces) + " adjacent pieces from rank " +
                                       std::to_string(from) + " was written in " + counts(c) + ", not 1 write");
                          }
                        },
                        {"--rill:io-threads=1", "--rill:channels=1"}),
            0);
}

// --rill:io-fuse bounds the bytes of one call (two pieces' here); 0 fuses nothing.
TEST_P(io_queue, io_fuse_bounds_what_one_call_moves) {
  const std::pair<std::string, int> limits[] = {{std::to_string(2 * piece_bytes), pieces / 2}, {"0", pieces}};
  for (const auto& [limit, written_in] : limits)
    EXPECT_EQ(run_checked(GetParam(),
                          [calls = written_in] {
                            const rill::io_counts c = backlog_of_writes(1, 0, true);
                            expect(c.writes == static_cast<std::uint64_t>(calls) &&
                                       c.fused == static_cast<std::uint64_t>(pieces - calls),
                                   "a backlog of " + std::to_string(pieces) + " adjacent pieces was written in " +
                                       counts(c) + ", not " + std::to_string(calls) + " write(s)");
                          },
                          {"--rill:io-threads=1", "--rill:channels=1", "--rill:io-fuse=" + limit}),
              0);
}

// Reads are fused as writes are, and read what the file holds, but ramp up: the first piece alone
// (its task need not wait for the whole backlog), then each call twice the last -- 1, 2, 4 pieces,
// then the one left. Under a limit of two pieces' bytes, 1, 2, 2, 2, 1.
TEST_P(io_queue, reads_of_adjacent_pieces_waiting_at_once_are_fused_in_calls_that_double) {
  const std::pair<std::string, int> limits[] = {{"16M", 4}, {std::to_string(2 * piece_bytes), 5}};
  for (const auto& [limit, read_in] : limits)
    EXPECT_EQ(run_checked(GetParam(),
                          [calls = read_in] {
                            const rill::io_counts c = backlog_of_reads(pieces);
                            expect(c.reads == static_cast<std::uint64_t>(calls) &&
                                       c.fused == static_cast<std::uint64_t>(pieces - calls),
                                   "a backlog of " + std::to_string(pieces) + " adjacent reads was done in " +
                                       counts(c) + ", not " + std::to_string(calls) + " reads");
                          },
                          {"--rill:io-threads=1", "--rill:channels=1", "--rill:io-fuse=" + limit}),
              0);
}

// A fused read that meets the end of a file another program shortened fails only the reads of
// pieces past it: the queue reads each alone again, and the others get their data. (Of the same
// backlog, pieces 3-6 are one read, above: it meets the end at piece 5.)
TEST_P(io_queue, a_fused_call_that_fails_fails_only_the_operations_whose_own_io_fails) {
  EXPECT_EQ(run_checked(GetParam(), [] { backlog_of_reads(5); }, {"--rill:io-threads=1", "--rill:channels=1"}), 0);
}

// A whole copy of a memory instance into a file over more points writes its points' range of the
// file, from its own bytes, and nothing else (the range the queue moves is the copy's points').
TEST_P(io_queue, a_whole_copy_into_a_larger_file_writes_only_its_points) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const scratch_dir dir;
                          const std::string path = dir / "larger.bin";
                          const rill::rect<1> middle = piece(3);
                          auto [src, made] =
                              rill::instance::create(rill::memory::system(0), middle, rill::field_space{key});
                          auto [file, opened] =
                              rill::attach_instance(rill::memory::external(0), line, rill::field_space{key},
                                                    rill::file_resource{path, rill::io_mode::write_discard});
                          made.wait();
                          {
                            rill::accessor<std::int64_t, 1> k(src, key);
                            for (rill::coord_t i = middle.lo[0]; i <= middle.hi[0]; ++i) k[{i}] = value_at(i);
                          }
                          rill::copy(src, file, {key}, opened).wait();
                          rill::merge(file.destroy(), src.destroy()).wait();
                          const std::vector<char> bytes = bytes_of_file(path);
                          long wrong = 0;
                          for (rill::coord_t i = 0; i <= line.hi[0]; ++i) {
                            std::int64_t v = 0;
                            std::memcpy(&v, bytes.data() + 8 * i, 8);
                            if (v != (middle.contains(rill::point<1>{i}) ? value_at(i) : 0)) ++wrong;
                          }
                          expect(bytes.size() == 8 * static_cast<std::size_t>(line.volume()) && wrong == 0,
                                 std::to_string(wrong) + " points of the file are wrong after a whole copy of piece 3");
                        },
                        {"--rill:io-threads=1"}),
            0);
}

INSTANTIATE_TEST_SUITE_P(setups, io_queue, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
