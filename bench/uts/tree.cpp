#include "uts/tree.hpp"

#include <fmt/format.h>
// The low-level SHA-1 functions are deprecated in OpenSSL 3 (in favour of EVP), not removed.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace uts {

namespace {

// SHA-1 through OpenSSL's low-level interface (SHA1_Init/Update/Final on a context on the stack).
// Like the reference UTS's own SHA-1, it allocates nothing. EVP, OpenSSL 3's recommended interface,
// allocates, scrubs and frees a context per hash: through it the sequential traversal of T3 ran at
// 7.9 M nodes/s instead of 13.0 M, so the hash hid most of what the benchmark is meant to measure.
void sha1(const std::uint8_t* data, std::size_t len, std::array<std::uint8_t, 20>& out) {
  SHA_CTX ctx;
  if (SHA1_Init(&ctx) != 1 || SHA1_Update(&ctx, data, len) != 1 || SHA1_Final(out.data(), &ctx) != 1) {
    std::fputs("uts: SHA-1 failed\n", stderr);
    std::abort();
  }
}

void put_be32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}

const char* type_name(tree_type t) {
  switch (t) {
    case tree_type::binomial: return "Binomial";
    case tree_type::geometric: return "Geometric";
    case tree_type::hybrid: return "Hybrid";
    case tree_type::balanced: return "Balanced";
  }
  return "?";
}

const char* shape_name(geo_shape s) {
  switch (s) {
    case geo_shape::linear: return "linear decrease";
    case geo_shape::expdec: return "exponential decrease";
    case geo_shape::cyclic: return "cyclic";
    case geo_shape::fixed: return "fixed branching factor";
  }
  return "?";
}

}  // namespace

std::string params::describe() const {
  const std::string geo = fmt::format("{}, b {}, d {}", shape_name(shape), b0, gen_mx);
  const std::string bin = fmt::format("q {}, m {}", nonleaf_prob, nonleaf_bf);
  std::string s;
  switch (type) {
    case tree_type::binomial: s = fmt::format("{}, root b {}, {}", type_name(type), b0, bin); break;
    case tree_type::geometric: s = fmt::format("{} ({})", type_name(type), geo); break;
    case tree_type::hybrid:
      s = fmt::format("{} ({}; binomial from f {}, {})", type_name(type), geo, shift_depth, bin);
      break;
    case tree_type::balanced: s = fmt::format("{}, b {}, d {}", type_name(type), b0, gen_mx); break;
  }
  s += fmt::format(", r {}", root_seed);
  if (granularity != 1) s += fmt::format(", g {}", granularity);
  return s;
}

void add_options(CLI::App& app, params& p) {
  app.add_option("-t", p.type, "tree type: 0 binomial, 1 geometric, 2 hybrid, 3 balanced")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  app.add_option("-b", p.b0, "root branching factor (binomial), expected branching factor (geometric)")
      ->capture_default_str();
  app.add_option("-r", p.root_seed, "root seed")->capture_default_str();
  app.add_option("-m", p.nonleaf_bf, "children of a non-leaf node (binomial)")->capture_default_str();
  app.add_option("-q", p.nonleaf_prob, "probability of a non-leaf node (binomial)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("-d", p.gen_mx, "depth parameter of the geometric shape functions")->capture_default_str();
  app.add_option("-a", p.shape, "geometric shape: 0 linear, 1 exponential decrease, 2 cyclic, 3 fixed")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  app.add_option("-f", p.shift_depth, "hybrid: fraction of -d at which the tree turns binomial")->capture_default_str();
  app.add_option("-g", p.granularity, "hash evaluations per child (compute granularity)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

std::int32_t rng_rand(const node& n) {
  const auto& s = n.state;
  const std::uint32_t b =
      (std::uint32_t{s[16]} << 24) | (std::uint32_t{s[17]} << 16) | (std::uint32_t{s[18]} << 8) | std::uint32_t{s[19]};
  return static_cast<std::int32_t>(b & 0x7fffffffu);
}

double to_prob(std::int32_t r) { return r < 0 ? 0.0 : static_cast<double>(r) / 2147483648.0; }

tree::tree(const params& p) : p_(p) {}

node tree::root() const {
  std::uint8_t seed[20] = {};
  put_be32(seed + 16, static_cast<std::uint32_t>(p_.root_seed));
  node n{};
  sha1(seed, sizeof seed, n.state);
  n.height = 0;
  return n;
}

node tree::child(const node& n, int i) const {
  std::uint8_t msg[24];
  std::copy(n.state.begin(), n.state.end(), msg);
  put_be32(msg + 20, static_cast<std::uint32_t>(i));
  node c{};
  for (int g = 0; g < p_.granularity; ++g) sha1(msg, sizeof msg, c.state);
  c.height = n.height + 1;
  return c;
}

int tree::binomial_children(const node& n) const { return to_prob(rng_rand(n)) < p_.nonleaf_prob ? p_.nonleaf_bf : 0; }

int tree::geometric_children(const node& n) const {
  double b_i = p_.b0;
  const int depth = n.height;
  const double d = static_cast<double>(depth);
  const double mx = static_cast<double>(p_.gen_mx);
  if (depth > 0) {
    switch (p_.shape) {
      case geo_shape::expdec: b_i = p_.b0 * std::pow(d, -std::log(p_.b0) / std::log(mx)); break;
      case geo_shape::cyclic:
        b_i = depth > 5 * p_.gen_mx ? 0.0 : std::pow(p_.b0, std::sin(2.0 * 3.141592653589793 * d / mx));
        break;
      case geo_shape::fixed: b_i = depth < p_.gen_mx ? p_.b0 : 0.0; break;
      case geo_shape::linear: b_i = p_.b0 * (1.0 - d / mx); break;
    }
  }
  // The inverse of the geometric distribution's cumulative density with mean b_i.
  const double p = 1.0 / (1.0 + b_i);
  const double u = to_prob(rng_rand(n));
  const double k = std::floor(std::log(1.0 - u) / std::log(1.0 - p));
  // The reference converts with (int); keep the conversion defined where it would overflow (the
  // result is capped at max_children anyway) or where a shape gives no real number.
  if (!(k >= 0.0)) return 0;
  return k > max_children ? max_children + 1 : static_cast<int>(k);
}

int tree::num_children(const node& n) const {
  int k = 0;
  switch (p_.type) {
    case tree_type::binomial: k = n.height == 0 ? static_cast<int>(std::floor(p_.b0)) : binomial_children(n); break;
    case tree_type::geometric: k = geometric_children(n); break;
    case tree_type::hybrid:
      k = n.height < p_.shift_depth * p_.gen_mx ? geometric_children(n) : binomial_children(n);
      break;
    case tree_type::balanced: k = n.height < p_.gen_mx ? static_cast<int>(p_.b0) : 0; break;
  }
  if (n.height == 0 && p_.type == tree_type::binomial) {
    const int root_bf = static_cast<int>(std::ceil(p_.b0));
    if (k > root_bf) k = root_bf;
  } else if (p_.type != tree_type::balanced && k > max_children) {
    k = max_children;
  }
  return k;
}

counts traverse_sequential(const tree& t) {
  counts c;
  std::vector<node> stack;
  stack.push_back(t.root());
  while (!stack.empty()) {
    const node n = stack.back();
    stack.pop_back();
    ++c.nodes;
    if (static_cast<std::uint64_t>(n.height) > c.depth) c.depth = static_cast<std::uint64_t>(n.height);
    const int k = t.num_children(n);
    if (k == 0) ++c.leaves;
    for (int i = k - 1; i >= 0; --i) stack.push_back(t.child(n, i));
  }
  return c;
}

namespace {

// The sample trees of the UTS distribution (sample_trees.sh) with the statistics it lists.
const sample samples[] = {
    {"T1", "-t 1 -a 3 -d 10 -b 4 -r 19", {4130071, 3305118, 10}},
    {"T2", "-t 1 -a 2 -d 16 -b 6 -r 502", {4117769, 2342762, 81}},
    {"T3", "-t 0 -b 2000 -q 0.124875 -m 8 -r 42", {4112897, 3599034, 1572}},
    {"T4", "-t 2 -a 0 -d 16 -b 6 -r 1 -q 0.234375 -m 4", {4132453, 3108986, 134}},
    {"T5", "-t 1 -a 0 -d 20 -b 4 -r 34", {4147582, 2181318, 20}},
    {"T1L", "-t 1 -a 3 -d 13 -b 4 -r 29", {102181082, 81746377, 13}},
    {"T2L", "-t 1 -a 2 -d 23 -b 7 -r 220", {96793510, 53791152, 67}},
    {"T3L", "-t 0 -b 2000 -q 0.200014 -m 5 -r 7", {111345631, 89076904, 17844}},
};

}  // namespace

const sample* find_sample(const std::string& name) {
  for (const sample& s : samples) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

params sample_params(const sample& s) {
  CLI::App app;
  params p;
  add_options(app, p);
  app.parse(s.flags, false);
  return p;
}

}  // namespace uts
