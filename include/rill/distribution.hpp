// How a global allocation is spread over the ranks: HPX-5's four distributions (§III).
//
//   rill::dist::local()        all of it on the calling rank (dist::local(3): on rank 3)
//   rill::dist::cyclic()       blocks of one cache line dealt to ranks 0, 1, ..., 0, 1, ...
//   rill::dist::cyclic(4096)   the same with 4 KiB blocks
//   rill::dist::blocked        one contiguous range per rank: rank 0 has the first n/ranks elements
//   rill::dist::user(f, 4096)  4 KiB blocks; block b lives on rank f(b, blocks, ranks)
//
// Block sizes are in bytes and must be a multiple of the element size (the default cache line
// becomes max(1, 64 / sizeof(T)) elements). A user function must be a plain function or a
// capture-less lambda, and deterministic: every rank evaluates it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rill/detail/handler_table.hpp"

namespace rill {

class distribution {
 public:
  enum class kind : std::uint8_t { local, cyclic, blocked, user };
  // The rank that holds block `block` of `blocks`, out of `ranks`.
  using user_fn = int (*)(std::uint64_t block, std::uint64_t blocks, int ranks);

  constexpr explicit distribution(kind k, int rank = -1, std::size_t block_bytes = 0, std::intptr_t user = 0)
      : kind_(k), rank_(rank), block_bytes_(block_bytes), user_(user) {}

  constexpr kind what() const { return kind_; }
  // local: the home (-1: the allocating rank).
  constexpr int rank() const { return rank_; }
  // cyclic, user: bytes per block (0: one cache line).
  constexpr std::size_t block_bytes() const { return block_bytes_; }
  // user: the function, as an offset in the code (valid on every rank of the same binary).
  constexpr std::intptr_t user_code() const { return user_; }

 private:
  kind kind_;
  int rank_;
  std::size_t block_bytes_;
  std::intptr_t user_;
};

namespace dist {

constexpr distribution local(int rank = -1) { return distribution(distribution::kind::local, rank); }
constexpr distribution cyclic(std::size_t block_bytes = 0) {
  return distribution(distribution::kind::cyclic, -1, block_bytes);
}
inline constexpr distribution blocked{distribution::kind::blocked};
inline distribution user(distribution::user_fn f, std::size_t block_bytes = 0) {
  return distribution(distribution::kind::user, -1, block_bytes,
                      f ? detail::code_offset(reinterpret_cast<const void*>(f)) : 0);
}

}  // namespace dist
}  // namespace rill
