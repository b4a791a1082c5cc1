// Objects the program holds, attached as an instance (rill::opaque_resource): the store is its
// array of pointers. Reads lend the pointers to a copy, which serializes the objects; writes hand
// it new objects, and the ones they replace are destroyed. Neither blocks in the kernel, but they
// run on I/O threads like every resource's, in the order the copies' events give.
#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "data/external_store.hpp"
#include "data/opaque_elements.hpp"
#include "rill/error.hpp"

namespace rill::detail {
namespace {

class opaque_store final : public external_store {
 public:
  opaque_store(const opaque_resource& r, const rect<3>& bounds, io_counters& counters)
      : objects_(reinterpret_cast<void**>(r.objects)),
        lo_(bounds.lo[0]),
        entry_(reinterpret_cast<opaque_entry>(const_cast<void*>(code_address(r.serialization)))),
        mode_(r.mode),
        name_(fmt::format("the {} opaque objects at {:#x}", r.count, r.objects)) {
    counters.attached.fetch_add(1, std::memory_order_relaxed);
  }

  void read(const field_placement&, const rect<3>& r, std::byte* out) override {
    std::memcpy(out, objects_ + (r.lo[0] - lo_), r.volume() * sizeof(void*));
  }

  void write(const field_placement&, const rect<3>& r, const std::byte* in) override {
    if (mode_ == io_mode::read_only)
      throw misuse_error(fmt::format("{} are attached read_only: nothing can be copied into them", name_));
    for (std::size_t k = 0; k < r.volume(); ++k) {
      void* made = nullptr;
      std::memcpy(&made, in + k * sizeof(void*), sizeof made);
      void*& place = objects_[r.lo[0] - lo_ + static_cast<coord_t>(k)];
      void* old = std::exchange(place, made);
      if (old != made) destroy_object(entry_, old);
    }
  }

  void close() override {}
  void snapshot(std::uint64_t) override {}
  bool unchanged_since(std::uint64_t) override { return false; }
  bool tracks_changes() const override { return false; }
  const std::string& name() const override { return name_; }
  io_mode mode() const override { return mode_; }
  io_place place(const field_placement&, const rect<3>&) const override { return {}; }  // memory

 private:
  void** const objects_;
  const coord_t lo_;
  const opaque_entry entry_;
  const io_mode mode_;
  const std::string name_;
};

}  // namespace

std::unique_ptr<external_store> open_opaque_store(const opaque_resource& r, const instance_layout&,
                                                  const rect<3>& bounds, int dims, io_counters& counters) {
  if (dims != 1)
    throw misuse_error(fmt::format("rill::attach_instance: opaque objects are a 1-D instance, not {}-D", dims));
  if (r.objects == 0 && r.count != 0) throw misuse_error("rill::attach_instance: opaque objects at a null address");
  if (bounds.volume() != r.count)
    throw misuse_error(fmt::format("rill::attach_instance: {} opaque objects for an index space of {} points", r.count,
                                   bounds.volume()));
  return std::make_unique<opaque_store>(r, bounds, counters);
}

}  // namespace rill::detail
