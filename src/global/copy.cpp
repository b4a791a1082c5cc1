// rill::async_copy (rill/async_copy.hpp): where the bytes go, and how its future is settled.
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "global/global_module.hpp"
#include "rill/async_copy.hpp"
#include "rill/finish.hpp"

namespace rill::detail {

namespace {

// Larger copies travel in pieces of this size, each in flight on its own.
constexpr std::size_t piece_bytes = std::size_t{4} << 20;

// Copies one piece, then puts `done`. Runs on the calling rank first and continues on the
// source's rank when the source is not addressable here.
void copy_piece(int src_rank, std::uintptr_t src, int dst_rank, std::uintptr_t dst, std::size_t bytes,
                promise<void> done) {
  global_module& r = global_here("rill::async_copy");
  if (r.addressable_segment(src_rank) && r.addressable_segment(dst_rank)) {
    // A bad range poisons the copy with the check's own words, as it does at a remote owner.
    try {
      const void* from = segment_address(src_rank, src, bytes, "rill::async_copy (source)");
      std::memmove(segment_address(dst_rank, dst, bytes, "rill::async_copy (destination)"), from, bytes);
    } catch (const misuse_error& e) {
      done.poison(e.what(), "rill::async_copy");
      return;
    }
    done.put();
    return;
  }
  if (!r.addressable_segment(src_rank)) {
    // A get, or a copy between two other ranks: the source's rank sends the bytes on.
    async_at(
        src_rank,
        [](int sr, std::uintptr_t s, int dr, std::uintptr_t d, std::size_t n, promise<void> p) {
          copy_piece(sr, s, dr, d, n, std::move(p));
        },
        src_rank, src, dst_rank, dst, bytes, std::move(done));
    return;
  }
  // A put: the bytes travel to the destination's rank, which checks the range and stores them.
  std::vector<std::byte> data(bytes);
  try {
    std::memcpy(data.data(), segment_address(src_rank, src, bytes, "rill::async_copy (source)"), bytes);
  } catch (const misuse_error& e) {
    done.poison(e.what(), "rill::async_copy");
    return;
  }
  async_at(
      dst_rank,
      [](std::uintptr_t d, const std::vector<std::byte>& bytes_in, promise<void> p) {
        try {
          std::memcpy(segment_address(rank_me(), d, bytes_in.size(), "rill::async_copy (destination)"), bytes_in.data(),
                      bytes_in.size());
        } catch (const misuse_error& e) {
          p.poison(e.what(), "rill::async_copy");
          return;
        }
        p.put();
      },
      dst, std::move(data), std::move(done));
}

void check_end(const char* which, int rank, std::uintptr_t addr, std::size_t bytes) {
  if (addr == 0 && bytes > 0) throw misuse_error(fmt::format("rill::async_copy: the {} is a null pointer", which));
  if (rank < 0 || rank >= rank_n())
    throw misuse_error(
        fmt::format("rill::async_copy: the {} names rank {}, and there are {} ranks", which, rank, rank_n()));
}

}  // namespace

future<void> copy_bytes(int src_rank, std::uintptr_t src, int dst_rank, std::uintptr_t dst, std::size_t bytes,
                        event after) {
  require_worker("rill::async_copy");
  check_end("source", src_rank, src, bytes);
  check_end("destination", dst_rank, dst, bytes);
  promise<void> done;
  future<void> out = done.get_future();
  if (bytes <= piece_bytes) {
    run_after(
        after, [=] { copy_piece(src_rank, src, dst_rank, dst, bytes, done); }, poison_into(done));
    return out;
  }
  std::vector<event> pieces;
  for (std::size_t off = 0; off < bytes; off += piece_bytes) {
    const std::size_t n = std::min(piece_bytes, bytes - off);
    promise<void> piece;
    pieces.push_back(piece.get_future());
    run_after(
        after, [=] { copy_piece(src_rank, src + off, dst_rank, dst + off, n, piece); }, poison_into(piece));
  }
  run_after(
      merge(pieces), [done] { done.put(); }, poison_into(done));
  return out;
}

}  // namespace rill::detail
