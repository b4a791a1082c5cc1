// A launch's analysis remembered, to be repeated without being done again (docs/regions.md,
// "Repeated launches"). A program launches the same tasks on the same regions step after step,
// and most steps find the state as the step before left it, but for the events. The analysis of
// a launch depends on the state's shape alone: which uses each region has (their fields,
// privileges, coherences, instances, operators), which instances hold which points valid, and
// the mapper's choice from those. So when a launch finds a tree's uses hashing as they did when
// the same launch was analysed, and nothing else of the tree changed since, it is planned as that
// launch was: the same rank and instances, waiting for the uses of the same shapes at the same
// regions, and recording its own uses the same way. Only launches that leave the data where it
// is are remembered: no instance made, no copy, no reduction pending in their trees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "common/hash_mix.hpp"
#include "common/small_vector.hpp"
#include "regions/region_state.hpp"
#include "rill/launch.hpp"
#include "rill/reservation.hpp"

namespace rill::detail {

// Which launch: its requirements' privileges, coherences, operators and fields (interned once per
// launch, see launch_analysis::shape_of) and the regions they name -- for an index launch, the
// partition it is over and the partitions (or regions) its requirements name, its points' memos
// found by color.
struct memo_key {
  std::uint32_t shape = 0;
  small_vector<std::uint64_t, 3> names;
  bool operator==(const memo_key&) const = default;
};

struct memo_key_hash {
  std::size_t operator()(const memo_key& k) const {
    std::uint64_t h = hash_mix(k.shape);
    for (std::uint64_t n : k.names) h = hash_mix(h ^ n);
    return h;
  }
};

struct launch_memo {
  // A tree the launch looked at, as it found it.
  struct tree_seen {
    tree_state* tree;
    std::uint64_t uses_hash;
    std::uint64_t changes;
  };
  // The launch waited for the uses of this shape at this region (the event is the current one's).
  struct waited {
    node_state* at;
    region_user shape;
  };
  // A requirement's use, recorded at its region as the analysis did, and its instance, whose
  // making and valid points' copies it waits for.
  struct own_use {
    tree_state* tree;
    node_state* at;
    region_user use;  // (its event the launch's)
    bool overwrites;  // an exclusive write: drops the uses it covers first
  };
  bool known = false;  // (else nothing is remembered yet)
  int rank = 0;
  small_vector<tree_seen, 2> trees;
  small_vector<waited, 4> waits;
  small_vector<own_use, 2> uses;
  shared_regions regions;
  std::vector<reservation> locks;  // of atomic requirements, in acquisition order
};

// Starts loading what the repeats of an index launch's next points will read, while point `c` is
// planned: each point's memo, the state of its regions and its list of regions were last touched
// a whole launch ago, a thousand points of state back, and are no longer in the cache. In three
// steps, each reading what the one before brought in: memos 8 points ahead, their regions' states
// 4 ahead, those states' uses 2 ahead.
inline void prefetch_ahead(const std::vector<launch_memo>& memos, std::size_t c) {
  auto lines = [](const void* p, std::size_t bytes) {
    for (std::size_t at = 0; at < bytes; at += 64) __builtin_prefetch(static_cast<const char*>(p) + at);
  };
  if (c + 8 < memos.size()) lines(&memos[c + 8], sizeof(launch_memo));
  if (c + 4 < memos.size()) {
    const launch_memo& m = memos[c + 4];
    for (const launch_memo::waited& w : m.waits) __builtin_prefetch(&w.at->users);
    for (const launch_memo::own_use& u : m.uses) __builtin_prefetch(&u.at->users);
  }
  if (c + 2 < memos.size()) {
    const launch_memo& m = memos[c + 2];
    for (const launch_memo::waited& w : m.waits) lines(w.at->users.data(), w.at->users.size() * sizeof(region_user));
  }
}

// A context's remembered launches. A program with ever new launches would fill it: past a bound
// it starts over (a launch analysed again is remembered again). What it returns stays until the
// next call.
class launch_memos {
 public:
  // A single launch's.
  launch_memo& single(const memo_key& k) {
    auto it = singles_.find(k);
    if (it != singles_.end()) return it->second;
    make_room(1);
    return singles_[k];
  }
  // An index launch's points', by color.
  std::vector<launch_memo>& points(const memo_key& k, std::size_t colors) {
    auto it = indexed_.find(k);
    if (it != indexed_.end() && it->second.size() == colors) return it->second;
    make_room(colors);
    std::vector<launch_memo>& by_color = indexed_[k];
    by_color.assign(colors, {});
    return by_color;
  }

 private:
  void make_room(std::size_t more) {
    constexpr std::size_t most = 1 << 16;
    held_ += more;
    if (held_ <= most) return;
    singles_.clear();
    indexed_.clear();
    held_ = more;
  }

  std::unordered_map<memo_key, launch_memo, memo_key_hash> singles_;
  std::unordered_map<memo_key, std::vector<launch_memo>, memo_key_hash> indexed_;
  std::size_t held_ = 0;  // memos made since the last start
};

}  // namespace rill::detail
