// A rank's dist_objects (rill/dist_object.hpp): numbered in the order the rank constructs them, so
// that the same number names the same object on every rank.
#pragma once

#include <cstdint>
#include <mutex>
#include <typeinfo>
#include <unordered_map>

#include "rill/event.hpp"

namespace rill::detail {

class dist_object_table {
 public:
  explicit dist_object_table(int rank) : rank_(rank) {}

  // Registers the next object of this rank; returns its number.
  std::uint64_t add(void* object, const std::type_info& type);
  void remove(std::uint64_t number);

  // What find() found: the object, or (object null) an event that triggers when this rank
  // constructs it. Throws misuse_error for an object destroyed here or of another type.
  struct found {
    void* object = nullptr;
    event constructed;
  };
  found find(std::uint64_t number, const std::type_info& type);

  std::uint64_t live() const;
  std::uint64_t constructed() const;

 private:
  struct entry {
    void* object;
    const std::type_info* type;
  };
  const int rank_;
  mutable std::mutex lock_;
  std::uint64_t next_ = 0;
  std::unordered_map<std::uint64_t, entry> live_;
  // Objects that tasks wait for: triggered when this rank constructs them.
  std::unordered_map<std::uint64_t, user_event> awaited_;
};

}  // namespace rill::detail
