// Opaque objects (Iris §II-G): fields whose elements are pointers to objects the runtime cannot
// see into -- a mesh, a tree, a texture -- moved by serializing them. The type says how, with four
// functions (Iris §V-A): the bytes an object needs, writing it into them, making a new object from
// them, and destroying one.
//
//   template <> struct rill::serdes<texture> {
//     static std::size_t size(const texture& t) { return 8 + t.pixels.size(); }
//     static void serialize(const texture& t, std::span<std::byte> out);   // out.size() == size(t)
//     static texture* deserialize(std::span<const std::byte> in);          // a new object
//     static void destroy(texture* t) { delete t; }
//   };
//   constexpr rill::opaque_field<texture> textures{7};   // a field of texture*
//   rill::field_space fs{textures};
//
// An instance owns the objects its opaque fields point to: they start null, a copy into it (from
// any instance, on any rank) serializes each source object, moves the bytes, and deserializes a
// new object in its place, destroying the one it replaces; destroying the instance destroys them.
// A task reads and changes them through an accessor of T* (rill::accessor<T*, N>, or a region
// accessor): replacing a pointer hands the old object to the task. Fills and reductions refuse
// opaque fields. Objects a program holds itself are attached with rill::opaque_resource
// (rill/external.hpp). See docs/external.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "rill/detail/handler_table.hpp"
#include "rill/field_space.hpp"

namespace rill {

// How objects of T are serialized. The primary template serves trivially copyable types (their
// bytes, objects made with new); specialize it, or name another type in opaque_field, for others.
template <class T>
struct serdes {
  static_assert(std::is_trivially_copyable_v<T>,
                "rill::serdes<T>: specialize it for T (size, serialize, deserialize, destroy)");
  static std::size_t size(const T&) { return sizeof(T); }
  static void serialize(const T& x, std::span<std::byte> out) { std::memcpy(out.data(), &x, sizeof(T)); }
  static T* deserialize(std::span<const std::byte> in) {
    T* x = new T;
    std::memcpy(static_cast<void*>(x), in.data(), sizeof(T));
    return x;
  }
  static void destroy(T* x) { delete x; }
};

namespace detail {

enum class opaque_verb : std::uint8_t { size, serialize, deserialize, destroy };
// The four functions of a type as one, so that a field carries them as one code offset valid on
// every rank: size returns the bytes of *object; serialize writes them into `bytes`;
// deserialize sets `object` to a new object made from `bytes`; destroy destroys *object.
using opaque_entry = std::size_t (*)(opaque_verb, void*& object, std::byte* bytes, std::size_t n);

template <class T, class S>
std::size_t opaque_entry_of(opaque_verb verb, void*& object, std::byte* bytes, std::size_t n) {
  switch (verb) {
    case opaque_verb::size: return S::size(*static_cast<const T*>(object));
    case opaque_verb::serialize: S::serialize(*static_cast<const T*>(object), std::span<std::byte>(bytes, n)); break;
    case opaque_verb::deserialize: object = S::deserialize(std::span<const std::byte>(bytes, n)); break;
    case opaque_verb::destroy: S::destroy(static_cast<T*>(object)); break;
  }
  return n;
}

template <class T, class S>
std::intptr_t opaque_offset() {
  return code_offset(reinterpret_cast<const void*>(&opaque_entry_of<T, S>));
}

}  // namespace detail

// A field of T* whose objects move as S says. It is a field<T*> for accessors and requirements.
template <class T, class S>
struct opaque_field : field<T*> {
  static_assert(std::is_convertible_v<decltype(S::size(std::declval<const T&>())), std::size_t> &&
                    std::is_same_v<decltype(S::deserialize(std::span<const std::byte>())), T*>,
                "rill::opaque_field<T, S>: S needs size(const T&), serialize(const T&, std::span<std::byte>), "
                "deserialize(std::span<const std::byte>) -> T*, destroy(T*)");
};

template <class T, class S>
field_space& field_space::add(opaque_field<T, S> f) {
  return add(field_info{f.id, sizeof(T*), detail::opaque_offset<T, S>()});
}

}  // namespace rill
