// A cereal input archive over received bytes that refuses lengths the bytes cannot hold.
//
// It reads what vector_output_archive (and cereal::BinaryOutputArchive) writes. Unlike cereal's BinaryInputArchive,
// every container length (cereal's size tags) is checked against the bytes still unread before the container is
// resized, so a corrupt or hostile payload of a few bytes cannot make a rank allocate gigabytes: every element of a
// serialized container occupies at least one byte.
#pragma once

#include <cereal/cereal.hpp>

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

namespace rill::detail {

class bounded_input_archive : public cereal::InputArchive<bounded_input_archive, cereal::AllowEmptyClassElision> {
 public:
  bounded_input_archive(const std::byte* data, std::size_t bytes)
      : cereal::InputArchive<bounded_input_archive, cereal::AllowEmptyClassElision>(this),
        next_(data),
        end_(data + bytes) {}

  // Throws cereal::Exception when fewer than `size` bytes are left.
  void loadBinary(void* const out, std::size_t size) {
    if (size == 0) return;  // an empty container's data() may be null, which memcpy must not see
    if (size > remaining()) {
      throw cereal::Exception("payload truncated: " + std::to_string(size) + " bytes wanted, " +
                              std::to_string(remaining()) + " left");
    }
    std::memcpy(out, next_, size);
    next_ += size;
  }
  std::size_t remaining() const { return static_cast<std::size_t>(end_ - next_); }
  // The next `size` bytes, in place (no copy); throws cereal::Exception when fewer are left.
  const std::byte* take(std::size_t size) {
    if (size > remaining()) {
      throw cereal::Exception("payload truncated: " + std::to_string(size) + " bytes wanted, " +
                              std::to_string(remaining()) + " left");
    }
    const std::byte* at = next_;
    next_ += size;
    return at;
  }

 private:
  const std::byte* next_;
  const std::byte* end_;
};

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& ar, T& t) {
  ar.loadBinary(std::addressof(t), sizeof(t));
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(bounded_input_archive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(bounded_input_archive& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
  if (static_cast<std::size_t>(t.size) > ar.remaining()) {
    throw cereal::Exception("payload announces " + std::to_string(t.size) + " elements with " +
                            std::to_string(ar.remaining()) + " bytes left");
  }
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& ar, cereal::BinaryData<T>& bd) {
  ar.loadBinary(bd.data, static_cast<std::size_t>(bd.size));
}

}  // namespace rill::detail
