// Address space for a segment that only this process maps: reserved, not committed (the OS
// commits pages as they are first touched), so a large --rill:segment costs nothing until used.
#pragma once

#include <cstddef>

namespace rill::detail {

class private_memory {
 public:
  explicit private_memory(std::size_t bytes);  // fatal error when the reservation fails
  ~private_memory();
  private_memory(const private_memory&) = delete;
  private_memory& operator=(const private_memory&) = delete;
  std::byte* data() const { return base_; }

 private:
  std::byte* base_;
  std::size_t size_;
};

}  // namespace rill::detail
