// Active messages between ranks: exactly-once delivery of mixed sizes between all pairs, replies,
// back-pressure, and shutdown that waits for every message.
#include <mpi.h>

#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"

namespace rill_test {
namespace {

class messages : public ::testing::TestWithParam<setup> {};

int my_mpi_rank() {
  int r = 0;
  if (under_mpi()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

per_pair received;  // [receiver * max_ranks + sender]
per_pair checksum;

void count(int from, std::uint64_t value) {
  const int me = rill::rank_me();
  received[static_cast<std::size_t>(me * max_ranks + from)]++;
  checksum[static_cast<std::size_t>(me * max_ranks + from)] += value;
}

std::uint64_t expected_value(int from, int to, int i) {
  return static_cast<std::uint64_t>(from) * 1000003u + static_cast<std::uint64_t>(to) * 101u +
         static_cast<std::uint64_t>(i);
}

struct wide {
  std::uint64_t words[40];  // 320 bytes, trivially copyable
};

// Sends `per_pair_count` messages from every rank to every rank, cycling through payload kinds:
// a trivially copyable scalar, a 320-byte struct, a string, a vector larger than large-bytes, and
// a map. Each message carries a value that the receiver sums per sender.
void all_pairs(int per_pair_count) {
  const int me = rill::rank_me();
  const int n = rill::rank_n();
  for (int i = 0; i < per_pair_count; ++i) {
    for (int to = 0; to < n; ++to) {
      const std::uint64_t v = expected_value(me, to, i);
      switch (i % 5) {
        case 0:
          rill::am::send(
              to, [](int from, std::uint64_t x) { count(from, x); }, me, v);
          break;
        case 1: {
          wide w{};
          for (std::uint64_t k = 0; k < 40; ++k) w.words[k] = v + k;
          rill::am::send(
              to,
              [](int from, wide x) {
                for (std::uint64_t k = 0; k < 40; ++k)
                  if (x.words[k] != x.words[0] + k) ADD_FAILURE() << "wide payload corrupted";
                count(from, x.words[0]);
              },
              me, w);
          break;
        }
        case 2:
          rill::am::send(
              to, [](int from, std::string s) { count(from, std::stoull(s)); }, me, std::to_string(v));
          break;
        case 3: {
          std::vector<std::uint64_t> big(3000 + static_cast<std::size_t>(i % 7), v);  // ~24 KiB: travels alone
          rill::am::send(
              to,
              [](int from, const std::vector<std::uint64_t>& b) {
                for (auto x : b)
                  if (x != b.front()) ADD_FAILURE() << "large payload corrupted";
                count(from, b.front());
              },
              me, big);
          break;
        }
        default: {
          std::map<std::string, std::uint64_t> m{{"value", v}, {"pad", 7}};
          rill::am::send(
              to, [](int from, std::map<std::string, std::uint64_t> mm) { count(from, mm.at("value")); }, me, m);
        }
      }
    }
  }
}

void check_all_pairs(int ranks, int per_pair_count) {
  for (int to : hosted_ranks(ranks, my_mpi_rank())) {
    for (int from = 0; from < ranks; ++from) {
      std::uint64_t sum = 0;
      for (int i = 0; i < per_pair_count; ++i) sum += expected_value(from, to, i);
      EXPECT_EQ(received[static_cast<std::size_t>(to * max_ranks + from)].load(),
                static_cast<std::uint64_t>(per_pair_count))
          << "messages from rank " << from << " to rank " << to;
      EXPECT_EQ(checksum[static_cast<std::size_t>(to * max_ranks + from)].load(), sum)
          << "payload sum from rank " << from << " to rank " << to;
    }
  }
}

TEST_P(messages, every_pair_receives_every_message_exactly_once) {
  reset(received);
  reset(checksum);
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  const int per_pair_count = 200;
  // No waiting in the program: run_spmd returns only once every message has been handled.
  EXPECT_EQ(rt.run_spmd([&] { all_pairs(per_pair_count); }), 0);
  check_all_pairs(rt.ranks(), per_pair_count);
}

TEST_P(messages, back_pressure_with_one_buffer_in_flight_loses_nothing) {
  reset(received);
  reset(checksum);
  args a(GetParam(), {"--rill:queue-buffers=1", "--rill:agg-bytes=128", "--rill:large-bytes=256"});
  rill::runtime rt(a.argc, a.argv());
  const int per_pair_count = 100;
  EXPECT_EQ(rt.run_spmd([&] { all_pairs(per_pair_count); }), 0);
  check_all_pairs(rt.ranks(), per_pair_count);
}

per_rank replies;

TEST_P(messages, waiting_fibers_collect_replies_from_every_rank) {
  reset(replies);
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  constexpr int tasks = 300;
  const int code = rt.run_spmd([] {
    const int n = rill::rank_n();
    rill::latch all(tasks);
    for (int t = 0; t < tasks; ++t) {
      rill::spawn([t, n, &all] {
        // Each task asks another rank to compute something and waits for the answer.
        std::uint64_t answer = 0;
        rill::latch got(1);
        const int to = (rill::rank_me() + t) % n;
        rill::am::send(
            to,
            [](std::uint64_t* out, rill::latch* done, int x) {
              rill::am::send(
                  rill::am::sender(),
                  [](std::uint64_t* o, rill::latch* d, std::uint64_t v) {
                    *o = v;
                    d->count_down();
                  },
                  out, done, static_cast<std::uint64_t>(x) * 3 + static_cast<std::uint64_t>(rill::rank_me()));
            },
            &answer, &got, t);
        got.wait();
        if (answer != static_cast<std::uint64_t>(t) * 3 + static_cast<std::uint64_t>(to))
          ADD_FAILURE() << "wrong reply";
        replies[static_cast<std::size_t>(rill::rank_me())]++;
        all.count_down();
      });
    }
    all.wait();
    return 0;
  });
  EXPECT_EQ(code, 0);
  for (int r : hosted_ranks(rt.ranks(), my_mpi_rank()))
    EXPECT_EQ(replies[static_cast<std::size_t>(r)].load(), static_cast<std::uint64_t>(tasks));
}

struct huge {
  std::uint64_t words[8192];  // 64 KiB, trivially copyable: as large as a whole default fiber stack
};

per_rank huge_received;

TEST_P(messages, trivially_copyable_argument_as_large_as_the_stack_arrives_intact) {
  reset(huge_received);
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  EXPECT_EQ(rt.run_spmd([] {
    auto h = std::make_unique<huge>();
    for (int to = 0; to < rill::rank_n(); ++to) {
      for (std::uint64_t k = 0; k < 8192; ++k) h->words[k] = k * 31 + static_cast<std::uint64_t>(to);
      rill::am::send(
          to,
          [](const huge& x) {
            for (std::uint64_t k = 0; k < 8192; ++k)
              if (x.words[k] != k * 31 + static_cast<std::uint64_t>(rill::rank_me())) {
                ADD_FAILURE() << "64 KiB payload corrupted at word " << k;
                return;
              }
            huge_received[static_cast<std::size_t>(rill::rank_me())]++;
          },
          *h);
    }
  }),
            0);
  for (int r : hosted_ranks(rt.ranks(), my_mpi_rank()))
    EXPECT_EQ(huge_received[static_cast<std::size_t>(r)].load(), static_cast<std::uint64_t>(rt.ranks()));
}

rill::latch* suspend_gate = nullptr;  // on rank 0
per_rank sender_kept;

TEST_P(messages, sender_is_still_right_after_a_handler_waited) {
  reset(sender_kept);
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  const int n = rt.ranks();
  rill::latch gate(n);
  EXPECT_EQ(rt.run_spmd([&gate] {
    // Only rank 0 starts the exchange, after it has published its gate.
    if (rill::rank_me() != 0) return;
    suspend_gate = &gate;
    for (int r = 0; r < rill::rank_n(); ++r) {
      rill::am::send(r, [] {
        rill::am::send(
            0,
            [](int from) {
              // Every handler but the last waits here while the others run on the same worker.
              suspend_gate->count_down();
              suspend_gate->wait();
              if (rill::am::sender() == from) sender_kept[static_cast<std::size_t>(from)]++;
            },
            rill::rank_me());
      });
    }
  }),
            0);
  if (my_mpi_rank() == 0) {
    for (int r = 0; r < n; ++r) EXPECT_EQ(sender_kept[static_cast<std::size_t>(r)].load(), 1u) << "from rank " << r;
  }
}

rill::latch* view_gate = nullptr;  // on rank 0
per_rank views_intact;             // by sender
constexpr int views_per_rank = 4;

double view_element(int from, int k, std::size_t i) {
  return static_cast<double>(from * 1000 + k) * 1e6 + static_cast<double>(i);
}

void check_view_after_wait(rill::view<double> v, int k, std::size_t expected_size) {
  const int from = rill::am::sender();
  // Every view handler waits here until all have arrived, so later buffers come in, are handled
  // and recycled while this one's view is held.
  view_gate->count_down();
  view_gate->wait();
  if (v.size() != expected_size) return;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != view_element(from, k, i)) return;
  views_intact[static_cast<std::size_t>(from)]++;
}

void send_views() {
  for (int k = 0; k < views_per_rank; ++k) {
    for (std::size_t size : {std::size_t{3000}, std::size_t{5}}) {  // 24 KB travels alone; 40 B is aggregated
      std::vector<double> v(size);
      for (std::size_t i = 0; i < size; ++i) v[i] = view_element(rill::rank_me(), k, i);
      rill::am::send(0, check_view_after_wait, rill::view(v), k, size);
    }
  }
}

// A handler's rill::view points into the received buffer, which must outlive a handler that waits.
TEST_P(messages, views_stay_intact_while_their_handler_waits) {
  reset(views_intact);
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  const int n = rt.ranks();
  rill::latch gate(n * views_per_rank * 2);
  EXPECT_EQ(rt.run_spmd([&gate] {
    if (rill::rank_me() != 0) return;
    view_gate = &gate;
    for (int r = 0; r < rill::rank_n(); ++r) rill::am::send(r, send_views);
  }),
            0);
  if (my_mpi_rank() == 0) {
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(views_intact[static_cast<std::size_t>(r)].load(), static_cast<std::uint64_t>(views_per_rank * 2))
          << "from rank " << r;
  }
}

per_pair lent_intact;       // [receiver * max_ranks + sender]
per_pair lent_last_intact;  // the same, for the sends whose one view is their last argument
per_rank small_lent_not_done;
// Element counts of the lent view: above the large threshold and the mpi transport's ring limit
// (read in place by MPI), above the large threshold only, and small (copied, aggregated).
constexpr std::size_t lent_sizes[] = {12800, 2500, 5};

double lent_element(int from, int to, std::size_t size, std::size_t i) {
  return static_cast<double>(from * 100 + to) * 1e7 + static_cast<double>(size) * 1e-3 + static_cast<double>(i);
}

void check_lent(rill::view<double> v, std::string label, rill::view<std::byte> tail, int to) {
  const int from = rill::am::sender();
  if (to != rill::rank_me() || label != "lent " + std::to_string(from)) return;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != lent_element(from, to, v.size(), i)) return;
  if (tail.size() != 3 || tail[0] != std::byte{1} || tail[2] != std::byte{3}) return;
  lent_intact[static_cast<std::size_t>(to * max_ranks + from)]++;
}

// One view as the last argument: under mpi a large one leaves as two messages, head and view.
void check_lent_last(int to, rill::view<double> v) {
  const int from = rill::am::sender();
  if (to != rill::rank_me()) return;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != lent_element(from, to, v.size(), i)) return;
  lent_last_intact[static_cast<std::size_t>(to * max_ranks + from)]++;
}

// Every rank sends every rank two messages per size, one with two views and one with a view as
// its last argument, without copying them; it waits for source completion and then scribbles
// over its buffers, which must not reach anyone.
void send_lent() {
  const int me = rill::rank_me();
  std::vector<std::unique_ptr<std::vector<double>>> kept;
  const std::vector<std::byte> tail{std::byte{1}, std::byte{2}, std::byte{3}};
  std::vector<rill::event> sent;
  for (int to = 0; to < rill::rank_n(); ++to) {
    for (std::size_t size : lent_sizes) {
      auto& v = *kept.emplace_back(std::make_unique<std::vector<double>>(size));
      for (std::size_t i = 0; i < size; ++i) v[i] = lent_element(me, to, size, i);
      const rill::event done =
          rill::am::send_zero_copy(to, check_lent, rill::view(v), "lent " + std::to_string(me), rill::view(tail), to);
      if (size == 5 && !done.has_triggered()) small_lent_not_done[static_cast<std::size_t>(me)]++;
      sent.push_back(done);
      sent.push_back(rill::am::send_zero_copy(to, check_lent_last, to, rill::view(v)));
    }
  }
  rill::merge(sent).wait();
  for (auto& v : kept) std::fill(v->begin(), v->end(), -1.0);
}

// am::send_zero_copy: the network reads the views' elements in place; its event says when the
// caller may reuse them. Small payloads are copied (the event has triggered at once).
TEST_P(messages, zero_copy_sends_deliver_the_lent_elements) {
  reset(lent_intact);
  reset(lent_last_intact);
  reset(small_lent_not_done);
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  const int n = rt.ranks();
  EXPECT_EQ(rt.run_spmd(send_lent), 0);
  if (under_mpi()) {
    const int me = my_mpi_rank();
    for (int from = 0; from < n; ++from)
      EXPECT_EQ(lent_intact[static_cast<std::size_t>(me * max_ranks + from)].load(), std::size(lent_sizes))
          << "at rank " << me << " from rank " << from;
    for (int from = 0; from < n; ++from)
      EXPECT_EQ(lent_last_intact[static_cast<std::size_t>(me * max_ranks + from)].load(), std::size(lent_sizes))
          << "at rank " << me << " from rank " << from;
    EXPECT_EQ(small_lent_not_done[static_cast<std::size_t>(me)].load(), 0u);
  } else {
    for (int to = 0; to < n; ++to)
      for (int from = 0; from < n; ++from)
        EXPECT_EQ(lent_intact[static_cast<std::size_t>(to * max_ranks + from)].load(), std::size(lent_sizes))
            << "at rank " << to << " from rank " << from;
    for (int to = 0; to < n; ++to)
      for (int from = 0; from < n; ++from)
        EXPECT_EQ(lent_last_intact[static_cast<std::size_t>(to * max_ranks + from)].load(), std::size(lent_sizes))
            << "at rank " << to << " from rank " << from;
    for (int r = 0; r < n; ++r) EXPECT_EQ(small_lent_not_done[static_cast<std::size_t>(r)].load(), 0u);
  }
}

per_rank hops_seen;
constexpr int chains = 50;
constexpr int length = 40;

void hop(int left) {
  hops_seen[static_cast<std::size_t>(rill::rank_me())]++;
  if (left == 0) return;
  // Detach work into a local task, which then sends on: termination must see both.
  rill::spawn([left] { rill::am::send((rill::rank_me() + left) % rill::rank_n(), hop, left - 1); });
}

TEST_P(messages, run_returns_only_after_all_forwarded_work_is_done) {
  reset(hops_seen);
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  const int code = rt.run([] {
    for (int c = 0; c < chains; ++c) rill::am::send(c % rill::rank_n(), hop, length);
    return 17;  // returns at once; the chains are still travelling
  });
  EXPECT_EQ(code, 17);  // on every rank
  std::uint64_t here = 0;
  for (int r : hosted_ranks(rt.ranks(), my_mpi_rank())) here += hops_seen[static_cast<std::size_t>(r)].load();
  std::uint64_t total = here;
  if (under_mpi()) MPI_Allreduce(&here, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, static_cast<std::uint64_t>(chains) * (length + 1));
}

per_rank delivered_after_refusal;

// A payload beyond what one message carries (4 GiB - 1, 2^31 - 25 under mpi) is refused before it
// is counted or sent: the send throws, later sends arrive, and the run ends (a message counted but
// never sent would hold the run forever). The view points nowhere: the refusal reads no element.
TEST_P(messages, payload_beyond_what_a_message_carries_is_refused_before_it_is_sent) {
  reset(delivered_after_refusal);
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  const int code = rt.run([] {
    const std::size_t limit = rill::am::max_payload_bytes();
    expect(limit <= std::numeric_limits<std::uint32_t>::max(), "the limit fits the wire's 32-bit length");
    expect(!under_mpi() || limit < (std::size_t{1} << 31), "under mpi the limit fits MPI's int count");
    const int to = rill::rank_n() - 1;
    const rill::view<std::byte> huge(reinterpret_cast<const std::byte*>(std::uintptr_t{4096}), limit + 1);
    std::string refusal;
    try {
      (void)rill::am::send_zero_copy(
          to, [](rill::view<std::byte>) {}, huge);
    } catch (const rill::misuse_error& e) {
      refusal = e.what();
    }
    expect(refusal.find("larger than a message carries") != std::string::npos, "refused, said: " + refusal);
    // A copying send measures what it can before encoding (a view, a vector of trivially copyable
    // elements, a string): it is refused without reading an element, not after copying GiBs.
    refusal.clear();
    try {
      rill::am::send(
          to, [](rill::view<std::byte>) {}, huge);
    } catch (const rill::misuse_error& e) {
      refusal = e.what();
    }
    expect(refusal.find("larger than a message carries") != std::string::npos, "send refused, said: " + refusal);
    rill::am::send(to, [] { delivered_after_refusal[static_cast<std::size_t>(rill::rank_me())]++; });
    return 0;
  });
  EXPECT_EQ(code, 0);
  std::uint64_t here = 0;
  for (int r : hosted_ranks(rt.ranks(), my_mpi_rank()))
    here += delivered_after_refusal[static_cast<std::size_t>(r)].load();
  std::uint64_t total = here;
  if (under_mpi()) MPI_Allreduce(&here, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, 1u);
}

TEST_P(messages, spmd_returns_the_lowest_ranked_failure) {
  args a(GetParam());
  rill::runtime rt(a.argc, a.argv());
  const int n = rt.ranks();
  const int code = rt.run_spmd([] { return rill::rank_me() == 0 ? 0 : 10 + rill::rank_me(); });
  EXPECT_EQ(code, n == 1 ? 0 : 11);
}

INSTANTIATE_TEST_SUITE_P(transports, messages, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
