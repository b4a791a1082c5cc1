// A rank's instances: allocation in its memories with their capacities, lookup, destruction.
#include "data/data_module.hpp"

#include <fmt/format.h>

#include <cstring>

#include "data/opaque_elements.hpp"

#include "rill/error.hpp"

namespace rill::detail {
namespace {

const char* name_of(memory_kind k) {
  switch (k) {
    case memory_kind::registered: return "registered";
    case memory_kind::external: return "external";
    default: return "system";
  }
}

}  // namespace

instance_record::~instance_record() {
  if (!data) return;
  if (placement.has_opaque()) destroy_objects(*this);  // (none left if destroyed: an instance the run ended with)
  if (in_segment)
    in_segment->deallocate(data, segment_tag);
  else
    kept_by->give({data, storage_bytes});
}

data_module::data_module(int rank, const rill::machine& machine, global_module& global, const rill::config& cfg)
    : rank_module("data"),
      rank_(rank),
      machine_(machine),
      global_(global),
      system_capacity_(static_cast<std::size_t>(machine.capacity(memory::system(rank)))),
      registered_capacity_(static_cast<std::size_t>(machine.capacity(memory::registered(rank)))),
      kept_storage_(std::make_shared<storage_cache>(cfg.memory_keep_bytes)),
      io_work_(cfg.io_ordering, cfg.io_depth, cfg.io_fuse_bytes, io_),
      direct_io_bytes_(cfg.io_direct_bytes) {}

std::uint64_t data_module::next_instance_id() {
  std::lock_guard g(lock_);
  return (static_cast<std::uint64_t>(rank_) << 40) | next_sequence_++;
}

std::byte* data_module::reachable(instance other, std::uintptr_t address, std::size_t bytes) const {
  if (address == 0 || !global_.shares_memory()) return nullptr;
  if (machine_.same_process(rank_, other.owner())) return reinterpret_cast<std::byte*>(address);
  if (other.location().kind() != memory_kind::registered) return nullptr;
  const segment_view* seg = global_.addressable_segment(other.owner());
  if (!seg || seg->check_bounds(address, bytes, 1) != range_fault::none) return nullptr;
  return static_cast<std::byte*>(seg->translate(address));
}

bool data_module::maps_my_segment(int rank) const {
  return global_.shares_memory() && rank != rank_ && global_.addressable_segment(rank) != nullptr;
}

segment::allocation data_module::stage(std::size_t bytes) {
  {
    std::lock_guard g(lock_);
    if (staged_ + bytes > staging_budget) return {nullptr, 0};
    staged_ += bytes;
  }
  const segment::allocation a = global_.memory_segment().allocate(bytes, instance_alignment);
  if (!a.at) {
    std::lock_guard g(lock_);
    staged_ -= bytes;
  }
  return a;
}

void data_module::unstage(void* at, std::uint8_t tag, std::size_t bytes) {
  global_.memory_segment().deallocate(at, tag);
  std::lock_guard g(lock_);
  staged_ -= bytes;
}

const std::byte* data_module::staged_at(int owner, std::uintptr_t address, std::size_t bytes) const {
  const segment_view* seg = global_.addressable_segment(owner);
  if (!seg || seg->check_bounds(address, bytes, 1) != range_fault::none)
    throw misuse_error(fmt::format("rill::copy: {} bytes staged at {:#x} do not lie in rank {}'s mapped segment", bytes,
                                   address, owner));
  return static_cast<const std::byte*>(seg->translate(address));
}

std::size_t data_module::capacity(memory_kind k) const {
  return k == memory_kind::registered ? registered_capacity_ : system_capacity_;
}

std::size_t data_module::used(memory_kind k) const {
  std::lock_guard g(lock_);
  return k == memory_kind::registered ? used_registered_ : used_system_;
}

void data_module::create(instance handle, const index_space<3>& space, const field_space& fields, const layout& l) {
  auto rec = std::make_shared<instance_record>();
  rec->handle = handle;
  rec->space = space;
  rec->fields = fields;
  rec->placement = lay_out(handle.dimensions(), space.bounds(), fields, l);
  const std::size_t bytes = rec->placement.bytes;
  const memory_kind kind = handle.location().kind();
  std::lock_guard g(lock_);
  std::size_t& used = kind == memory_kind::registered ? used_registered_ : used_system_;
  const std::size_t cap = capacity(kind);
  const auto refuse = [&](const char* why) {
    throw misuse_error(fmt::format(
        "rill::instance::create: instance {:#x} needs {} bytes, which {} memory of rank {} cannot give: capacity {} "
        "bytes, {} in use by other instances{}",
        handle.id(), bytes, name_of(kind), rank_, cap, used, why));
  };
  if (bytes > cap - std::min(cap, used)) refuse("");
  if (bytes > 0) {
    if (kind == memory_kind::registered) {
      const segment::allocation a = global_.memory_segment().allocate(bytes, instance_alignment);
      if (!a.at) refuse(" (what is free of the segment is fragmented or taken by global pointers: --rill:segment)");
      rec->data = static_cast<std::byte*>(a.at);
      rec->segment_tag = a.tag;
      rec->in_segment = &global_.memory_segment();
    } else {
      // What the memory holds is its live instances' and the storage kept for the next. (Kept
      // blocks are given back here only near the capacity: rarely, and under lock_.)
      const storage_cache::block b = kept_storage_->take(bytes, cap - used - bytes);
      if (!b.at) refuse(" (the operating system refused them)");
      rec->data = b.at;
      rec->storage_bytes = b.bytes;
      rec->kept_by = kept_storage_;
    }
    if (rec->placement.has_opaque()) std::memset(rec->data, 0, bytes);  // opaque fields start null
  }
  used += bytes;
  live_.emplace(handle.id(), std::move(rec));
}

void data_module::attach(instance handle, const index_space<3>& space, const field_space& fields,
                         instance_layout placement, std::shared_ptr<external_store> store) {
  auto rec = std::make_shared<instance_record>();
  rec->handle = handle;
  rec->space = space;
  rec->fields = fields;
  rec->placement = std::move(placement);
  rec->external = std::move(store);
  std::lock_guard g(lock_);
  live_.emplace(handle.id(), std::move(rec));
}

std::shared_ptr<const instance_record> data_module::destroy(instance handle) {
  std::shared_ptr<instance_record> gone;
  {
    std::lock_guard g(lock_);
    const auto it = live_.find(handle.id());
    if (it == live_.end())
      throw misuse_error(
          fmt::format("rill::instance::destroy: instance {:#x} does not exist on rank {} (destroyed "
                      "already, or its creation failed)",
                      handle.id(), rank_));
    gone = std::move(it->second);
    live_.erase(it);
    if (!gone->external)
      (handle.location().kind() == memory_kind::registered ? used_registered_ : used_system_) -= gone->placement.bytes;
  }
  // Its objects go now, not with the last holder of the record (a message being sent keeps it a
  // while, but pieces of opaque fields are serialized copies): the destroy's event means they are.
  if (!gone->external && gone->placement.has_opaque()) destroy_objects(*gone);
  return gone;
}

std::shared_ptr<const instance_record> data_module::find(instance handle, const char* what) const {
  std::shared_ptr<const instance_record> rec = find_any(handle, what);
  if (rec->external)
    throw misuse_error(
        fmt::format("{}: instance {:#x} is {} attached on rank {}: its data has no address; copy it "
                    "into an instance in memory (rill::copy)",
                    what, handle.id(), rec->external->name(), rank_));
  return rec;
}

bool data_module::has(instance handle) const {
  std::lock_guard g(lock_);
  return live_.contains(handle.id());
}

std::shared_ptr<const instance_record> data_module::find_any(instance handle, const char* what) const {
  if (handle.owner() != rank_)
    throw misuse_error(fmt::format(
        "{}: instance {:#x} lives in {} memory of rank {}, not on rank {}: use it from a "
        "task on rank {} (rill::proc({}).spawn), or copy it here",
        what, handle.id(), name_of(handle.location().kind()), handle.owner(), rank_, handle.owner(), handle.owner()));
  std::lock_guard g(lock_);
  const auto it = live_.find(handle.id());
  if (it == live_.end())
    throw misuse_error(
        fmt::format("{}: instance {:#x} does not exist on rank {}: destroyed, not made yet (wait for "
                    "its ready event), or its creation failed",
                    what, handle.id(), rank_));
  return it->second;
}

data_module::copy_outcome data_module::piece_arrived(event done, std::uint32_t total, bool failed) {
  std::lock_guard g(lock_);
  copy_arrivals& a = arrivals_[done];
  const bool first_failure = failed && !a.failed;
  a.failed = a.failed || failed;
  const bool last = ++a.pieces == total;
  const bool failed_before = a.failed && !first_failure;
  if (last) arrivals_.erase(done);
  if (first_failure) return copy_outcome::poison;
  return last && !failed_before ? copy_outcome::trigger : copy_outcome::wait;
}

}  // namespace rill::detail
