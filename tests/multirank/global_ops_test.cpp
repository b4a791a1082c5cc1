// One-sided operations through global pointers: rput/rget (single values, bulk, strided), remote
// atomics against a sequential model and under contention from every rank and worker, delegates
// serialising plain counters, feed-forward operations with a completion_counter, preconditions,
// and every bad input. Each test runs with shared segments on (loads, stores and hardware atomics
// between the local transport's ranks) and off (every operation on another rank is a message,
// reordered by the chaos seed).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "global_harness.hpp"
#include "harness.hpp"
#include "rill/async_copy.hpp"
#include "rill/atomics.hpp"
#include "rill/completion_counter.hpp"
#include "rill/delegate.hpp"
#include "rill/rma.hpp"

namespace rill_test {
namespace {

class global_ops : public ::testing::TestWithParam<setup> {};

// Runs body(rank, task) as `tasks_per_rank` tasks on every rank (so that every worker takes part),
// and waits for all of them.
template <class F>
void on_every_rank(int tasks_per_rank, F body) {
  std::vector<rill::future<void>> all;
  for (int r = 0; r < rill::rank_n(); ++r)
    all.push_back(rill::rpc(r, [tasks_per_rank, body] {
      rill::finish([&] {
        for (int t = 0; t < tasks_per_rank; ++t) rill::async([body, t] { body(rill::rank_me(), t); });
      });
    }));
  for (auto& f : all) f.wait();
}

TEST_P(global_ops, single_values_and_bulk_blocks_travel_both_ways) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    for (int r = 0; r < n; ++r) {
      rill::global_ptr<long> a = array_on(r, 64, true);
      // One value each way.
      expect(rill::rget(a + 5).get() == pattern(r, 5), "rget read the wrong value");
      rill::rput(-1L, a + 6).wait();
      expect(rill::rget(a + 6).get() == -1, "rput did not store its value");
      // A block out and back.
      std::vector<long> in(20), out(20);
      rill::rget(a + 10, in.data(), 20).wait();
      for (std::size_t i = 0; i < 20; ++i) expect(in[i] == pattern(r, 10 + i), "bulk rget read the wrong block");
      std::iota(out.begin(), out.end(), 1000L);
      rill::rput(out.data(), a + 30, 20).wait();
      rill::rget(a + 30, in.data(), 20).wait();
      expect(in == out, "bulk rput did not store its block");
      free_on(a);
    }
  });
}

TEST_P(global_ops, strided_transfers_move_columns_of_a_tile) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    constexpr std::size_t side = 8;
    rill::global_ptr<long> tile = array_on(n - 1, side * side, true);  // row-major 8x8
    // Column 3 of the tile, gathered into a dense local vector.
    std::vector<long> column(side);
    rill::rget_strided(tile + 3, side, column.data(), 1, 1, side).wait();
    for (std::size_t i = 0; i < side; ++i)
      expect(column[i] == pattern(n - 1, i * side + 3), "a strided get read the wrong column");
    // Two columns (blocks of 2) written from a local buffer with its own stride of 3.
    std::vector<long> src(3 * side);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = -static_cast<long>(i);
    rill::rput_strided(src.data(), 3, tile + 5, side, 2, side).wait();
    std::vector<long> all(side * side);
    rill::rget(tile, all.data(), side * side).wait();
    for (std::size_t row = 0; row < side; ++row)
      for (std::size_t col = 0; col < side; ++col) {
        const long want = col == 5 || col == 6 ? src[row * 3 + (col - 5)] : pattern(n - 1, row * side + col);
        expect(all[row * side + col] == want, "a strided put wrote the wrong elements");
      }
    free_on(tile);
  });
}

// One issuer, a random sequence of every operation on one element: each fetched value and the
// final value must equal those of a plain sequential model.
TEST_P(global_ops, atomics_match_a_sequential_model) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    rill::global_ptr<std::int64_t> x = array_on<std::int64_t>(n - 1, 1, false);
    rill::global_ptr<std::uint32_t> y = array_on<std::uint32_t>(n - 1, 2, false) + 1;
    std::int64_t model = 0;
    std::uint32_t model32 = 0;
    std::mt19937_64 rng(GetParam().chaos + 17);
    for (int step = 0; step < 300; ++step) {
      const auto v = static_cast<std::int64_t>(rng() % 2001) - 1000;
      const auto v32 = static_cast<std::uint32_t>(rng());
      std::int64_t before = model;
      std::int64_t got = 0;
      switch (rng() % 9) {
        case 0:
          got = rill::atomics::fetch_add(x, v).get();
          model += v;
          break;
        case 1:
          got = rill::atomics::fetch_bit_xor(x, v).get();
          model ^= v;
          break;
        case 2:
          got = rill::atomics::fetch_bit_and(x, v | 0xff00).get();
          model &= v | 0xff00;
          break;
        case 3:
          got = rill::atomics::fetch_bit_or(x, v & 0x3ff).get();
          model |= v & 0x3ff;
          break;
        case 4:
          got = rill::atomics::fetch_min(x, v).get();
          model = std::min(model, v);
          break;
        case 5:
          got = rill::atomics::fetch_max(x, v).get();
          model = std::max(model, v);
          break;
        case 6:
          got = rill::atomics::exchange(x, v).get();
          model = v;
          break;
        case 7: {
          const std::int64_t expected = rng() % 2 ? model : model + 1;  // half of them fail
          got = rill::atomics::compare_exchange(x, expected, v).get();
          if (model == expected) model = v;
          break;
        }
        default: got = rill::atomics::load(x).get(); break;
      }
      expect(got == before, "an atomic returned " + std::to_string(got) + ", the model " + std::to_string(before));
      const std::uint32_t before32 = model32;
      expect(rill::atomics::fetch_add(y, v32).get() == before32, "a 32-bit fetch_add disagrees with the model");
      model32 += v32;
    }
    expect(rill::atomics::load(x).get() == model, "the final value disagrees with the model");
    rill::atomics::store(x, 42).wait();
    expect(rill::rget(x).get() == 42, "atomics::store did not store");
    free_on(x);
    free_on(y - 1);
  });
}

// Every rank and worker hammers one counter with fetch_add: the fetched values must be exactly
// 0..total-1 (each once), and xor/min/max/add on other elements must come out exact.
TEST_P(global_ops, concurrent_atomics_from_every_rank_lose_nothing) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    constexpr int tasks = 4, per_task = 200;
    rill::global_ptr<std::int64_t> cells = array_on<std::int64_t>(0, 4, false);
    rill::global_ptr<std::int64_t> seen =
        array_on<std::int64_t>(0, static_cast<std::size_t>(n) * tasks * per_task, false);
    rill::global_ptr<double> sum = array_on<double>(n - 1, 1, false);
    rill::rput(std::int64_t{1} << 40, cells + 2).wait();  // the min starts high
    on_every_rank(tasks, [cells, seen, sum](int rank, int task) {
      rill::completion_counter done;
      for (int i = 0; i < per_task; ++i) {
        const std::int64_t ticket = rill::atomics::fetch_add(cells, 1).get();
        rill::atomics::add(seen + ticket, 1, done);  // marks the ticket taken
        const std::int64_t tag = (std::int64_t{rank} << 32) | (task << 16) | i;
        rill::atomics::bit_xor(cells + 1, tag, done);
        rill::atomics::min(cells + 2, tag, done);
        rill::atomics::max(cells + 3, tag, done);
        rill::atomics::add(sum, 0.5, done);
      }
      done.wait();
    });
    const std::int64_t total = std::int64_t{n} * tasks * per_task;
    std::int64_t xor_all = 0, max_all = 0;
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t t = 0; t < tasks; ++t)
        for (std::int64_t i = 0; i < per_task; ++i) {
          const std::int64_t tag = (r << 32) | (t << 16) | i;
          xor_all ^= tag;
          max_all = std::max(max_all, tag);
        }
    std::vector<std::int64_t> c(4), tickets(static_cast<std::size_t>(total));
    rill::rget(cells, c.data(), 4).wait();
    rill::rget(seen, tickets.data(), tickets.size()).wait();
    expect(c[0] == total, "fetch_add counted " + std::to_string(c[0]) + " of " + std::to_string(total));
    expect(std::all_of(tickets.begin(), tickets.end(), [](std::int64_t k) { return k == 1; }),
           "a fetch_add value was handed out twice or never");
    expect(c[1] == xor_all && c[2] == 0 && c[3] == max_all, "xor, min or max lost an update");
    expect(rill::rget(sum).get() == 0.5 * static_cast<double>(total), "a double add was lost");
    free_on(cells);
    free_on(seen);
    free_on(sum);
  });
}

struct bin {
  std::int64_t count;
  std::int64_t total;
};

// Delegates update plain (non-atomic) fields from every rank and worker: serialised at the home.
TEST_P(global_ops, delegates_serialise_plain_updates_from_every_rank) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    constexpr int tasks = 3, per_task = 150;
    rill::global_ptr<bin> bins = rill::rpc(n - 1, [] { return rill::new_array<bin>(2); }).get();
    on_every_rank(tasks, [bins](int rank, int task) {
      rill::completion_counter done;
      for (int i = 0; i < per_task; ++i) {
        // A read-modify-write that returns what it saw: the counts seen must be increasing.
        const std::int64_t before = rill::delegate::call(
                                        bins,
                                        [](bin& b, std::int64_t v) {
                                          b.total += v;
                                          return b.count++;
                                        },
                                        std::int64_t{rank + 1})
                                        .get();
        expect(before >= 0, "a delegate saw a negative count");
        rill::delegate::call_ff(
            done, bins + 1,
            [](bin& b, int k) {
              ++b.count;
              b.total += k;
            },
            task);
      }
      done.wait();
    });
    const bin a = rill::rget(bins).get(), b = rill::rget(bins + 1).get();
    const std::int64_t calls = std::int64_t{n} * tasks * per_task;
    std::int64_t want_total = 0;
    for (int r = 0; r < n; ++r) want_total += std::int64_t{r + 1} * tasks * per_task;
    expect(a.count == calls && a.total == want_total, "a delegate's update was lost (call)");
    expect(b.count == calls && b.total == std::int64_t{n} * per_task * (0 + 1 + 2),
           "a delegate's update was lost (call_ff)");
    rill::rpc(
        n - 1, [](rill::global_ptr<bin> p) { rill::delete_array(p); }, bins)
        .wait();
  });
}

// A word updated by delegates and by atomics at once, from every rank: nothing is lost (a
// delegate on a scalar commits with a compare-and-swap, which an atomic in between makes retry).
TEST_P(global_ops, delegates_and_atomics_on_one_word_lose_nothing) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    constexpr int tasks = 2, per_task = 2000;
    rill::global_ptr<std::int64_t> word = rill::rpc(n - 1, [] { return rill::new_array<std::int64_t>(1); }).get();
    on_every_rank(tasks, [word](int, int task) {
      rill::completion_counter done;
      for (int i = 0; i < per_task; ++i) {
        if ((i + task) % 2 == 0) {
          rill::delegate::call_ff(
              done, word, [](std::int64_t& w, std::int64_t k) { w += k; }, std::int64_t{3});
        } else {
          rill::atomics::add(word, std::int64_t{5}, done);
        }
      }
      // A delegate that returns what it saw, and an atomic that does, both on the same word.
      const std::int64_t seen = rill::delegate::call(word, [](std::int64_t& w) { return w++; }).get();
      const std::int64_t fetched = rill::atomics::fetch_add(word, std::int64_t{1}).get();
      expect(seen >= 0 && fetched >= 0, "an update returned a negative value");
      done.wait();
    });
    const std::int64_t calls = std::int64_t{n} * tasks * per_task / 2;
    expect(rill::rget(word).get() == calls * 3 + calls * 5 + std::int64_t{n} * tasks * 2,
           "an update was lost between delegates and atomics on one word");
    rill::rpc(
        n - 1, [](rill::global_ptr<std::int64_t> p) { rill::delete_array(p); }, word)
        .wait();
  });
}

TEST_P(global_ops, operations_wait_for_their_precondition_and_poison_stops_them) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    rill::global_ptr<std::int64_t> x = array_on<std::int64_t>(n - 1, 1, false);
    rill::user_event go = rill::user_event::create();
    rill::future<std::int64_t> added = rill::atomics::fetch_add(x, 5, go);
    rill::future<std::int64_t> seen = rill::rget(x, added);  // after the add
    rill::future<std::int64_t> d = rill::delegate::call_after(seen, x, [](std::int64_t& v) { return v *= 3; });
    expect(!added.ready(), "an atomic ran before its precondition");
    go.trigger();
    expect(added.get() == 0 && seen.get() == 5 && d.get() == 15, "deferred operations ran out of order");
    rill::user_event bad = rill::user_event::create();
    rill::future<void> put = rill::rput(std::int64_t{99}, x, bad);
    rill::future<std::int64_t> cas = rill::atomics::compare_exchange(x, 15, 1, bad);
    bad.poison("no go");
    expect(poisoned_saying(put, "no go") && poisoned_saying(cas, "no go"), "poison did not reach the operations");
    expect(rill::rget(x).get() == 15, "an operation behind a poisoned precondition ran");
    free_on(x);
  });
}

TEST_P(global_ops, bad_pointers_are_errors_naming_the_cause) {
  both_ways(GetParam(), [](bool) {
    const int n = rill::rank_n();
    rill::global_ptr<std::int64_t> x = array_on<std::int64_t>(n - 1, 4, false);
    const std::string where = "outside rank " + std::to_string(n - 1);
    const long far = std::ptrdiff_t{1} << 40;
    expect(poisoned_saying(rill::rget(x + far), where), "an rget outside the segment was not reported");
    expect(poisoned_saying(rill::rput(std::int64_t{1}, x + far), where),
           "an rput outside the segment was not reported");
    std::vector<std::int64_t> buf(4);
    expect(poisoned_saying(rill::rget(x + far, buf.data(), 4), where),
           "a bulk rget outside the segment was not reported");
    expect(poisoned_saying(rill::atomics::fetch_add(x + far, 1), where),
           "an atomic outside the segment was not reported");
    expect(poisoned_saying(rill::delegate::call(x + far, [](std::int64_t& v) { return v; }), where),
           "a delegate outside the segment was not reported");
    // Misaligned: one byte into the element.
    rill::global_ptr<std::int64_t> skew(x.where(), reinterpret_cast<std::int64_t*>(x.raw_address() + 1));
    expect(poisoned_saying(rill::atomics::load(skew), "not aligned"), "a misaligned atomic was not reported");
    // A delegate that throws poisons its future with the exception's words.
    expect(poisoned_saying(rill::delegate::call(x, [](std::int64_t&) -> int { throw std::runtime_error("bad bin"); }),
                           "bad bin"),
           "a throwing delegate did not poison its future");
    // Feed-forward failures surface in the counter's wait(), after everything else finished.
    rill::completion_counter done;
    rill::atomics::add(x, 1, done);
    rill::atomics::add(x + far, 1, done);
    rill::atomics::add(x, 1, done);
    bool reported = false;
    try {
      done.wait();
    } catch (const rill::poisoned_error& e) {
      reported = std::string(e.what()).find(where) != std::string::npos;
    }
    expect(reported && done.outstanding() == 0, "a failed feed-forward atomic was not reported by wait()");
    expect(rill::rget(x).get() == 2, "the good feed-forward atomics did not all apply");
    done.wait();  // the error is reported once
    // At the call: null pointers and ranks that do not exist.
    int refused = 0;
    const auto refuses = [&](auto&& op, const std::string& words) {
      try {
        op();
      } catch (const rill::misuse_error& e) {
        refused += std::string(e.what()).find(words) != std::string::npos;
      }
    };
    refuses([&] { (void)rill::rget(rill::global_ptr<std::int64_t>()); }, "null");
    refuses(
        [&] {
          (void)rill::atomics::fetch_add(
              rill::global_ptr<std::int64_t>(n + 2, reinterpret_cast<std::int64_t*>(x.raw_address())), 1);
        },
        "names rank " + std::to_string(n + 2));
    refuses([&] { rill::delegate::call_ff(done, rill::global_ptr<std::int64_t>(), [](std::int64_t&) {}); }, "null");
    refuses([&] { (void)rill::rget_strided(x, 1, buf.data(), 1, 2, 2); }, "strides");
    expect(refused == 4, "a bad call was not refused at the call (" + std::to_string(refused) + " of 4)");
    free_on(x);
  });
}

// Every operation through a pointer whose allocation was freed is an error naming the cause: the
// generation tag in the pointer no longer matches its memory's -- whether the memory is free or
// holds a new allocation -- checked where the memory is addressed (shared segments on) or at its
// home (off). With --rill:tag-checks=home, single-element operations through a mapped segment
// check bounds only: those are left out then, as they would write to the freed memory.
TEST_P(global_ops, use_after_free_is_an_error_found_by_the_generation_tag) {
  each_tag_check(GetParam(), [](bool every) {
    const int far = rill::rank_n() - 1;
    rill::global_ptr<std::int64_t> x = array_on<std::int64_t>(far, 4, true);
    EXPECT_NE(x.tag(), 0) << "rill's allocations are tagged";
    const bool elements_checked = every || !x.is_local();
    free_on(x);
    const auto every_operation_fails = [&](const std::string& words) {
      if (elements_checked) {
        EXPECT_TRUE(poisoned_saying(rill::rget(x), words)) << "rget";
        EXPECT_TRUE(poisoned_saying(rill::rput(std::int64_t{1}, x + 1), words)) << "rput";
        EXPECT_TRUE(poisoned_saying(rill::atomics::fetch_add(x + 2, 1), words)) << "an atomic";
        EXPECT_TRUE(poisoned_saying(rill::delegate::call(x + 3, [](std::int64_t& v) { return v; }), words))
            << "a delegate";
        rill::completion_counter done;
        rill::atomics::add(x, 1, done);
        EXPECT_TRUE(throws_saying<rill::poisoned_error>([&] { done.wait(); }, words)) << "a feed-forward atomic";
      }
      std::vector<std::int64_t> buf(4);
      EXPECT_TRUE(poisoned_saying(rill::rget(x, buf.data(), 4), words)) << "bulk rget";
      EXPECT_TRUE(poisoned_saying(rill::rput(buf.data(), x, 4), words)) << "bulk rput";
      rill::global_ptr<std::int64_t> mine = rill::new_array<std::int64_t>(4);
      EXPECT_TRUE(poisoned_saying(rill::async_copy(x, mine, 4), words)) << "async_copy from";
      EXPECT_TRUE(poisoned_saying(rill::async_copy(mine, x, 4), words)) << "async_copy to";
      rill::delete_array(mine);
      if (x.is_local()) {
        EXPECT_TRUE(throws_saying<rill::misuse_error>([&] { (void)x.local(4); }, words)) << "local()";
      }
    };
    every_operation_fails("use after free");
    // Allocated again: best fit hands the same place to an allocation of the same size.
    rill::global_ptr<std::int64_t> y = array_on<std::int64_t>(far, 4, true);
    ASSERT_EQ(y.raw_address(), x.raw_address()) << "the test needs the freed place reused";
    EXPECT_NE(y.tag(), x.tag());
    every_operation_fails("allocated again");
    // The new allocation is untouched by all of that, and the old pointer cannot free it.
    std::vector<std::int64_t> got(4);
    rill::rget(y, got.data(), 4).wait();
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], pattern(far, i)) << i;
    EXPECT_TRUE(throws_saying<std::exception>([&] { free_on(x); }, "freed already"));
    EXPECT_EQ(rill::rget(y + 3).get(), pattern(far, 3));
    // A range that starts in an allocation and runs past its end (allocations come in whole
    // 16-byte granules: 4 elements, 2 granules).
    std::vector<std::int64_t> five(5);
    EXPECT_TRUE(poisoned_saying(rill::rget(y, five.data(), 5), "runs past the end of its allocation"));
    // Freed while the operations wait for their precondition: checked when they run.
    rill::user_event go = rill::user_event::create();
    std::vector<std::int64_t> late(4);
    rill::future<void> bulk = rill::rget(y, late.data(), 4, go);
    rill::future<std::int64_t> one =
        elements_checked ? rill::rget(y + 1, go) : rill::make_ready_future(std::int64_t{0});
    free_on(y);
    go.trigger();
    EXPECT_TRUE(poisoned_saying(bulk, "use after free")) << "a bulk rget behind a precondition";
    if (elements_checked) {
      EXPECT_TRUE(poisoned_saying(one, "use after free")) << "an rget behind a precondition";
    }
  });
}

// With the default settings a stale pointer never touches the allocation that took its place, and
// an element one past the end of an array (a + 99 + 1 on 100 elements) is refused: nothing outside
// the array is read or written, on this rank's memory as on another's.
TEST_P(global_ops, by_default_stale_and_past_the_end_pointers_touch_no_other_allocation) {
  both_ways(GetParam(), [](bool) {
    for (const int home : {0, rill::rank_n() - 1}) {
      rill::global_ptr<long> stale = array_on<long>(home, 100, true);
      free_on(stale);
      rill::global_ptr<long> live = array_on<long>(home, 100, true);
      ASSERT_EQ(live.raw_address(), stale.raw_address()) << "the test needs the freed place reused";
      EXPECT_TRUE(poisoned_saying(rill::rput(-1L, stale + 5), "allocated again")) << "rput";
      EXPECT_TRUE(poisoned_saying(rill::atomics::fetch_add(stale + 6, 1L), "allocated again")) << "fetch_add";
      // The error names what the program did, not the runtime's internals (promise::poison).
      EXPECT_EQ(poisoned_operation(rill::rput(-1L, stale + 5)), "rill::rput");
      EXPECT_EQ(poisoned_operation(rill::rget(stale + 5)), "rill::rget");
      EXPECT_EQ(poisoned_operation(rill::atomics::fetch_add(stale + 6, 1L)), "rill::atomics");
      EXPECT_EQ(poisoned_operation(rill::delegate::call(stale + 7, [](long& v) { return v; })), "rill::delegate");
      rill::global_ptr<long> next = array_on<long>(home, 100, true);
      rill::global_ptr<long> past = live + 99 + 1;
      EXPECT_TRUE(poisoned_saying(rill::rput(-1L, past), "")) << "rput past the end";
      EXPECT_TRUE(poisoned_saying(rill::atomics::fetch_add(past, 1L), "")) << "fetch_add past the end";
      EXPECT_TRUE(poisoned_saying(rill::rget(past), "")) << "rget past the end";
      for (rill::global_ptr<long> a : {live, next}) {
        std::vector<long> got(100);
        rill::rget(a, got.data(), 100).wait();
        for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(got[i], pattern(home, i)) << i;
      }
      free_on(live);
      free_on(next);
    }
  });
}

// A count whose bytes overflow is refused, not wrapped into a small allocation or a crash.
TEST_P(global_ops, new_array_refuses_a_count_whose_bytes_overflow) {
  both_ways(GetParam(), [](bool) {
    for (const std::size_t count : {std::numeric_limits<std::size_t>::max(), std::size_t{1} << 61})
      EXPECT_TRUE(throws_saying<rill::misuse_error>([&] { (void)rill::new_array<long>(count); }, "overflow")) << count;
    EXPECT_TRUE(
        throws_saying<rill::misuse_error>([&] { (void)rill::new_array<long>(std::size_t{1} << 50); }, "do not fit"));
  });
}

INSTANTIATE_TEST_SUITE_P(setups, global_ops, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
