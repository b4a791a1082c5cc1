// IOQ (issue 22; Iris §IV-A: the runtime reorders the I/O it knows is pending): a file read back
// piece by piece, the pieces asked for in a random order -- as the tasks of an irregular program
// would, each for its own piece -- with the file's pages dropped from the page cache before each
// variant, so that every read goes to the disk. One rank.
//
//   rill       one copy per piece from the file attached as an instance into memory, issued in
//              the random order all at once: the I/O queue takes them in its order
//              (--rill:io-order: elevator sorts the backlog by offset, fifo keeps the random order)
//              and, under the elevator, fuses the reads of adjacent pieces waiting at once into
//              one preadv (--rill:io-fuse; 0: each piece its own pread).
//   sequential (peer) one thread reads the file front to back in pieces of the same size: the disk's best.
//   random     (peer) one thread reads the pieces in the random order: what the order asked for costs.
//
// Metric: time to read every piece (ms). The experiment runs once per --rill:io-order (bench/run
// IOQ runs both); what is compared is each one's ratio to the peers of its own run. Check: the
// memory instance holds the file's bytes (else exit 1).
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "rill/copy.hpp"
#include "rill/external.hpp"
#include "rill/instance.hpp"
#include "rill/rill.hpp"

namespace {

constexpr rill::field<std::uint64_t> word{1};

std::uint64_t word_at(std::uint64_t i) { return i * 0x9E3779B97F4A7C15ull; }

void drop_cached(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// One thread reads piece after piece of `bytes`, in `order`.
double read_pieces(const std::string& path, const std::vector<std::size_t>& order, std::size_t bytes) {
  drop_cached(path);
  const int fd = ::open(path.c_str(), O_RDONLY);
  std::vector<char> buffer(bytes);
  const auto t0 = bench::clock::now();
  for (std::size_t p : order)
    if (::pread(fd, buffer.data(), bytes, static_cast<off_t>(p * bytes)) != static_cast<ssize_t>(bytes))
      throw std::runtime_error("IOQ: a read of the file failed");
  const double s = bench::seconds_since(t0);
  ::close(fd);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  CLI::App app{"IOQ: a file read back piece by piece in a random order, through the I/O queue"};
  std::size_t pieces = 4096, piece_kib = 64;
  int reps = 3;
  bool quick = false;
  std::string dir = std::filesystem::temp_directory_path().string();
  app.add_option("--pieces", pieces, "pieces of the file");
  app.add_option("--piece-kib", piece_kib, "KiB of a piece");
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--dir", dir, "where the file is written");
  app.add_flag("--quick", quick, "a small file, two repetitions");
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);
  if (quick) pieces = 256, reps = 2;

  const std::size_t piece_bytes = piece_kib * 1024, words_per_piece = piece_bytes / sizeof(std::uint64_t);
  const auto words = static_cast<rill::coord_t>(pieces * words_per_piece);
  const std::string path = dir + "/rill-ioq.bin";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::vector<std::uint64_t> chunk(words_per_piece);
    for (std::size_t p = 0; p < pieces; ++p) {
      for (std::size_t i = 0; i < words_per_piece; ++i) chunk[i] = word_at(p * words_per_piece + i);
      std::fwrite(chunk.data(), sizeof(std::uint64_t), chunk.size(), f);
    }
    std::fclose(f);
  }
  std::vector<std::size_t> order(pieces), in_turn(pieces);
  for (std::size_t p = 0; p < pieces; ++p) order[p] = in_turn[p] = p;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  const bool elevator = rt.options().io_ordering == rill::io_order::elevator;
  const std::string policy =
      elevator ? (rt.options().io_fuse_bytes > 0 ? "elevator" : "elevator_unfused") : std::string("fifo");

  const int code = rt.run([&] {
    std::vector<double> rill_s, sequential_s, random_s;
    std::uint64_t seeks_back = 0, calls = 0, fused = 0;
    bool same = true;
    const rill::rect<1> all{0, words - 1};
    auto [mem, made] = rill::instance::create(rill::memory::system(0), all, rill::field_space{word});
    made.wait();
    for (int rep = 0; rep < reps; ++rep) {
      sequential_s.push_back(read_pieces(path, in_turn, piece_bytes));
      random_s.push_back(read_pieces(path, order, piece_bytes));
      drop_cached(path);
      auto [file, opened] = rill::attach_instance(rill::memory::external(0), all, rill::field_space{word},
                                                  rill::file_resource{path, rill::io_mode::read_only});
      opened.wait();
      const rill::io_counts before = rill::io_counts_here();
      const auto t0 = bench::clock::now();
      std::vector<rill::event> reads;
      reads.reserve(pieces);
      for (std::size_t p : order) {
        const auto lo = static_cast<rill::coord_t>(p * words_per_piece);
        reads.push_back(
            rill::copy(file, mem, {word.id}, rill::rect<1>{lo, lo + static_cast<rill::coord_t>(words_per_piece) - 1}));
      }
      rill::merge(reads).wait();
      rill_s.push_back(bench::seconds_since(t0));
      const rill::io_counts after = rill::io_counts_here();
      seeks_back += after.seeks_back - before.seeks_back;
      calls += after.reads - before.reads;
      fused += after.fused - before.fused;
      file.destroy().wait();
      {
        rill::accessor<std::uint64_t, 1> w(mem, word);
        for (rill::coord_t i = 0; i < words; ++i) same = same && w[{i}] == word_at(static_cast<std::uint64_t>(i));
      }
      bench::progress("IOQ {} rep {}: rill {:.1f} ms, sequential {:.1f} ms, random {:.1f} ms", policy, rep,
                      rill_s.back() * 1e3, sequential_s.back() * 1e3, random_s.back() * 1e3);
    }
    mem.destroy().wait();
    if (!same) {
      bench::progress("IOQ: the pieces read through the I/O queue differ from the file");
      return 1;
    }
    const nlohmann::json extra{{"pieces", pieces},
                               {"piece_kib", piece_kib},
                               {"file_mib", static_cast<double>(pieces * piece_bytes) / (1 << 20)},
                               {"io_order", elevator ? "elevator" : "fifo"},
                               {"io_threads", rt.options().io_threads},
                               {"io_fuse_bytes", rt.options().io_fuse_bytes},
                               {"seeks_back_per_rep", static_cast<double>(seeks_back) / reps},
                               {"read_calls_per_rep", static_cast<double>(calls) / reps},
                               {"fused_per_rep", static_cast<double>(fused) / reps}};
    const std::string name = "random_order_reads_" + policy;
    bench::emit_ms("IOQ", name + "_vs_sequential", "time to read every piece", rill_s, "one thread, in file order",
                   sequential_s, extra);
    bench::emit_ms("IOQ", name + "_vs_random", "time to read every piece", rill_s, "one thread, in the random order",
                   random_s, extra);
    return 0;
  });
  std::filesystem::remove(path);
  return code;
}
