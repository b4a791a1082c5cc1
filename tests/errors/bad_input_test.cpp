// Bad input must give a clear error naming the cause and the documented exit code: wrong flags,
// corrupt or unknown messages, out-of-range ranks, exceptions nobody handles.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "messages/messenger.hpp"
#include "messages/wire_format.hpp"
#include "rill/rill.hpp"

namespace {

struct outcome {
  int exit_code;
  std::string output;  // stdout and stderr
};

outcome run(const std::string& command) {
  outcome o{-1, {}};
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return o;
  std::array<char, 4096> chunk{};
  while (std::fgets(chunk.data(), chunk.size(), p)) o.output += chunk.data();
  const int status = pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

const std::string tree = RILL_TREE_PATH;

TEST(flags, unknown_flag_is_named_and_exits_2) {
  auto o = run(tree + " --rill:bogus=1");
  EXPECT_EQ(o.exit_code, rill::exit_usage);
  EXPECT_NE(o.output.find("unknown option --rill:bogus"), std::string::npos) << o.output;
}

TEST(flags, zero_ranks_is_rejected) {
  auto o = run(tree + " --rill:ranks=0");
  EXPECT_EQ(o.exit_code, rill::exit_usage);
  EXPECT_NE(o.output.find("--rill:ranks=0"), std::string::npos) << o.output;
}

TEST(flags, zero_workers_is_rejected) {
  auto o = run(tree + " --rill:workers=0");
  EXPECT_EQ(o.exit_code, rill::exit_usage);
  EXPECT_NE(o.output.find("--rill:workers=0"), std::string::npos) << o.output;
}

TEST(flags, malformed_values_are_rejected) {
  for (const char* bad : {"--rill:ranks=abc", "--rill:stack=12Q", "--rill:transport=tcp", "--rill:log=loud",
                          "--rill:ranks", "--rill:chaos=-1"}) {
    auto o = run(tree + " " + bad);
    EXPECT_EQ(o.exit_code, rill::exit_usage) << bad;
    EXPECT_NE(o.output.find("rill: error:"), std::string::npos) << bad << ": " << o.output;
  }
}

TEST(flags, environment_variables_are_checked_too) {
  auto o = run("RILL_WORKERS=0 " + tree);
  EXPECT_EQ(o.exit_code, rill::exit_usage);
  EXPECT_NE(o.output.find("workers"), std::string::npos) << o.output;
}

TEST(flags, ranks_with_mpi_transport_is_rejected) {
  auto o = run(tree + " --rill:transport=mpi --rill:ranks=4");
  EXPECT_EQ(o.exit_code, rill::exit_usage);
  EXPECT_NE(o.output.find("mpirun -np"), std::string::npos) << o.output;
}

TEST(flags, help_lists_every_option_and_exits_0) {
  auto o = run(tree + " --rill:help");
  EXPECT_EQ(o.exit_code, 0);
  for (const char* name : {"ranks", "workers", "transport", "stack", "agg-bytes", "agg-age-us", "large-bytes",
                           "queue-buffers", "chaos", "log", "idle-poll-us", "event-graph", "hang-report-s"}) {
    EXPECT_NE(o.output.find(std::string("--rill:") + name), std::string::npos) << name;
  }
}

TEST(flags, program_arguments_survive) {
  auto o = run(tree + " --rill:ranks=2 --depth 3 --fanout 2");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("(8 leaves) on 2 ranks"), std::string::npos) << o.output;
}

// ---- in-process fatal errors (death tests re-run this binary up to the failing statement) ----

int run_two_ranks(void (*body)()) {
  std::vector<std::string> words{"bad_input_test", "--rill:transport=local", "--rill:ranks=2", "--rill:workers=1"};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(words.size());
  rill::runtime rt(argc, argv.data());
  return rt.run(body);
}

// Sends raw bytes to rank 1 as if they came from rank 0.
void send_raw(std::vector<std::byte> b) { rill::detail::current_messenger("test").out().transmit(1, std::move(b), 1); }

std::vector<std::byte> buffer_with(std::uint16_t id, std::size_t declared, std::size_t actual) {
  std::vector<std::byte> b;
  rill::detail::wire::begin_buffer(b, 0, 0);
  rill::detail::wire::append_message(b, id, declared);
  b.resize(b.size() - declared + actual);
  return b;
}

TEST(fatal, unknown_handler_id_names_the_sender) {
  EXPECT_EXIT(run_two_ranks([] { send_raw(buffer_with(0x7ffe, 4, 4)); }), ::testing::ExitedWithCode(rill::exit_fatal),
              "unknown handler id 32766 in message 0 from rank 0");
}

TEST(fatal, truncated_message_names_the_sender) {
  EXPECT_EXIT(run_two_ranks([] { send_raw(buffer_with(0, 100, 10)); }), ::testing::ExitedWithCode(rill::exit_fatal),
              "truncated message 0 of 1 from rank 0");
}

TEST(fatal, bad_magic_is_refused) {
  EXPECT_EXIT(run_two_ranks([] {
                auto b = buffer_with(0, 4, 4);
                b[0] = std::byte{0};
                send_raw(std::move(b));
              }),
              ::testing::ExitedWithCode(rill::exit_fatal), "does not start with Rill's magic number");
}

TEST(fatal, payload_of_the_wrong_size_names_sender_and_handler) {
  EXPECT_EXIT(run_two_ranks([] {
                // A real handler (a function pointer and a uint64_t: 16 bytes) given 3 bytes.
                std::vector<std::byte> b;
                rill::detail::wire::begin_buffer(b, 0, 0);
                const auto id = static_cast<std::uint16_t>(
                    rill::detail::handler_id<rill::detail::am_handler<void (*)(std::uint64_t), std::uint64_t>>::value);
                rill::detail::wire::append_message(b, id, 3);
                send_raw(std::move(b));
              }),
              ::testing::ExitedWithCode(rill::exit_fatal), "corrupt message from rank 0 to rank 1");
}

TEST(fatal, throwing_handler_names_the_ranks) {
  EXPECT_EXIT(run_two_ranks([] { rill::am::send(1, [] { throw std::runtime_error("handler exploded"); }); }),
              ::testing::ExitedWithCode(rill::exit_fatal), "from rank 0 to rank 1 threw: handler exploded");
}

TEST(fatal, send_to_a_rank_that_does_not_exist) {
  EXPECT_EXIT(run_two_ranks([] { rill::am::send(5, [] {}); }), ::testing::ExitedWithCode(rill::exit_fatal),
              "rill::am::send to rank 5, but the ranks are 0..1");
}

// The zero-copy send refuses before it reads any element, so the view may point nowhere.
TEST(fatal, payload_beyond_the_wire_limit_is_refused) {
  EXPECT_EXIT(run_two_ranks([] {
                const rill::view<std::byte> huge(reinterpret_cast<const std::byte*>(std::uintptr_t{4096}),
                                                 std::size_t{5} << 30);
                (void)rill::am::send_zero_copy(
                    1, [](rill::view<std::byte>) {}, huge);
              }),
              ::testing::ExitedWithCode(rill::exit_fatal), "payload of 5368709[0-9]+ bytes is larger than a message");
}

TEST(fatal, task_exception_is_reported) {
  EXPECT_EXIT(run_two_ranks([] { rill::spawn([] { throw std::runtime_error("task exploded"); }); }),
              ::testing::ExitedWithCode(rill::exit_fatal), "task exploded");
}

}  // namespace
