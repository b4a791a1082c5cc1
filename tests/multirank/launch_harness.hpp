// What the launch tests share: a mapper that runs every launch on the rank it is told.
#pragma once

#include "rill/launch.hpp"

namespace rill_test {

class fixed_mapper : public rill::mapper {
 public:
  int rank = 0;
  int map_task(const rill::mapping_query&) override { return rank; }
};

}  // namespace rill_test
