#include "sync/dist_object_table.hpp"

#include <limits>
#include <string>

#include "common/demangle.hpp"
#include "rill/error.hpp"

namespace rill::detail {

std::uint64_t dist_object_table::add(void* object, const std::type_info& type) {
  user_event waited_for;
  std::uint64_t number = 0;
  {
    std::lock_guard<std::mutex> g(lock_);
    number = next_++;
    live_.emplace(number, entry{object, &type});
    if (auto it = awaited_.find(number); it != awaited_.end()) {
      waited_for = it->second;
      awaited_.erase(it);
    }
  }
  // Outside the lock: the waiters it wakes look the object up again.
  if (!waited_for.is_none()) waited_for.trigger();
  return number;
}

void dist_object_table::remove(std::uint64_t number) {
  std::lock_guard<std::mutex> g(lock_);
  live_.erase(number);
}

dist_object_table::found dist_object_table::find(std::uint64_t number, const std::type_info& type) {
  std::lock_guard<std::mutex> g(lock_);
  if (auto it = live_.find(number); it != live_.end()) {
    if (*it->second.type != type) {
      throw misuse_error("rill::dist_id: dist_object #" + std::to_string(number) + " on rank " + std::to_string(rank_) +
                         " holds a " + demangled(it->second.type->name()) + ", not a " + demangled(type.name()) +
                         " (do the ranks construct their dist_objects in the same order?)");
    }
    return {it->second.object, event::none()};
  }
  if (number == std::numeric_limits<std::uint64_t>::max())
    throw misuse_error("rill::dist_id: the id names no dist_object (it was default-constructed)");
  if (number < next_) {
    throw misuse_error("rill::dist_id: dist_object #" + std::to_string(number) + " was destroyed on rank " +
                       std::to_string(rank_));
  }
  auto [it, fresh] = awaited_.try_emplace(number);
  if (fresh) it->second = user_event::create();
  return {nullptr, it->second};
}

std::uint64_t dist_object_table::live() const {
  std::lock_guard<std::mutex> g(lock_);
  return live_.size();
}

std::uint64_t dist_object_table::constructed() const {
  std::lock_guard<std::mutex> g(lock_);
  return next_;
}

}  // namespace rill::detail
