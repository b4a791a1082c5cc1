// Field spaces: the fields every point of an instance holds, each an id and a size in bytes
// (Realm's field ids and sizes; Legion's FieldSpace). A value, valid on every rank.
//
//   constexpr rill::field<double> voltage{1};
//   constexpr rill::field<float> charge{2};
//   rill::field_space fs{voltage, charge};          // or fs.add(3, 24): an untyped 24-byte field
//
// Typed fields (`field<T>`) let accessors and fills check the element type at compile time;
// every field is stored as its bytes, so T must be trivially copyable. Opaque fields
// (rill/opaque.hpp) hold pointers to objects that copies serialize. See docs/data.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace rill {

using field_id = std::uint32_t;

template <class T>
struct field {
  static_assert(std::is_trivially_copyable_v<T>, "rill::field<T>: T must be trivially copyable (stored as bytes)");
  using type = T;
  field_id id = 0;
  constexpr operator field_id() const { return id; }  // NOLINT(google-explicit-constructor)
};

template <class T>
struct serdes;
template <class T, class S = serdes<T>>
struct opaque_field;

struct field_info {
  field_id id = 0;
  std::size_t bytes = 0;
  // An opaque field's serialization (the code offset of its detail::opaque_entry); 0 for bytes.
  std::intptr_t opaque = 0;
  friend bool operator==(const field_info&, const field_info&) = default;

  // Sent as 64 bits on every rank. Saving writes nothing: field spaces shared between threads
  // (a region tree's nodes) are sent by several at once.
  template <class Archive>
  void save(Archive& ar) const {
    ar(id, static_cast<std::uint64_t>(bytes), static_cast<std::int64_t>(opaque));
  }
  template <class Archive>
  void load(Archive& ar) {
    std::uint64_t b = 0;
    std::int64_t o = 0;
    ar(id, b, o);
    bytes = static_cast<std::size_t>(b);
    opaque = static_cast<std::intptr_t>(o);
  }
};

class field_space {
 public:
  field_space() = default;
  // From typed fields: field<T> and opaque_field<T>.
  template <class... F>
  field_space(F... fields) {  // NOLINT(google-explicit-constructor)
    (add(fields), ...);
  }

  // Adds a field; throws rill::misuse_error for an id already present or a size of 0.
  field_space& add(field_id id, std::size_t bytes) { return add(field_info{id, bytes}); }
  // A field as another space has it (info()): the same size, opaque or not.
  field_space& add(const field_info& f);
  template <class T>
  field_space& add(field<T> f) {
    return add(f.id, sizeof(T));
  }
  template <class T, class S>
  field_space& add(opaque_field<T, S> f);  // (rill/opaque.hpp)

  bool has(field_id id) const { return find(id) != nullptr; }
  // The field's id, size and serialization; throws rill::misuse_error for an id that is not in
  // the space.
  const field_info& info(field_id id) const;
  // The field's size; throws rill::misuse_error for an id that is not in the space.
  std::size_t bytes_of(field_id id) const;
  // Bytes of every field together: what one point takes in an instance without padding.
  std::size_t bytes_per_point() const;
  // In ascending order of id.
  const std::vector<field_info>& fields() const { return fields_; }

  friend bool operator==(const field_space&, const field_space&) = default;

  template <class Archive>
  void save(Archive& ar) const {
    ar(fields_);
  }
  template <class Archive>
  void load(Archive& ar) {
    ar(fields_);
    check_sent();
  }

 private:
  const field_info* find(field_id id) const;
  // Throws rill::decode_error unless the fields another rank sent are sorted, unique and sized.
  void check_sent() const;
  std::vector<field_info> fields_;
};

}  // namespace rill
