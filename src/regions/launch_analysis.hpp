// The analysis of launches on logical regions, per issuing rank, in program order: who each
// launch waits for (the logical state: earlier users of each region tree), and where its data is
// (the physical state: instances of each tree and the points each holds valid, per field).
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "rill/event.hpp"
#include "rill/instance.hpp"
#include "rill/launch.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

struct region_node;

// An earlier launch's use of a region, kept until a later write of the same points and fields
// makes it redundant or it has finished.
struct region_user {
  region reg;
  index_space<3> space;
  std::vector<field_id> fields;  // sorted
  privilege priv;
  event done;
};

// Points of one field that an instance holds the latest data for, and the event after which the
// copies that brought them in are complete.
struct valid_points {
  index_space<3> points;
  event ready = event::none();
};

// An instance the analysis made for a tree: on which rank, covering which points, with every field
// of the tree.
struct tracked_instance {
  instance inst;
  int rank = 0;
  index_space<3> space;
  event made;
  std::map<field_id, valid_points> valid;
};

struct tree_state {
  std::vector<region_user> users;
  std::vector<tracked_instance> instances;
};

class launch_analysis final : public rank_module {
 public:
  launch_analysis();

  launch_plan plan(const std::vector<requirement>& reqs, event after, std::int64_t color);
  void set_mapper(std::shared_ptr<mapper> m);
  launch_counts counts() const;

  void report_counters(counter_report& out) override;

 private:
  // One analysis at a time on a rank, first come first served; a turn may wait (for a node from
  // another rank, a message's room), so it is a chain of events, not a mutex.
  class turn {
   public:
    explicit turn(launch_analysis& a);
    ~turn();
    turn(const turn&) = delete;
    turn& operator=(const turn&) = delete;

   private:
    user_event mine_;
  };

  int choose_rank(const std::vector<requirement>& reqs, const std::vector<std::shared_ptr<const region_node>>& nodes,
                  std::int64_t color);
  tracked_instance& instance_for(tree_state& tree, const region_node& node, int rank);

  std::mutex turns_lock_;
  event last_turn_ = event::none();                      // under turns_lock_
  std::shared_ptr<mapper> mapper_;                       // in turns
  std::unordered_map<std::uint64_t, tree_state> trees_;  // by root id, in turns
  std::atomic<std::uint64_t> launches_{0}, instances_made_{0}, copies_{0}, bytes_copied_{0};
};

inline launch_analysis& analysis_here(const char* what) { return current_module<launch_analysis>(what); }

}  // namespace rill::detail
