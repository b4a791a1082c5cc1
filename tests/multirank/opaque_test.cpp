// Opaque objects (rill/opaque.hpp, Iris §II-G): a copy between instances on any two ranks makes
// new objects equal to the source's (serialized, moved, deserialized) in pieces of any size, and
// every object made is destroyed once; objects the program holds, attached, are read without
// being taken and replaced by writes; a region of attached objects is read afresh by every
// restricted launch and reused once acquired; fills, reductions, copies between objects and
// bytes and a deserialize that throws are refused naming the cause.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "data_harness.hpp"
#include "harness.hpp"
#include "rill/attach.hpp"
#include "rill/copy.hpp"
#include "rill/external.hpp"
#include "rill/launch.hpp"
#include "rill/opaque.hpp"
#include "rill/partition.hpp"
#include "rill/reduce.hpp"
#include "rill/reduction.hpp"

namespace rill_test::opaque_objects {

// An object of variable size that counts the live ones of its process and the ones deserialized.
struct blob {
  std::int64_t tag = 0;
  std::vector<std::int64_t> words;
};
inline std::atomic<long> live{0}, made{0};

inline blob* make_blob(std::int64_t tag, std::size_t n) {
  live.fetch_add(1);
  blob* b = new blob{tag, {}};
  for (std::size_t i = 0; i < n; ++i) b->words.push_back(tag * 1000 + static_cast<std::int64_t>(i));
  return b;
}
// The blob point i holds in these tests: none at every 13th, big ones at every 50th (so that a
// copy of 200 points takes several pieces), small ones elsewhere.
inline blob* blob_for(std::int64_t i, std::int64_t salt) {
  if (i % 13 == 0) return nullptr;
  return make_blob(i + salt, i % 50 == 1 ? 60000 : static_cast<std::size_t>(i % 7));
}
inline bool is_blob_for(const blob* b, std::int64_t i, std::int64_t salt) {
  const blob* want = blob_for(i, salt);
  const bool same = (b == nullptr) == (want == nullptr) && (!b || (b->tag == want->tag && b->words == want->words));
  if (want) {
    live.fetch_sub(1);
    delete want;
  }
  return same;
}

// Objects whose bytes cannot be made into one.
struct brittle {
  std::int64_t v = 0;
};

}  // namespace rill_test::opaque_objects

template <>
struct rill::serdes<rill_test::opaque_objects::blob> {
  using blob = rill_test::opaque_objects::blob;
  static std::size_t size(const blob& b) { return 8 * (1 + b.words.size()); }
  static void serialize(const blob& b, std::span<std::byte> out) {
    std::memcpy(out.data(), &b.tag, 8);
    if (!b.words.empty()) std::memcpy(out.data() + 8, b.words.data(), 8 * b.words.size());
  }
  static blob* deserialize(std::span<const std::byte> in) {
    if (in.size() < 8 || in.size() % 8 != 0) throw std::runtime_error("a blob of " + std::to_string(in.size()));
    rill_test::opaque_objects::made.fetch_add(1);
    blob* b = rill_test::opaque_objects::make_blob(0, 0);
    std::memcpy(&b->tag, in.data(), 8);
    b->words.resize(in.size() / 8 - 1);
    if (!b->words.empty()) std::memcpy(b->words.data(), in.data() + 8, in.size() - 8);
    return b;
  }
  static void destroy(blob* b) {
    rill_test::opaque_objects::live.fetch_sub(1);
    delete b;
  }
};

template <>
struct rill::serdes<rill_test::opaque_objects::brittle> {
  using brittle = rill_test::opaque_objects::brittle;
  static std::size_t size(const brittle&) { return 8; }
  static void serialize(const brittle& b, std::span<std::byte> out) { std::memcpy(out.data(), &b.v, 8); }
  static brittle* deserialize(std::span<const std::byte>) { throw std::runtime_error("this brittle will not mend"); }
  static void destroy(brittle* b) { delete b; }
};

namespace rill_test {
namespace {

using namespace opaque_objects;  // NOLINT(google-build-using-namespace): the suite's shared names
using data::misuse_of;
using data::poison_of;
using data::says;

class opaque : public ::testing::TestWithParam<setup> {};

constexpr rill::opaque_field<blob> blobs{{1}};
constexpr rill::field<double> weight{2};
constexpr rill::field<std::int64_t> number{3};
constexpr rill::field<std::int64_t> bytes_at_1{1};  // the id of blobs, holding bytes
constexpr rill::opaque_field<blob> blobs_at_4{{4}};
constexpr rill::coord_t count = 200;
const rill::rect<1> all{0, count - 1};

rill::instance made_on(int rank, const rill::field_space& fs, const rill::layout& l = rill::layout::soa()) {
  auto [inst, ready] = rill::instance::create(rill::memory::system(rank), all, fs, l);
  ready.wait();
  return inst;
}

// On the instance's rank: blob_for(i, salt) at every point, in place of the objects there (which
// the instance owns: destroyed), and weight i when `weights`.
void write_blobs(rill::instance inst, std::int64_t salt, bool weights = false) {
  rill::rpc(
      inst.owner(),
      [](rill::instance in, std::int64_t s, bool ws) {
        rill::accessor<blob*, 1> b(in, blobs);
        for (rill::coord_t i = 0; i < count; ++i) {
          if (blob* old = std::exchange(b[{i}], blob_for(i, s))) rill::serdes<blob>::destroy(old);
          if (ws) rill::accessor<double, 1>(in, weight)[{i}] = static_cast<double>(i);
        }
      },
      inst, salt, weights)
      .get();
}

// On the instance's rank: the points whose blob (and weight, when `weights`) is not as written.
long wrong_blobs(rill::instance inst, std::int64_t salt, bool weights) {
  return rill::rpc(
             inst.owner(),
             [](rill::instance in, std::int64_t s, bool ws) {
               rill::accessor<blob*, 1> b(in, blobs);
               long wrong = 0;
               for (rill::coord_t i = 0; i < count; ++i) {
                 if (!is_blob_for(b[{i}], i, s)) ++wrong;
                 if (ws && rill::accessor<double, 1>(in, weight)[{i}] != static_cast<double>(i)) ++wrong;
               }
               return wrong;
             },
             inst, salt, weights)
      .get();
}

// Every rank's process has no blob left: each rank asks its own (the local transport's ranks
// share one process, and ask it each in turn).
void expect_no_blob_left() {
  for (int r = 0; r < rill::rank_n(); ++r) {
    const long left = rill::rpc(r, [] { return live.load(); }).get();
    expect(left == 0, std::to_string(left) + " blob(s) left alive in rank " + std::to_string(r) + "'s process");
  }
}

TEST_P(opaque, copies_make_equal_new_objects_on_any_rank_and_destroy_each_once) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int last = rill::rank_n() - 1;
                          // Mixed with bytes, in both layouts: the objects travel with the doubles.
                          for (const rill::layout& l : {rill::layout::soa(), rill::layout::aos()}) {
                            const rill::field_space fs{blobs, weight};
                            const rill::instance src = made_on(0, fs, l);
                            for (int to : {0, last}) {
                              write_blobs(src, 7, true);
                              const rill::instance dst = made_on(to, fs, rill::layout::aos());
                              rill::copy(src, dst, {blobs.id, weight.id}).wait();
                              expect(wrong_blobs(dst, 7, true) == 0, "a copy's objects differ from the source's");
                              // A second copy replaces every object (the first ones are destroyed).
                              write_blobs(src, 9);
                              rill::copy(src, dst, {blobs.id, weight.id}).wait();
                              expect(wrong_blobs(dst, 9, true) == 0, "a second copy's objects differ");
                              // Half the points, back to the source: the rest keep theirs.
                              rill::copy(dst, src, {blobs.id}, rill::rect<1>{0, count / 2}).wait();
                              expect(wrong_blobs(src, 9, false) == 0, "a copy back changed the objects");
                              dst.destroy().wait();
                            }
                            // The source's objects are its own: not taken by the copies.
                            expect(wrong_blobs(src, 9, true) == 0, "the source's objects changed");
                            src.destroy().wait();
                          }
                          expect_no_blob_left();
                        }),
            0);
}

TEST_P(opaque, fills_reductions_bytes_and_failed_deserializes_are_refused) {
  EXPECT_EQ(run_checked(GetParam(),
                        [] {
                          const int last = rill::rank_n() - 1;
                          const rill::instance objects = made_on(0, rill::field_space{blobs});
                          write_blobs(objects, 1);
                          const std::string filled = poison_of(rill::fill(objects, blobs, static_cast<blob*>(nullptr)));
                          expect(says(filled, "opaque objects") && says(filled, "not filled"), "fill: " + filled);
                          const rill::instance numbers = made_on(last, rill::field_space{number, bytes_at_1});
                          const std::string to_bytes = poison_of(rill::copy(objects, numbers, {blobs.id}));
                          expect(says(to_bytes, "holds opaque objects") && says(to_bytes, "bytes"),
                                 "copy to bytes: " + to_bytes);
                          const std::string reduced = poison_of(rill::reduce_into<rill::reduce::sum<std::int64_t>>(
                              numbers, number.id, objects, blobs.id));
                          expect(says(reduced, "copied, not reduced"), "reduce: " + reduced);
                          numbers.destroy().wait();
                          // A deserialize that throws poisons the copy with what it threw.
                          constexpr rill::opaque_field<brittle> pieces{{4}};
                          const rill::instance a = made_on(0, rill::field_space{pieces});
                          const rill::instance b = made_on(last, rill::field_space{pieces});
                          rill::rpc(0, [a] {
                            rill::accessor<brittle*, 1> p(a, rill::field<brittle*>{4});
                            for (rill::coord_t i = 0; i < count; ++i) p[{i}] = new brittle{i};
                          }).get();
                          const std::string broken = poison_of(rill::copy(a, b, {4}));
                          expect(says(broken, "deserialize threw") && says(broken, "will not mend"),
                                 "a failed deserialize: " + broken);
                          // Objects of another type are not these.
                          const rill::instance others = made_on(last, rill::field_space{blobs_at_4});
                          const std::string other = poison_of(rill::copy(a, others, {4}));
                          expect(says(other, "objects of another type"), "copy to another type: " + other);
                          rill::rpc(0, [a] {
                            rill::accessor<brittle*, 1> p(a, rill::field<brittle*>{4});
                            for (rill::coord_t i = 0; i < count; ++i) delete std::exchange(p[{i}], nullptr);
                          }).get();
                          a.destroy().wait();
                          b.destroy().wait();
                          others.destroy().wait();
                          objects.destroy().wait();
                          expect_no_blob_left();
                        }),
            0);
}

// The program's objects attached: a copy out of them leaves them the program's; a copy into them
// replaces each, destroying the old; read_only refuses copies in; the attach checks its field,
// count and rank.
TEST_P(opaque, attached_objects_are_lent_to_copies_out_and_replaced_by_copies_in) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    const int last = rill::rank_n() - 1;
                    std::vector<blob*> held;
                    for (rill::coord_t i = 0; i < count; ++i) held.push_back(blob_for(i, 3));
                    const std::vector<blob*> before = held;
                    auto [ext, ready] = rill::attach_instance(rill::memory::external(0), all, rill::field_space{blobs},
                                                              rill::opaque_resource::of(std::span(held)));
                    ready.wait();
                    const rill::instance mem = made_on(last, rill::field_space{blobs});
                    rill::copy(ext, mem, {blobs.id}).wait();
                    expect(wrong_blobs(mem, 3, false) == 0, "a copy of attached objects differs");
                    expect(held == before, "a copy out of attached objects replaced them");
                    write_blobs(mem, 5);
                    rill::copy(mem, ext, {blobs.id}).wait();
                    long stale = 0;
                    for (rill::coord_t i = 0; i < count; ++i)
                      if (!is_blob_for(held[static_cast<std::size_t>(i)], i, 5)) ++stale;
                    expect(stale == 0, std::to_string(stale) + " held objects were not replaced by the copy");
                    ext.destroy().wait();
                    mem.destroy().wait();
                    for (blob*& b : held)
                      if (b) rill::serdes<blob>::destroy(std::exchange(b, nullptr));

                    const long alive = live.load();
                    auto [ro, ro_ready] =
                        rill::attach_instance(rill::memory::external(0), all, rill::field_space{blobs},
                                              rill::opaque_resource::of(std::span(held), rill::io_mode::read_only));
                    const rill::instance src = made_on(0, rill::field_space{blobs});
                    const std::string refused = poison_of(rill::copy(src, ro, {blobs.id}, ro_ready));
                    expect(says(refused, "read_only"), "a copy into read_only objects: " + refused);
                    ro.destroy().wait();
                    src.destroy().wait();
                    expect(live.load() == alive, "a refused copy made or lost objects");

                    const std::string wrong_field = misuse_of([&] {
                      (void)rill::attach_instance(rill::memory::external(0), all, rill::field_space{weight},
                                                  rill::opaque_resource::of(std::span(held)));
                    });
                    expect(says(wrong_field, "opaque_field"), "attach with a double field: " + wrong_field);
                    const std::string wrong_count = poison_of(
                        rill::attach_instance(rill::memory::external(0), rill::rect<1>{0, count},
                                              rill::field_space{blobs}, rill::opaque_resource::of(std::span(held)))
                            .ready);
                    expect(says(wrong_count, "opaque objects for an index space of"),
                           "attach of too few objects: " + wrong_count);
                    if (last != 0) {
                      const std::string elsewhere = misuse_of([&] {
                        (void)rill::attach_instance(rill::memory::external(last), all, rill::field_space{blobs},
                                                    rill::opaque_resource::of(std::span(held)));
                      });
                      expect(says(elsewhere, "the rank that holds them"), "attach on another rank: " + elsewhere);
                    }
                    expect_no_blob_left();
                  }),
      0);
}

// Iris's rendering: objects held on rank 0, a region of them read by launches on every rank, in
// overlapping windows. Restricted, each launch deserializes its objects afresh (the program might
// have changed them) -- never under another launch reading them;
// acquired, the copies are reused until written; a launch's writes reach the program's objects
// at the release.
TEST_P(opaque, a_region_of_attached_objects_is_fetched_each_launch_unless_acquired) {
  EXPECT_EQ(
      run_checked(GetParam(),
                  [] {
                    std::vector<blob*> held;
                    for (rill::coord_t i = 0; i < count; ++i) held.push_back(blob_for(i, 2));
                    const rill::region scene = rill::region::create(all, rill::field_space{blobs});
                    // Windows that overlap their neighbours' (and, on one or two ranks, share a
                    // rank's instance): a refresh for one must not replace objects another reads.
                    std::vector<rill::index_space<1>> windows;
                    for (rill::coord_t t = 0; t < 4; ++t)
                      windows.emplace_back(
                          rill::rect<1>{std::max<rill::coord_t>(0, t * 50 - 60), std::min(count - 1, t * 50 + 109)});
                    const rill::partition tiles = rill::partition_by_subspaces(scene, windows);
                    rill::attach(scene, {blobs.id}, rill::opaque_resource::of(std::span(held))).wait();
                    const auto made_everywhere = [] {
                      long n = 0;  // (the local transport's ranks share a count: asked once)
                      for (int r = 0; r < (under_mpi() ? rill::rank_n() : 1); ++r)
                        n += rill::rpc(r, [] { return made.load(); }).get();
                      return n;
                    };
                    const auto render = [&] {
                      return rill::index_launch(
                          [](const rill::physical_regions& rs, std::size_t) {
                            const auto b = rs[0].read<blob*, 1>(blobs);
                            rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) {
                              if (!is_blob_for(b[p], p[0], 2)) throw std::runtime_error("a wrong object");
                            });
                          },
                          tiles, {rill::req(tiles, {blobs.id}, rill::privilege::read_only)});
                    };
                    const long start = made_everywhere();
                    render().wait();
                    const long first = made_everywhere() - start;
                    render().wait();
                    const long second = made_everywhere() - start - first;
                    expect(first > 0 && second == first, "restricted launches made " + std::to_string(first) +
                                                             " then " + std::to_string(second) +
                                                             " objects, not the same afresh each time");
                    rill::acquire(scene).wait();
                    render().wait();
                    const long acquired = made_everywhere();
                    render().wait();
                    render().wait();
                    expect(made_everywhere() == acquired, "acquired launches made objects again");
                    // A write: every tag + 1000 (objects of salt 1002 at the odd... all points).
                    rill::index_launch(
                        [](const rill::physical_regions& rs, std::size_t) {
                          const auto b = rs[0].write<blob*, 1>(blobs);
                          rs[0].reg.space<1>().for_each_point([&](rill::point<1> p) {
                            if (blob* x = b[p]) {
                              rill::serdes<blob>::destroy(x);
                              b[p] = blob_for(p[0], 1002);
                            }
                          });
                        },
                        tiles, {rill::req(tiles, {blobs.id}, rill::privilege::read_write)})
                        .wait();
                    expect(is_blob_for(held[1], 1, 2), "an acquired write reached the program before the release");
                    rill::release(scene).wait();
                    long stale = 0;
                    for (rill::coord_t i = 0; i < count; ++i)
                      if (!is_blob_for(held[static_cast<std::size_t>(i)], i, 1002)) ++stale;
                    expect(stale == 0, std::to_string(stale) + " held objects missed the released write");
                    rill::detach(scene).wait();
                    scene.destroy().wait();
                    for (blob*& b : held)
                      if (b) rill::serdes<blob>::destroy(std::exchange(b, nullptr));
                    expect_no_blob_left();
                  }),
      0);
}

INSTANTIATE_TEST_SUITE_P(setups, opaque, ::testing::ValuesIn(setups()), name_of);

}  // namespace
}  // namespace rill_test
