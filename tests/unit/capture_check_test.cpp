// In a debug build of a program (NDEBUG unset: forced below, as the test presets build with
// NDEBUG), a message to another rank whose callable captured a local by reference is refused at
// the call, on the local transport too, where it would otherwise work and only crash under MPI.
#undef NDEBUG
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "rill/rill.hpp"
#include "test_argv.hpp"

namespace {

template <class F>
int on_two_ranks(F fn) {
  rill_test::test_argv a({"capture_check_test", "--rill:transport=local", "--rill:ranks=2", "--rill:workers=1"});
  rill::runtime rt(a.argc, a.argv());
  return rt.run([&] {
    fn();
    return 0;
  });
}

std::atomic<long> seen{0};

TEST(CaptureCheck, AReferenceToALocalIsRefusedNamingTheRankAndTheFix) {
  EXPECT_EQ(on_two_ranks([] {
              long local = 41;
              try {
                rill::am::send(1, [&local] { seen += local; });
                ADD_FAILURE() << "a captured reference was shipped";
              } catch (const rill::misuse_error& e) {
                const std::string what = e.what();
                EXPECT_NE(what.find("rill::am::send to rank 1"), std::string::npos) << what;
                EXPECT_NE(what.find("capture it by value"), std::string::npos) << what;
              }
              long* address = &local;
              EXPECT_THROW(rill::am::send(1, [address] { seen += *address; }), rill::misuse_error);
            }),
            0);
}

TEST(CaptureCheck, ValuesAndMessagesToTheSameRankPass) {
  seen = 0;
  EXPECT_EQ(on_two_ranks([] {
              long local = 41;
              rill::am::send(1, [local] { seen += local; });
              rill::am::send(0, [&local] { seen += local; });  // same rank: the caller's stack is there
              rill::am::flush();
              while (seen.load() != 82) rill::yield();
            }),
            0);
  EXPECT_EQ(seen.load(), 82);
}

}  // namespace
