// A cereal output archive that appends to a byte vector.
//
// It writes what cereal::BinaryOutputArchive writes (values as their bytes, container lengths as
// 64-bit size tags), without the std::ostream that archive needs: building a stream (its locale
// and ios_base) cost ~150 ns per message, as much as the rest of a send of a small payload.
// bounded_input_archive reads it.
#pragma once

#include <cereal/cereal.hpp>

#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "rill/detail/bounded_input_archive.hpp"

namespace rill::detail {

// Appends `size` bytes at `data` to `out` (an empty container's data() may be null: size 0 is fine).
inline void append_bytes(std::vector<std::byte>& out, const void* data, std::size_t size) {
  if (size == 0) return;
  const auto* first = static_cast<const std::byte*>(data);
  out.insert(out.end(), first, first + size);
}

class vector_output_archive : public cereal::OutputArchive<vector_output_archive, cereal::AllowEmptyClassElision> {
 public:
  explicit vector_output_archive(std::vector<std::byte>& out)
      : cereal::OutputArchive<vector_output_archive, cereal::AllowEmptyClassElision>(this), out_(out) {}

  void saveBinary(const void* data, std::size_t size) { append_bytes(out_, data, size); }

 private:
  std::vector<std::byte>& out_;
};

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_SAVE_FUNCTION_NAME(vector_output_archive& ar, const T& t) {
  ar.saveBinary(std::addressof(t), sizeof(t));
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(vector_output_archive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(vector_output_archive& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
}

template <class T>
void CEREAL_SAVE_FUNCTION_NAME(vector_output_archive& ar, const cereal::BinaryData<T>& bd) {
  ar.saveBinary(bd.data, static_cast<std::size_t>(bd.size));
}

}  // namespace rill::detail

// Types with save_minimal/load_minimal (enums among them) need each archive's counterpart.
CEREAL_SETUP_ARCHIVE_TRAITS(rill::detail::bounded_input_archive, rill::detail::vector_output_archive)
