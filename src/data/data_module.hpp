// The data layer's part of a rank: the instances whose memory is on this rank, and how much of
// each memory they take.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "data/external_store.hpp"
#include "data/instance_layout.hpp"
#include "data/io_queue.hpp"
#include "data/storage_cache.hpp"
#include "global/global_module.hpp"
#include "rill/config.hpp"
#include "rill/instance.hpp"
#include "rill/machine.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

// One instance, on its owner. Its storage is freed with the record, so that an operation that
// still holds it (a copy running when the destroy's precondition let it through too early) never
// writes freed memory.
struct instance_record {
  instance handle;
  index_space<3> space;  // padded to 3 dimensions (rill::padded_to_3d)
  field_space fields;
  instance_layout placement;
  std::byte* data = nullptr;
  std::uint8_t segment_tag = 0;   // registered memory: the allocation's generation
  segment* in_segment = nullptr;  // registered memory: where to free it
  // System memory: where its storage goes back to, and the storage's size (at least placement's).
  std::shared_ptr<storage_cache> kept_by;
  std::size_t storage_bytes = 0;
  // External memory: the resource holding the data (no storage here), reached on I/O threads.
  std::shared_ptr<external_store> external;
  ~instance_record();
};

class data_module final : public rank_module {
 public:
  data_module(int rank, const rill::machine& machine, global_module& global, const rill::config& cfg);

  int id() const { return rank_; }
  // A fresh instance id: this rank in the top 24 bits, a sequence number below (never 0).
  std::uint64_t next_instance_id();

  // Makes the instance here; throws rill::misuse_error when its memory has no room or its layout
  // does not fit.
  void create(instance handle, const index_space<3>& space, const field_space& fields, const layout& l);
  // An instance in external memory whose data is `store` (opened and checked already).
  void attach(instance handle, const index_space<3>& space, const field_space& fields, instance_layout placement,
              std::shared_ptr<external_store> store);
  // Forgets the instance (its storage goes with the last operation holding it) and returns its
  // record; throws rill::misuse_error for one that does not exist here.
  std::shared_ptr<const instance_record> destroy(instance handle);
  // The record of an instance in memory; throws rill::misuse_error naming `what` when it does
  // not exist here or is external (its data has no address: copies reach it).
  std::shared_ptr<const instance_record> find(instance handle, const char* what) const;
  bool has(instance handle) const;
  // The same for any instance, external ones too (copies and fills, which handle them).
  std::shared_ptr<const instance_record> find_any(instance handle, const char* what) const;

  io_counters& io() { return io_; }
  // --rill:io-direct: the fewest bytes a raw file's read or write moves bypassing the page cache.
  std::size_t direct_io_bytes() const { return direct_io_bytes_; }
  // The order in which this rank's I/O threads take the external I/O that is ready.
  io_queue& io_work() { return io_work_; }

  // Where this rank can load and store the `bytes` of another rank's instance that start at
  // `address` there: the same address when both ranks share a process, the mapping of the
  // owner's segment for registered memory of a node neighbour (if they lie in it); nullptr when
  // it cannot, or --rill:shared-segments=off says not to.
  std::byte* reachable(instance other, std::uintptr_t address, std::size_t bytes) const;

  std::size_t capacity(memory_kind k) const;
  std::size_t used(memory_kind k) const;

  // Staging for copies to a node neighbour's system memory, which this rank cannot address but
  // which can address this rank's segment: whether `rank` maps it, and room in it for a piece
  // (at most staging_budget bytes staged at once, so copies never crowd out instances and
  // rill::new_array; null when there is none now) and its release.
  static constexpr std::size_t staging_budget = std::size_t{8} << 20;
  bool maps_my_segment(int rank) const;
  segment::allocation stage(std::size_t bytes);
  void unstage(void* at, std::uint8_t tag, std::size_t bytes);
  // Where this rank reads `bytes` that rank `owner` staged at `address` in its segment; throws
  // rill::misuse_error when they do not lie in the mapped segment.
  const std::byte* staged_at(int owner, std::uintptr_t address, std::size_t bytes) const;

  // A piece of the copy whose event is `done` (`total` pieces in all) arrived here, written or
  // (failed) not: what to do with the copy's event now. Poisoned once, at the first failure.
  enum class copy_outcome { wait, trigger, poison };
  copy_outcome piece_arrived(event done, std::uint32_t total, bool failed);

 private:
  const int rank_;
  const rill::machine& machine_;
  global_module& global_;
  const std::size_t system_capacity_;
  const std::size_t registered_capacity_;
  // System memory's storage of destroyed instances, for the next (--rill:memory-keep); records
  // share it, so that one outliving the module still has somewhere to give its storage back.
  const std::shared_ptr<storage_cache> kept_storage_;
  std::uint64_t next_sequence_ = 1;  // under lock_
  mutable std::mutex lock_;
  std::unordered_map<std::uint64_t, std::shared_ptr<instance_record>> live_;
  std::size_t used_system_ = 0, used_registered_ = 0;
  std::size_t staged_ = 0;  // under lock_
  struct copy_arrivals {
    std::uint32_t pieces = 0;
    bool failed = false;
  };
  std::map<event, copy_arrivals> arrivals_;  // copies into this rank with pieces still to come
  io_counters io_;
  io_queue io_work_;  // (after io_, which it counts in)
  const std::size_t direct_io_bytes_;
};

inline data_module& data_here(const char* what) { return current_module<data_module>(what); }

}  // namespace rill::detail
