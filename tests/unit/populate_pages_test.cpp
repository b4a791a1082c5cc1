// populate_pages (src/transport/populate_pages.hpp), which maps a node ring's pages before its first
// message: afterwards every page of the range is resident in this process, and no byte changed.
#include "transport/populate_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

struct shared_mapping {
  explicit shared_mapping(std::size_t n)
      : bytes(n),
        at(static_cast<std::byte*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0))) {}
  ~shared_mapping() { ::munmap(at, bytes); }
  // Per page, whether it is resident in this process.
  std::vector<bool> resident() const {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> v((bytes + page - 1) / page);
    EXPECT_EQ(::mincore(at, bytes, v.data()), 0);
    std::vector<bool> r;
    for (unsigned char c : v) r.push_back((c & 1) != 0);
    return r;
  }
  std::size_t bytes;
  std::byte* at;
};

TEST(PopulatePages, EveryPageOfTheRangeIsResidentAfterwardsAndNoOther) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  shared_mapping m(16 * page);
  ASSERT_NE(m.at, MAP_FAILED);
  for (bool r : m.resident()) ASSERT_FALSE(r) << "a fresh shared mapping has no page yet";
  // From the middle of page 3 to the middle of page 9: pages 3..9.
  rill::detail::populate_pages(m.at + 3 * page + 100, 6 * page);
  const std::vector<bool> r = m.resident();
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i], i >= 3 && i <= 9) << "page " << i;
}

TEST(PopulatePages, ChangesNoByte) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  shared_mapping m(8 * page);
  ASSERT_NE(m.at, MAP_FAILED);
  for (std::size_t i = 0; i < m.bytes; ++i) m.at[i] = static_cast<std::byte>(i * 131 + 7);
  rill::detail::populate_pages(m.at + 5, m.bytes - 9);
  for (std::size_t i = 0; i < m.bytes; ++i) ASSERT_EQ(m.at[i], static_cast<std::byte>(i * 131 + 7)) << "byte " << i;
}

}  // namespace
