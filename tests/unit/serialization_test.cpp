// Unit tests of active-message argument serialization (include/rill/serialization.hpp).
#include "rill/serialization.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

// ---- allocation probe ----------------------------------------------------------------------
// Global operator new is replaced in this test binary so that a test can see the largest single
// allocation a decode asks for, and refuse absurd ones instead of actually touching gigabytes.
namespace probe {
std::atomic<bool> armed{false};
std::atomic<std::size_t> largest{0};
constexpr std::size_t refuse_above = std::size_t{256} << 20;  // 256 MiB

void* allocate(std::size_t n) {
  if (armed.load(std::memory_order_relaxed)) {
    std::size_t cur = largest.load(std::memory_order_relaxed);
    while (n > cur && !largest.compare_exchange_weak(cur, n, std::memory_order_relaxed)) {
    }
    if (n > refuse_above) throw std::bad_alloc();
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

// Arms the probe for the lifetime of the object.
struct scope {
  scope() {
    largest.store(0);
    armed.store(true);
  }
  ~scope() { armed.store(false); }
  std::size_t peak() const { return largest.load(); }
};
}  // namespace probe

void* operator new(std::size_t n) { return probe::allocate(n); }
void* operator new[](std::size_t n) { return probe::allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using rill::decode_error;
using rill::detail::deserialize_tuple;
using rill::detail::serialize_into;

struct item {
  int x = 0;
  std::string name;
  template <class A>
  void serialize(A& a) {
    a(x, name);
  }
  bool operator==(const item&) const = default;
};

template <class... Ts>
std::vector<std::byte> encode(const Ts&... values) {
  std::vector<std::byte> out;
  serialize_into(out, values...);
  return out;
}

template <class Tuple>
Tuple decode(const std::vector<std::byte>& bytes) {
  return deserialize_tuple<Tuple>(bytes.data(), bytes.size());
}

// Little-endian u64 as cereal's binary archive writes container sizes.
void put_u64(std::vector<std::byte>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}

TEST(Serialization, StringRoundTrip) {
  const std::string s = "hello, rill";
  auto bytes = encode(s);
  EXPECT_GT(bytes.size(), s.size());
  auto [back] = decode<std::tuple<std::string>>(bytes);
  EXPECT_EQ(back, s);
}

TEST(Serialization, EmptyAndLongStringsRoundTrip) {
  const std::string empty;
  const std::string big(100000, 'q');
  std::string with_nul("a\0b\0c", 5);
  auto [e, b, n] = decode<std::tuple<std::string, std::string, std::string>>(encode(empty, big, with_nul));
  EXPECT_EQ(e, empty);
  EXPECT_EQ(b, big);
  EXPECT_EQ(n, with_nul);
}

TEST(Serialization, VectorOfIntRoundTrip) {
  std::vector<int> v;
  for (int i = -500; i < 1500; i += 7) v.push_back(i * 31);
  auto [back] = decode<std::tuple<std::vector<int>>>(encode(v));
  EXPECT_EQ(back, v);
}

// Vectors of byte-like elements are built straight from the received bytes (one pass, no
// zero-fill): every such element type round-trips, at any offset, and truncation is still caught.
template <class U>
void byte_vector_round_trip() {
  std::vector<U> v(70'000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<U>(i * 7 + 3);
  for (std::size_t lead : {0u, 1u, 3u}) {  // a leading char shifts the vector's bytes off alignment
    const auto bytes = encode(std::string(lead, 'x'), v, std::vector<U>{}, std::uint8_t{9});
    auto [s, back, empty, tail] = decode<std::tuple<std::string, std::vector<U>, std::vector<U>, std::uint8_t>>(bytes);
    EXPECT_EQ(s.size(), lead);
    EXPECT_EQ(back, v);
    EXPECT_TRUE(empty.empty());
    EXPECT_EQ(tail, 9);
    using T = std::tuple<std::string, std::vector<U>>;
    const auto two = encode(std::string(lead, 'x'), v);
    for (std::size_t k : {std::size_t{0}, two.size() / 2, two.size() - 1})
      EXPECT_THROW((deserialize_tuple<T>(two.data(), k)), decode_error) << "prefix of " << k << " bytes";
  }
}

TEST(Serialization, ByteLikeVectorsRoundTripFromUnalignedBytes) {
  byte_vector_round_trip<std::byte>();
  byte_vector_round_trip<unsigned char>();
  byte_vector_round_trip<signed char>();
  byte_vector_round_trip<char>();
}

// For a zero-copy send the encoder leaves the views' elements where they are and lists them: the
// listed pieces put back at their offsets give exactly the bytes of the copying encoder (whose
// padding is relative to the start of the whole message, lent bytes included).
TEST(Serialization, LendingEncoderListsTheViewsElementsWhereTheCopyingOneWritesThem) {
  std::vector<double> d(300);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<double>(i) * 1.5;
  const std::vector<std::byte> raw{std::byte{7}, std::byte{8}, std::byte{9}};
  for (std::size_t lead : {0u, 3u, 61u}) {
    const std::string s(lead, 'y');
    const auto copied = encode(s, rill::view(d), 42, rill::view<std::byte>(raw), rill::view<int>());
    std::vector<std::byte> out;
    std::vector<rill::detail::lent_piece> lent;
    rill::detail::serialize_lending(out, lent, s, rill::view(d), 42, rill::view<std::byte>(raw), rill::view<int>());
    ASSERT_EQ(lent.size(), 2u);  // the empty view lends nothing
    EXPECT_EQ(lent[0].bytes.data(), reinterpret_cast<const std::byte*>(d.data()));
    EXPECT_EQ(lent[1].bytes.data(), raw.data());
    std::vector<std::byte> whole;
    std::size_t from = 0;
    for (const auto& piece : lent) {
      whole.insert(whole.end(), out.begin() + static_cast<std::ptrdiff_t>(from),
                   out.begin() + static_cast<std::ptrdiff_t>(piece.at));
      whole.insert(whole.end(), piece.bytes.begin(), piece.bytes.end());
      from = piece.at;
    }
    whole.insert(whole.end(), out.begin() + static_cast<std::ptrdiff_t>(from), out.end());
    EXPECT_EQ(whole, copied) << "lead " << lead;
  }
}

// A view decodes in place: its elements are the encoded bytes themselves when they sit aligned
// for the element type (the encoder pads them to be, relative to the start of the buffer), and an
// aligned copy of them otherwise.
TEST(Serialization, ViewsDecodeInPlaceWhenAlignedAndCopyOtherwise) {
  std::vector<double> d(1000);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = 0.5 * static_cast<double>(i) - 7;
  const std::vector<std::byte> raw{std::byte{1}, std::byte{2}, std::byte{3}};
  for (std::size_t lead : {0u, 1u, 5u}) {
    const auto bytes = encode(std::string(lead, 'x'), rill::view(d), rill::view<std::byte>(raw), rill::view<int>());
    auto [s, back, b, none] =
        decode<std::tuple<std::string, rill::view<double>, rill::view<std::byte>, rill::view<int>>>(bytes);
    EXPECT_EQ(s.size(), lead);
    ASSERT_EQ(back.size(), d.size());
    EXPECT_TRUE(std::equal(back.begin(), back.end(), d.begin()));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(back.data()) % alignof(double), 0u);
    // In place: the view points into the encoded bytes (vector storage is aligned for double).
    EXPECT_GE(reinterpret_cast<const std::byte*>(back.data()), bytes.data());
    EXPECT_LT(reinterpret_cast<const std::byte*>(back.data()), bytes.data() + bytes.size());
    ASSERT_EQ(b.size(), raw.size());
    EXPECT_TRUE(std::equal(b.begin(), b.end(), raw.begin()));
    EXPECT_TRUE(none.empty());
  }
  // The same bytes one position off alignment: the view holds an aligned copy instead.
  const auto bytes = encode(rill::view(d));
  std::vector<std::byte> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  auto [copied] = deserialize_tuple<std::tuple<rill::view<double>>>(shifted.data() + 1, bytes.size());
  ASSERT_EQ(copied.size(), d.size());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(copied.data()) % alignof(double), 0u);
  EXPECT_TRUE(std::equal(copied.begin(), copied.end(), d.begin()));
  const std::byte* c = reinterpret_cast<const std::byte*>(copied.data());
  EXPECT_TRUE(c < shifted.data() || c >= shifted.data() + shifted.size());
}

TEST(Serialization, CorruptViewsThrowDecodeError) {
  const std::vector<std::uint32_t> v{1, 2, 3, 4};
  const auto bytes = encode(rill::view(v));
  using T = std::tuple<rill::view<std::uint32_t>>;
  ASSERT_NO_THROW(decode<T>(bytes));
  for (std::size_t k = 0; k < bytes.size(); ++k)
    EXPECT_THROW((deserialize_tuple<T>(bytes.data(), k)), decode_error) << "prefix of " << k << " bytes";
  std::vector<std::byte> longer;
  put_u64(longer, 1000);  // more elements than the payload holds
  longer.push_back(std::byte{0});
  EXPECT_THROW(decode<T>(longer), decode_error);
  std::vector<std::byte> bad_pad;
  put_u64(bad_pad, 0);
  bad_pad.push_back(std::byte{64});  // padding is less than a cache line
  bad_pad.insert(bad_pad.end(), 64, std::byte{0});
  EXPECT_THROW(decode<T>(bad_pad), decode_error);
}

TEST(Serialization, MapOfStringToVectorOfDoubleRoundTrip) {
  std::map<std::string, std::vector<double>> m{
      {"", {}}, {"pi", {3.14159, -2.5, 1e300}}, {"zeros", std::vector<double>(1000, 0.0)}, {"one", {1.0}}};
  auto [back] = decode<std::tuple<std::map<std::string, std::vector<double>>>>(encode(m));
  EXPECT_EQ(back, m);
}

TEST(Serialization, TupleRoundTrip) {
  const std::tuple<int, std::string, double, std::vector<std::string>> t{42, "answer", 0.5, {"a", "bc", ""}};
  auto [back] = decode<std::tuple<std::tuple<int, std::string, double, std::vector<std::string>>>>(encode(t));
  EXPECT_EQ(back, t);
}

TEST(Serialization, SeveralArgumentsRoundTripInOrder) {
  const int a = -7;
  const std::string b = "two";
  const std::vector<int> c{1, 2, 3};
  const std::pair<int, std::string> d{4, "four"};
  const std::set<int> e{9, 8, 7};
  const std::unordered_map<std::string, int> f{{"x", 1}, {"y", 2}};
  auto back = decode<std::tuple<int, std::string, std::vector<int>, std::pair<int, std::string>, std::set<int>,
                                std::unordered_map<std::string, int>>>(encode(a, b, c, d, e, f));
  EXPECT_EQ(std::get<0>(back), a);
  EXPECT_EQ(std::get<1>(back), b);
  EXPECT_EQ(std::get<2>(back), c);
  EXPECT_EQ(std::get<3>(back), d);
  EXPECT_EQ(std::get<4>(back), e);
  EXPECT_EQ(std::get<5>(back), f);
}

TEST(Serialization, UserStructWithSerializeMemberRoundTrip) {
  const item one{17, "seventeen"};
  const std::vector<item> many{{1, "a"}, {-2, ""}, {3, std::string(300, 'z')}};
  auto [b1, b2] = decode<std::tuple<item, std::vector<item>>>(encode(one, many));
  EXPECT_EQ(b1, one);
  EXPECT_EQ(b2, many);
}

// A type cereal stores through save_minimal/load_minimal, which needs the output and input archives
// paired (CEREAL_SETUP_ARCHIVE_TRAITS in vector_output_archive.hpp).
// (Not trivially copyable, or it would travel as its bytes without cereal.)
struct celsius {
  double degrees = 0;
  celsius() = default;
  celsius(double d) : degrees(d) {}
  celsius(const celsius& o) : degrees(o.degrees) {}
  celsius& operator=(const celsius&) = default;
  double save_minimal(const auto&) const { return degrees; }
  void load_minimal(const auto&, const double& d) { degrees = d; }
  bool operator==(const celsius&) const = default;
};

// A type with a class version: cereal writes the version once per archive, the first time the type
// appears, so a message's arguments must share one archive.
struct versioned {
  std::string name;
  int value = 0;
  template <class A>
  void serialize(A& a, const std::uint32_t version) {
    a(name);
    if (version >= 2) a(value);
  }
  bool operator==(const versioned&) const = default;
};

}  // namespace
CEREAL_CLASS_VERSION(versioned, 2);
namespace {

TEST(Serialization, MinimalSerializationInsideContainersRoundTrip) {
  const std::vector<celsius> temps{{-4.5}, {0}, {21.25}};
  const std::map<std::string, celsius> at{{"oslo", {-3}}, {"rome", {14.5}}};
  auto [t, a] = decode<std::tuple<std::vector<celsius>, std::map<std::string, celsius>>>(encode(temps, at));
  EXPECT_EQ(t, temps);
  EXPECT_EQ(a, at);
}

TEST(Serialization, VersionedTypesInSeveralArgumentsRoundTrip) {
  const versioned a{"first", 1}, b{"second", 2};
  const std::vector<versioned> more{{"x", 3}, {"y", 4}};
  auto [ba, bb, bmore] = decode<std::tuple<versioned, versioned, std::vector<versioned>>>(encode(a, b, more));
  EXPECT_EQ(ba, a);
  EXPECT_EQ(bb, b);
  EXPECT_EQ(bmore, more);
}

TEST(Serialization, WideStringsRoundTrip) {
  const std::u16string s = u"wide \u00e9t\u00e9";
  const std::u32string empty;
  auto [back, e] = decode<std::tuple<std::u16string, std::u32string>>(encode(s, empty));
  EXPECT_EQ(back, s);
  EXPECT_TRUE(e.empty());
}

struct pair_of {
  std::string s;
  std::vector<std::int32_t> v;
  template <class A>
  void serialize(A& a) {
    a(s, v);
  }
};

// Strings and vectors are written directly, user types through cereal: both must keep cereal's
// binary layout (a 64-bit length, then the elements), or a type mixing them would not decode.
TEST(Serialization, StringsAndVectorsKeepCerealsLayout) {
  std::vector<std::byte> expected;
  put_u64(expected, 2);
  expected.push_back(std::byte{'h'});
  expected.push_back(std::byte{'i'});
  put_u64(expected, 1);
  const std::int32_t seven = 7;
  for (std::size_t i = 0; i < sizeof seven; ++i) expected.push_back(reinterpret_cast<const std::byte*>(&seven)[i]);
  EXPECT_EQ(encode(std::string("hi"), std::vector<std::int32_t>{7}), expected);
  // The same bytes decode as a user type that reads its members through cereal.
  auto [p] = decode<std::tuple<pair_of>>(expected);
  EXPECT_EQ(p.s, "hi");
  EXPECT_EQ(p.v, std::vector<std::int32_t>{7});
}

TEST(Serialization, SerializeIntoAppendsAfterExistingBytes) {
  std::vector<std::byte> out{std::byte{0xde}, std::byte{0xad}, std::byte{0xbe}};
  const std::string s = "after a prefix";
  serialize_into(out, s, 5);
  ASSERT_GT(out.size(), 3u);
  EXPECT_EQ(out[0], std::byte{0xde});
  EXPECT_EQ(out[1], std::byte{0xad});
  EXPECT_EQ(out[2], std::byte{0xbe});
  auto [back, five] = deserialize_tuple<std::tuple<std::string, int>>(out.data() + 3, out.size() - 3);
  EXPECT_EQ(back, s);
  EXPECT_EQ(five, 5);
}

TEST(Serialization, EmptyTupleFromNoBytes) {
  EXPECT_NO_THROW((deserialize_tuple<std::tuple<>>(nullptr, 0)));
  std::byte one{1};
  EXPECT_THROW((deserialize_tuple<std::tuple<>>(&one, 1)), decode_error);
}

TEST(Serialization, EveryTruncationThrowsDecodeError) {
  const std::map<std::string, std::vector<double>> m{{"k", {1.0, 2.0}}, {"longer key", {}}};
  const auto bytes = encode(std::string("abc"), std::vector<int>{1, 2, 3}, m, item{5, "five"});
  using T = std::tuple<std::string, std::vector<int>, std::map<std::string, std::vector<double>>, item>;
  ASSERT_NO_THROW(decode<T>(bytes));
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    EXPECT_THROW((deserialize_tuple<T>(bytes.data(), k)), decode_error) << "prefix of " << k << " bytes";
  }
}

TEST(Serialization, TrailingBytesThrowDecodeError) {
  auto bytes = encode(std::string("exact"), std::vector<int>{4, 5});
  using T = std::tuple<std::string, std::vector<int>>;
  ASSERT_NO_THROW(decode<T>(bytes));
  bytes.push_back(std::byte{0});
  EXPECT_THROW(decode<T>(bytes), decode_error);
  bytes.insert(bytes.end(), 100, std::byte{7});
  EXPECT_THROW(decode<T>(bytes), decode_error);
}

TEST(Serialization, DecodeErrorIsARuntimeErrorWithAText) {
  std::vector<std::byte> bytes{std::byte{1}, std::byte{2}};
  try {
    decode<std::tuple<std::string>>(bytes);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(dynamic_cast<const decode_error*>(&e), nullptr);
    EXPECT_GT(std::strlen(e.what()), 0u);
  }
}

TEST(Serialization, WrongTypeThrowsDecodeError) {
  // Four bytes of an int cannot hold the 8-byte length of a string.
  EXPECT_THROW(decode<std::tuple<std::string>>(encode(std::int32_t{3})), decode_error);
}

TEST(Serialization, ImpossibleStringLengthThrowsDecodeError) {
  std::vector<std::byte> bytes;
  put_u64(bytes, ~std::uint64_t{0});  // more than max_size(): std::length_error inside cereal
  bytes.insert(bytes.end(), 8, std::byte{'x'});
  probe::scope p;
  EXPECT_THROW(decode<std::tuple<std::string>>(bytes), decode_error);
}

TEST(Serialization, ImpossibleVectorLengthThrowsDecodeError) {
  std::vector<std::byte> bytes;
  put_u64(bytes, std::uint64_t{1} << 62);
  bytes.insert(bytes.end(), 8, std::byte{0});
  probe::scope p;
  EXPECT_THROW(decode<std::tuple<std::vector<int>>>(bytes), decode_error);
}

TEST(Serialization, UnsatisfiableVectorLengthThrowsDecodeError) {
  // 2^40 ints (4 TiB): within max_size(), so the allocation itself fails with std::bad_alloc.
  std::vector<std::byte> bytes;
  put_u64(bytes, std::uint64_t{1} << 40);
  bytes.insert(bytes.end(), 8, std::byte{0});
  probe::scope p;
  EXPECT_THROW(decode<std::tuple<std::vector<int>>>(bytes), decode_error);
}

// A corrupt length far larger than the bytes that follow must be rejected without first asking for
// memory in proportion to the claim: a 16-byte payload may not make a rank allocate a gigabyte.
TEST(Serialization, HugeAnnouncedStringLengthDoesNotAllocateAbsurdMemory) {
  std::vector<std::byte> bytes;
  put_u64(bytes, std::uint64_t{1} << 30);  // claims 1 GiB of characters
  bytes.insert(bytes.end(), 8, std::byte{'x'});
  probe::scope p;
  EXPECT_THROW(decode<std::tuple<std::string>>(bytes), decode_error);
  EXPECT_LE(p.peak(), std::size_t{1} << 20)
      << "decoding a " << bytes.size() << "-byte payload asked for " << p.peak() << " bytes at once";
}

TEST(Serialization, HugeAnnouncedVectorLengthDoesNotAllocateAbsurdMemory) {
  std::vector<std::byte> bytes;
  put_u64(bytes, std::uint64_t{1} << 28);  // claims 2^28 ints = 1 GiB
  bytes.insert(bytes.end(), 8, std::byte{0});
  probe::scope p;
  EXPECT_THROW(decode<std::tuple<std::vector<int>>>(bytes), decode_error);
  EXPECT_LE(p.peak(), std::size_t{1} << 20)
      << "decoding a " << bytes.size() << "-byte payload asked for " << p.peak() << " bytes at once";
}

TEST(Serialization, HugeAnnouncedNestedVectorLengthDoesNotAllocateAbsurdMemory) {
  // map<string, vector<double>> with one entry whose vector claims 2^27 doubles (1 GiB).
  std::vector<std::byte> bytes;
  put_u64(bytes, 1);  // map size
  put_u64(bytes, 1);  // key length
  bytes.push_back(std::byte{'k'});
  put_u64(bytes, std::uint64_t{1} << 27);
  bytes.insert(bytes.end(), 8, std::byte{0});
  probe::scope p;
  EXPECT_THROW((decode<std::tuple<std::map<std::string, std::vector<double>>>>(bytes)), decode_error);
  EXPECT_LE(p.peak(), std::size_t{1} << 20)
      << "decoding a " << bytes.size() << "-byte payload asked for " << p.peak() << " bytes at once";
}

TEST(Serialization, HugeAnnouncedElementCountDoesNotAllocateAbsurdMemory) {
  // vector<string> claiming 2^25 strings (each a 32-byte object: 1 GiB before reading any).
  std::vector<std::byte> bytes;
  put_u64(bytes, std::uint64_t{1} << 25);
  bytes.insert(bytes.end(), 8, std::byte{0});
  probe::scope p;
  EXPECT_THROW(decode<std::tuple<std::vector<std::string>>>(bytes), decode_error);
  EXPECT_LE(p.peak(), std::size_t{1} << 20)
      << "decoding a " << bytes.size() << "-byte payload asked for " << p.peak() << " bytes at once";
}

TEST(Serialization, LoadTrivialReadsUnalignedValues) {
  const double d = 6.25;
  const std::uint64_t u = 0x0123456789abcdefull;
  std::byte raw[1 + sizeof d + sizeof u];
  std::memcpy(raw + 1, &d, sizeof d);
  std::memcpy(raw + 1 + sizeof d, &u, sizeof u);
  EXPECT_EQ(rill::detail::load_trivial<double>(raw + 1), d);
  EXPECT_EQ(rill::detail::load_trivial<std::uint64_t>(raw + 1 + sizeof d), u);
}

}  // namespace
