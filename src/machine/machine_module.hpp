// The machine layer's part of a rank: the description of the machine (rill::machine), gathered at
// start-up and shared by the ranks of this process.
#pragma once

#include <memory>

#include "rill/machine.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

class machine_module final : public rank_module {
 public:
  explicit machine_module(std::shared_ptr<const rill::machine> m) : rank_module("machine"), machine_(std::move(m)) {}
  const rill::machine& model() const { return *machine_; }

 private:
  std::shared_ptr<const rill::machine> machine_;
};

}  // namespace rill::detail
