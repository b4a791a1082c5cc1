// The free slots of a rank's event table, handed out lowest index first.
//
// Why not a stack of freed indices: a stack hands slots back in the order the last wave of events
// triggered, and every wave permutes that order further. After a few waves the events a program
// creates together lie scattered over the whole table, one cache miss each when they trigger (R2,
// fan 16: 2.0 M events/s on a fresh table fell to 1.1 M after ten waves). Lowest-first keeps the
// live slots packed at the bottom of the table and hands out consecutive slots to events created
// together. Both operations are a few bit operations: a bit per slot, and a summary bit per word.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace rill::detail {

class free_slots {
 public:
  // Marks slot `index` free (it must not be free already).
  void insert(std::uint32_t index) {
    const std::size_t word = index / 64;
    if (word >= words_.size()) {
      words_.resize(word + 1, 0);
      summary_.resize(word / 64 + 1, 0);
    }
    words_[word] |= std::uint64_t{1} << (index % 64);
    summary_[word / 64] |= std::uint64_t{1} << (word % 64);
    if (word / 64 < first_) first_ = word / 64;
    ++count_;
  }

  // Takes the lowest free slot; nullopt when none is free.
  std::optional<std::uint32_t> take_lowest() {
    if (count_ == 0) return std::nullopt;
    while (summary_[first_] == 0) ++first_;  // count_ > 0: some summary word below the end is set
    const std::size_t word = first_ * 64 + static_cast<std::size_t>(std::countr_zero(summary_[first_]));
    const int bit = std::countr_zero(words_[word]);
    words_[word] &= words_[word] - 1;
    if (words_[word] == 0) summary_[first_] &= summary_[first_] - 1;
    --count_;
    return static_cast<std::uint32_t>(word * 64 + static_cast<std::size_t>(bit));
  }

  std::size_t size() const { return count_; }

 private:
  std::vector<std::uint64_t> words_;    // bit i of word w: slot 64 w + i is free
  std::vector<std::uint64_t> summary_;  // bit j of word s: words_[64 s + j] != 0
  std::size_t first_ = 0;               // no summary word below this one has a bit set
  std::size_t count_ = 0;
};

}  // namespace rill::detail
