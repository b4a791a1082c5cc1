// How active-message arguments become bytes and back.
//
// Trivially copyable values are copied with memcpy (the hot path, no library involved). Everything
// else -- std::string, std::vector, std::map, tuples, user types with a serialize() member -- goes
// through cereal, in its binary format, with archives of Rill's own that write into and read from
// Rill's byte buffers directly (vector_output_archive, bounded_input_archive). A rill::view is
// decoded in place: it points into the received bytes (rill/view.hpp).
#pragma once

#include <cereal/types/array.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/set.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/tuple.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "rill/detail/bounded_input_archive.hpp"
#include "rill/detail/vector_output_archive.hpp"
#include "rill/view.hpp"

namespace rill {

// Raised when received bytes cannot be decoded into the expected arguments.
class decode_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

template <class... Ts>
inline constexpr bool all_trivially_copyable = (std::is_trivially_copyable_v<Ts> && ...);

// Element types whose objects may be read straight from received bytes (the types that may alias
// any object: char, unsigned char, signed char and std::byte).
template <class U>
inline constexpr bool is_byte_like = std::is_same_v<U, char> || std::is_same_v<U, unsigned char> ||
                                     std::is_same_v<U, signed char> || std::is_same_v<U, std::byte>;

// Where a view's elements start in a message: a cache line, or the element's alignment if larger.
template <class U>
inline constexpr std::size_t view_alignment = alignof(U) > 64 ? alignof(U) : 64;

// Shared ownership of the received buffer whose message this thread is decoding (nullptr when it
// decodes something else), so that a view into it outlives the handler's other arguments.
std::shared_ptr<const void> pin_received_bytes();

// Vectors of trivially copyable elements (but bool) and strings: a 64-bit length and one block of
// bytes, the layout cereal gives them, written and read in one copy (cereal goes element by element
// for non-arithmetic types such as std::byte).
template <class T>
struct is_contiguous_trivial : std::false_type {};
template <class U, class A>
struct is_contiguous_trivial<std::vector<U, A>>
    : std::bool_constant<std::is_trivially_copyable_v<U> && !std::is_same_v<U, bool>> {};
template <class C, class Tr, class A>
struct is_contiguous_trivial<std::basic_string<C, Tr, A>> : std::true_type {};

// Whether Rill can put a value of type T in a message: a view, trivially copyable, a vector or
// string of trivially copyable elements, or anything cereal serializes (a serialize member, or
// the standard containers cereal knows).
template <class T>
inline constexpr bool sendable_value =
    is_view<T>::value || std::is_trivially_copyable_v<T> || is_contiguous_trivial<T>::value ||
    cereal::traits::is_output_serializable<T, vector_output_archive>::value;

// Reads one value: trivially copyable ones (including raw pointers, which cereal refuses) as their
// bytes; contiguous_trivial ones as a length and a block; a view in place; the rest through cereal.
template <class T>
void load_one(bounded_input_archive& ar, T& v) {
  if constexpr (std::is_trivially_copyable_v<T>) {
    ar(cereal::binary_data(&v, sizeof(T)));
  } else if constexpr (is_contiguous_trivial<T>::value) {
    std::uint64_t n = 0;
    ar(n);
    using U = typename T::value_type;
    // A corrupt length must not allocate: no container can be longer than the payload holding it.
    if (n > ar.remaining() / sizeof(U)) throw decode_error("payload announces a container longer than the payload");
    if constexpr (is_byte_like<U>) {
      // Built from the received bytes in one pass (resize would zero-fill them first).
      const auto* first = reinterpret_cast<const U*>(ar.take(static_cast<std::size_t>(n)));
      v.assign(first, first + n);
    } else {
      v.resize(static_cast<std::size_t>(n));
      if (n) ar(cereal::binary_data(v.data(), static_cast<std::size_t>(n) * sizeof(U)));
    }
  } else if constexpr (is_view<T>::value) {
    using U = typename T::value_type;
    std::uint64_t n = 0;
    std::uint8_t pad = 0;
    ar(n, pad);
    if (pad >= view_alignment<U>) throw decode_error("payload has a view with impossible padding");
    ar.take(pad);
    if (n > ar.remaining() / sizeof(U)) throw decode_error("payload announces a view longer than the payload");
    const std::byte* first = ar.take(static_cast<std::size_t>(n) * sizeof(U));
    if (reinterpret_cast<std::uintptr_t>(first) % alignof(U) == 0) {
      v = T::received(reinterpret_cast<const U*>(first), static_cast<std::size_t>(n), pin_received_bytes());
    } else {
      auto copy = std::make_shared<U[]>(static_cast<std::size_t>(n));
      std::memcpy(static_cast<void*>(copy.get()), first, static_cast<std::size_t>(n) * sizeof(U));
      v = T::received(copy.get(), static_cast<std::size_t>(n), copy);
    }
  } else {
    // Said here rather than by cereal, whose errors never name Rill or the value.
    static_assert(sendable_value<T>,
                  "rill: this type cannot travel in a message (see T above): give it a "
                  "serialize(Archive&) member (cereal) or make it trivially copyable");
    if constexpr (sendable_value<T>) ar(v);
  }
}

// Elements of a view that a zero-copy send leaves where they are: in the message they come at
// offset `at` of the serialized bytes (before the byte that is there).
struct lent_piece {
  std::size_t at;
  std::span<const std::byte> bytes;
};

// The serialized bytes and the lent pieces between them.
struct lending_output {
  std::vector<std::byte>& out;
  std::vector<lent_piece>* lent = nullptr;  // null: views are copied into `out`
  std::size_t lent_bytes = 0;
  // One cereal archive for all the values of a message that need it, made on first use: cereal
  // writes a versioned type's version once per archive, and the decoder reads one archive.
  std::optional<vector_output_archive> cereal_archive{};
  std::size_t position() const { return out.size() + lent_bytes; }  // in the message
  vector_output_archive& archive() {
    if (!cereal_archive) cereal_archive.emplace(out);
    return *cereal_archive;
  }
  void write(const void* data, std::size_t bytes) { append_bytes(out, data, bytes); }
};

// Writes one value as load_one reads it. A view's elements are padded to start at a multiple of
// view_alignment from the start of the message, so that they arrive aligned in a buffer of their
// own, and so that copying them in and out runs on whole cache lines. With `to.lent`, a view's
// elements are left where they are and listed there instead of being copied. Only messages with a
// value that needs cereal build a cereal archive (~20 ns).
template <class T>
void save_one(lending_output& to, const T& value) {
  if constexpr (is_view<T>::value) {
    using U = typename T::value_type;
    constexpr std::size_t align = view_alignment<U>;
    const std::uint64_t n = value.size();
    to.write(&n, sizeof n);
    const auto pad = static_cast<std::uint8_t>((align - (to.position() + 1) % align) % align);
    to.write(&pad, sizeof pad);
    static constexpr std::byte zeros[align] = {};
    to.write(zeros, pad);
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(U);
    if (bytes == 0) return;
    if (to.lent) {
      to.lent->push_back(lent_piece{to.out.size(), {reinterpret_cast<const std::byte*>(value.data()), bytes}});
      to.lent_bytes += bytes;
    } else {
      to.write(value.data(), bytes);
    }
  } else if constexpr (std::is_trivially_copyable_v<T>) {
    to.write(&value, sizeof(T));
  } else if constexpr (is_contiguous_trivial<T>::value) {
    const std::uint64_t n = value.size();
    to.write(&n, sizeof n);
    to.write(value.data(), static_cast<std::size_t>(n) * sizeof(typename T::value_type));
  } else {
    static_assert(sendable_value<T>,
                  "rill: this type cannot travel in a message (see T above): give it a "
                  "serialize(Archive&) member (cereal) or make it trivially copyable");
    if constexpr (sendable_value<T>) to.archive()(value);
  }
}

// At least how many bytes save_one writes for `value`, known without encoding it: exact for views,
// trivially copyable values and vectors or strings of trivially copyable elements, 0 for what only
// cereal can measure. (A multi-GiB argument is refused before seconds of copying, not after.)
template <class T>
std::size_t least_encoded_bytes(const T& value) {
  if constexpr (is_view<T>::value)
    return sizeof(std::uint64_t) + value.size() * sizeof(typename T::value_type);
  else if constexpr (std::is_trivially_copyable_v<T>)
    return sizeof(T);
  else if constexpr (is_contiguous_trivial<T>::value)
    return sizeof(std::uint64_t) + value.size() * sizeof(typename T::value_type);
  else
    return 0;
}

// Payloads below this size fit every transport (the MPI transport's limit is 2 GiB): a send checks
// larger ones against its transport's limit before it encodes them.
inline constexpr std::size_t payload_check_bytes = std::size_t{1} << 30;

template <class... Ts>
void serialize_to(lending_output to, const Ts&... values) {
  (save_one(to, values), ...);
}

// Appends the encoding of `values` to `out`.
template <class... Ts>
void serialize_into(std::vector<std::byte>& out, const Ts&... values) {
  serialize_to(lending_output{out}, values...);
}

// Appends the encoding of `values` to `out`, but for the elements of views, which it lists in
// `lent` (see lent_piece).
template <class... Ts>
void serialize_lending(std::vector<std::byte>& out, std::vector<lent_piece>& lent, const Ts&... values) {
  serialize_to(lending_output{out, &lent}, values...);
}

// Decodes a tuple from exactly n bytes; throws decode_error on truncated or trailing bytes and on
// lengths the bytes cannot hold (nothing absurd is allocated).
template <class Tuple>
Tuple deserialize_tuple(const std::byte* p, std::size_t n) {
  bounded_input_archive ar(p, n);
  Tuple t{};
  try {
    std::apply([&](auto&... elems) { (load_one(ar, elems), ...); }, t);
  } catch (const cereal::Exception& e) {
    throw decode_error(std::string("payload does not decode: ") + e.what());
  } catch (const std::bad_alloc&) {
    throw decode_error("payload announces a container larger than memory");
  } catch (const std::length_error&) {
    throw decode_error("payload announces an impossible container length");
  }
  if (ar.remaining() != 0) throw decode_error("payload has trailing bytes");
  return t;
}

// Reads one trivially copyable T from possibly unaligned bytes.
template <class T>
T load_trivial(const std::byte* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  alignas(T) std::byte storage[sizeof(T)];
  std::memcpy(storage, p, sizeof(T));
  return *std::launder(reinterpret_cast<T*>(storage));
}

}  // namespace detail
}  // namespace rill
