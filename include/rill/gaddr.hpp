// An address in the active global address space (HPX-5 §III): 64 bits that name a byte of a
// relocatable block, valid on every rank, whatever rank holds the block now.
//
//   bits 63..48  home      the rank whose directory knows where the block is (cyclic: unused)
//   bit  47      cyclic    1 for a cyclic allocation: a block's home is its number modulo the ranks
//   bits 46..42  size      the size class: blocks of 2^size bytes (8 B ... 2 GiB)
//   bits 41..34  gen       the allocation's generation: a freed address stays wrong after reuse
//   bits 33..0   offset    the byte: block number * 2^size + byte in the block
//
// Arithmetic moves within the allocation and may cross into its next block. Nothing here talks
// to other ranks; rill/gas.hpp does the allocating, moving and accessing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace rill {

class gaddr {
 public:
  static constexpr int home_bits = 16, size_bits = 5, gen_bits = 8, offset_bits = 34;
  static constexpr unsigned min_size_class = 3;
  static constexpr std::uint64_t offset_mask = (std::uint64_t{1} << offset_bits) - 1;

  constexpr gaddr() = default;
  constexpr gaddr(std::nullptr_t) {}
  static constexpr gaddr make(int home, bool cyclic, unsigned size_class, unsigned gen, std::uint64_t offset) {
    gaddr a;
    a.bits_ = (std::uint64_t(static_cast<std::uint16_t>(home)) << 48) | (std::uint64_t(cyclic) << 47) |
              (std::uint64_t(size_class & 31u) << 42) | (std::uint64_t(gen & 255u) << 34) | (offset & offset_mask);
    return a;
  }
  static constexpr gaddr from_bits(std::uint64_t bits) {
    gaddr a;
    a.bits_ = bits;
    return a;
  }

  constexpr std::uint64_t bits() const { return bits_; }
  constexpr bool is_null() const { return bits_ == 0; }
  constexpr explicit operator bool() const { return bits_ != 0; }
  constexpr bool cyclic() const { return (bits_ >> 47) & 1u; }
  constexpr unsigned size_class() const { return static_cast<unsigned>((bits_ >> 42) & 31u); }
  constexpr unsigned generation() const { return static_cast<unsigned>((bits_ >> 34) & 255u); }
  constexpr std::uint64_t offset() const { return bits_ & offset_mask; }
  constexpr std::uint64_t block_bytes() const { return std::uint64_t{1} << size_class(); }
  constexpr std::uint64_t block_number() const { return offset() >> size_class(); }
  constexpr std::uint64_t byte_in_block() const { return offset() & (block_bytes() - 1); }
  // The rank whose directory tracks this address' block. A 32-bit division where the block number
  // fits: a 64-bit one costs several times as much, on every operation on a cyclic allocation.
  constexpr int home(int ranks) const {
    if (!cyclic()) return static_cast<int>(bits_ >> 48);
    const std::uint64_t b = block_number();
    return b <= 0xffffffffu ? static_cast<int>(static_cast<std::uint32_t>(b) % static_cast<std::uint32_t>(ranks))
                            : static_cast<int>(b % static_cast<std::uint64_t>(ranks));
  }
  // The address of the first byte of this address' block.
  constexpr gaddr block() const { return from_bits(bits_ & ~(block_bytes() - 1)); }
  // What names the block in directories and caches: the block's address without its generation.
  constexpr std::uint64_t block_key() const { return block().bits_ & ~(std::uint64_t{255} << 34); }

  constexpr gaddr& operator+=(std::int64_t bytes) {
    bits_ = (bits_ & ~offset_mask) | ((offset() + static_cast<std::uint64_t>(bytes)) & offset_mask);
    return *this;
  }
  friend constexpr gaddr operator+(gaddr a, std::int64_t bytes) { return a += bytes; }
  friend constexpr gaddr operator-(gaddr a, std::int64_t bytes) { return a += -bytes; }
  friend constexpr bool operator==(gaddr a, gaddr b) { return a.bits_ == b.bits_; }
  friend constexpr bool operator<(gaddr a, gaddr b) { return a.bits_ < b.bits_; }

 private:
  std::uint64_t bits_ = 0;
};

}  // namespace rill

template <>
struct std::hash<rill::gaddr> {
  std::size_t operator()(rill::gaddr a) const noexcept { return std::hash<std::uint64_t>{}(a.bits()); }
};
