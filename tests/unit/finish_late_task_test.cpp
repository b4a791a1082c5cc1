// A task (or error) that reaches a finish scope's home after finish() returned there used to be
// applied to whatever lay at the ended scope's address, a use after free. The home now recognises
// its open scopes by a stamp in their key and stops the run naming the late arrival.
#include <gtest/gtest.h>

#include "rill/error.hpp"
#include "sync/finish_table.hpp"

namespace rill::detail {
namespace {

constexpr const char* late = "a task of a finish scope that has ended arrived from rank 1";

TEST(FinishLateTask, ATaskOfAnOpenScopeFindsItsHome) {
  finish_table table(0);
  finish_proxy home;
  table.open_home(home);
  bool ack_now = false;
  EXPECT_EQ(table.arrive(home.key, 1, 0, ack_now), &home);
  EXPECT_TRUE(ack_now);
  EXPECT_EQ(home.count.load(), 2);
}

TEST(FinishLateTask, ATaskOfAnEndedScopeIsAFatalErrorNamingIt) {
  finish_table table(0);
  finish_proxy home;
  table.open_home(home);
  const finish_key ended = home.key;
  finish_table::close_home(home);
  bool ack_now = false;
  EXPECT_EXIT(table.arrive(ended, 1, 0, ack_now), ::testing::ExitedWithCode(rill::exit_fatal), late);
}

// The next scope often lives at the same address (the same frame of the same fiber): a late task
// of the old one must not count in the new one.
TEST(FinishLateTask, ATaskOfAnEndedScopeIsRefusedByTheNextScopeAtTheSameAddress) {
  finish_table table(0);
  finish_proxy home;
  table.open_home(home);
  const finish_key ended = home.key;
  finish_table::close_home(home);
  table.open_home(home);
  EXPECT_NE(home.key, ended);
  EXPECT_EQ(home.key.home_proxy(), ended.home_proxy());
  bool ack_now = false;
  EXPECT_EQ(table.arrive(home.key, 1, 0, ack_now), &home);
  EXPECT_EXIT(table.arrive(ended, 1, 0, ack_now), ::testing::ExitedWithCode(rill::exit_fatal), late);
}

}  // namespace
}  // namespace rill::detail
