// Bulk and strided rput/rget (rill/rma.hpp): where the bytes go, and how the future is settled.
#include "rill/rma.hpp"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "rill/finish.hpp"

namespace rill::detail {

namespace {

// Bytes from the first block's start to the last block's end.
std::size_t span_of(const transfer_shape& s, std::ptrdiff_t stride) {
  return s.blocks == 0 ? 0 : (s.blocks - 1) * static_cast<std::size_t>(stride) + s.block;
}

void check_shape(home_op op, const void* local, int rank, std::uintptr_t remote, const transfer_shape& s) {
  const char* what = home_op_name(op);
  if (s.block == 0 || s.blocks == 0) return;
  check_target(rank, remote, op);
  if (!local) throw misuse_error(fmt::format("{}: the local buffer is null", what));
  if (s.blocks > 1 &&
      (s.local_stride < static_cast<std::ptrdiff_t>(s.block) || s.remote_stride < static_cast<std::ptrdiff_t>(s.block)))
    throw misuse_error(fmt::format("{}: strides ({} and {} bytes) must be at least the block ({} bytes)", what,
                                   s.local_stride, s.remote_stride, s.block));
}

// Copies blocks between two strided layouts.
void copy_blocks(std::byte* to, std::ptrdiff_t to_stride, const std::byte* from, std::ptrdiff_t from_stride,
                 const transfer_shape& s) {
  for (std::size_t i = 0; i < s.blocks; ++i)
    std::memmove(to + static_cast<std::ptrdiff_t>(i) * to_stride, from + static_cast<std::ptrdiff_t>(i) * from_stride,
                 s.block);
}

std::vector<std::byte> pack(const std::byte* from, std::ptrdiff_t stride, const transfer_shape& s) {
  std::vector<std::byte> out(s.block * s.blocks);
  copy_blocks(out.data(), static_cast<std::ptrdiff_t>(s.block), from, stride, s);
  return out;
}

void unpack(std::byte* to, std::ptrdiff_t stride, const std::vector<std::byte>& data, const transfer_shape& s) {
  copy_blocks(to, stride, data.data(), static_cast<std::ptrdiff_t>(s.block), s);
}

// Where the remote side is addressable from here: the transfer as loads and stores (true), or
// false to go through messages. Throws misuse_error for a range outside the owner's segment.
bool put_directly(const void* src, int rank, std::uintptr_t dst, const transfer_shape& s) {
  void* here = addressable_or_null(rank, dst, span_of(s, s.remote_stride), 1, home_op::rput);
  if (here)
    copy_blocks(static_cast<std::byte*>(here), s.remote_stride, static_cast<const std::byte*>(src), s.local_stride, s);
  return here != nullptr;
}

bool get_directly(int rank, std::uintptr_t src, void* dst, const transfer_shape& s) {
  void* here = addressable_or_null(rank, src, span_of(s, s.remote_stride), 1, home_op::rget);
  if (here)
    copy_blocks(static_cast<std::byte*>(dst), s.local_stride, static_cast<const std::byte*>(here), s.remote_stride, s);
  return here != nullptr;
}

void put_by_message(const void* src, int rank, std::uintptr_t dst, const transfer_shape& s, promise_ref<void> done) {
  am::send_inline(
      rank,
      [](std::uintptr_t d, transfer_shape sh, const std::vector<std::byte>& data, promise_ref<void> p) {
        try {
          unpack(static_cast<std::byte*>(home_address(d, span_of(sh, sh.remote_stride), 1, home_op::rput)),
                 sh.remote_stride, data, sh);
        } catch (const std::exception& e) {
          p.poison(e.what(), "rill::rput");
          return;
        }
        p.put();
      },
      dst, s, pack(static_cast<const std::byte*>(src), s.local_stride, s), done);
}

void get_by_message(int rank, std::uintptr_t src, void* dst, const transfer_shape& s, promise_ref<void> done) {
  am::send_inline(
      rank,
      [](std::uintptr_t from, transfer_shape sh, int requester, std::uintptr_t to, promise_ref<void> p) {
        std::vector<std::byte> data;
        try {
          data =
              pack(static_cast<const std::byte*>(home_address(from, span_of(sh, sh.remote_stride), 1, home_op::rget)),
                   sh.remote_stride, sh);
        } catch (const std::exception& e) {
          p.poison(e.what(), "rill::rget");
          return;
        }
        am::send_inline(
            requester,
            [](std::uintptr_t t, transfer_shape shape, const std::vector<std::byte>& bytes, promise_ref<void> q) {
              unpack(reinterpret_cast<std::byte*>(t), shape.local_stride, bytes, shape);
              q.put();
            },
            to, sh, std::move(data), p);
      },
      src, s, rank_me(), reinterpret_cast<std::uintptr_t>(dst), done);
}

// `operation`: rill::rput or rill::rget, as a failure's poisoned_error names it.
template <class Direct, class ByMessage>
future<void> transfer(const char* operation, event after, Direct direct, ByMessage by_message) {
  if (after.is_none()) {
    try {
      if (direct()) return make_ready_future();
    } catch (const std::exception& e) {
      promise<void> failed;
      failed.poison(e.what(), operation);
      return failed.get_future();
    }
    promise<void> done;
    future<void> out = done.get_future();
    by_message(done.ref());
    return out;
  }
  promise<void> done;
  future<void> out = done.get_future();
  run_after(
      after,
      [=] {
        try {
          if (direct()) {
            done.put();
            return;
          }
        } catch (const std::exception& e) {
          done.poison(e.what(), operation);
          return;
        }
        by_message(done.ref());
      },
      poison_into(done));
  return out;
}

}  // namespace

future<void> put_bytes(const void* src, int rank, std::uintptr_t dst, transfer_shape shape, event after) {
  require_worker("rill::rput");
  check_shape(home_op::rput, src, rank, dst, shape);
  if (shape.block == 0 || shape.blocks == 0) return make_ready_future();
  return transfer(
      "rill::rput", after, [=] { return put_directly(src, rank, dst, shape); },
      [=](promise_ref<void> done) { put_by_message(src, rank, dst, shape, done); });
}

future<void> get_bytes(int rank, std::uintptr_t src, void* dst, transfer_shape shape, event after) {
  require_worker("rill::rget");
  check_shape(home_op::rget, dst, rank, src, shape);
  if (shape.block == 0 || shape.blocks == 0) return make_ready_future();
  return transfer(
      "rill::rget", after, [=] { return get_directly(rank, src, dst, shape); },
      [=](promise_ref<void> done) { get_by_message(rank, src, dst, shape, done); });
}

}  // namespace rill::detail
