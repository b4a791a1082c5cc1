// What the tests of random launch programs share: operations on two fields (reads, writes and
// reductions by two operators), the body that applies one in a task, and the sequential model
// the programs' results are checked against.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "rill/launch.hpp"

namespace rill_test::launch_model {

constexpr rill::field<std::uint64_t> fa{1}, fb{2};

// nested_write: read_write by a task that leaves it to a sub-launch (launch_nested_test.cpp).
enum class kind : std::uint8_t { read_write, write_discard, read_only, reduce_sum, reduce_max, nested_write };
using sum_op = rill::reduce::sum<std::uint64_t>;
using max_op = rill::reduce::max<std::uint64_t>;
struct op {
  kind k;
  std::uint64_t id;
  std::uint8_t mask;  // bit 0: fa, bit 1: fb
};

inline std::vector<rill::field_id> fields_of(std::uint8_t mask) {
  std::vector<rill::field_id> out;
  if (mask & 1) out.push_back(fa.id);
  if (mask & 2) out.push_back(fb.id);
  return out;
}

inline bool reduces(kind k) { return k == kind::reduce_sum || k == kind::reduce_max; }

template <class Target>
rill::requirement requirement_of(Target r, const op& o) {
  switch (o.k) {
    case kind::read_only: return rill::req(r, fields_of(o.mask), rill::privilege::read_only);
    case kind::read_write:
    case kind::nested_write: return rill::req(r, fields_of(o.mask), rill::privilege::read_write);
    case kind::write_discard: return rill::req(r, fields_of(o.mask), rill::privilege::write_discard);
    case kind::reduce_sum: return rill::req(r, fields_of(o.mask), rill::reduce_with<sum_op>());
    case kind::reduce_max: break;
  }
  return rill::req(r, fields_of(o.mask), rill::reduce_with<max_op>());
}

// What an op does to a point's value (or reduces into it), or adds to a read's checksum: the same
// in the tasks and in the sequential model.
inline std::uint64_t written(const op& o, std::uint64_t old, rill::coord_t p) {
  return o.k == kind::write_discard ? o.id * 1000 + static_cast<std::uint64_t>(p) : old * 5 + o.id;
}
inline std::uint64_t reduced(const op& o, rill::coord_t p) {
  return o.k == kind::reduce_sum ? o.id * 3 + static_cast<std::uint64_t>(p)
                                 : (o.id * 0x9E3779B97F4A7C15ull) ^ static_cast<std::uint64_t>(p);
}
inline std::uint64_t checksum_step(std::uint64_t sum, std::uint64_t v) { return sum * 31 + v; }

// The body of every launch: applies o to its region's fields, or sums them.
inline std::uint64_t apply(const rill::physical_region& r, const op& o) {
  const rill::index_space<1> space = r.reg.space<1>();
  std::uint64_t sum = 0;
  for (rill::field_id f : fields_of(o.mask)) {
    const rill::field<std::uint64_t> typed{f};
    if (o.k == kind::read_only) {
      auto acc = r.read<std::uint64_t, 1>(typed);
      space.for_each_point([&](const rill::point<1>& p) { sum = checksum_step(sum, acc[p]); });
    } else if (o.k == kind::reduce_sum) {
      auto acc = r.reduce<sum_op, 1>(typed);
      space.for_each_point([&](const rill::point<1>& p) { acc(p, reduced(o, p[0])); });
    } else if (o.k == kind::reduce_max) {
      auto acc = r.reduce<max_op, 1>(typed);
      space.for_each_point([&](const rill::point<1>& p) { acc(p, reduced(o, p[0])); });
    } else {
      auto acc = r.write<std::uint64_t, 1>(typed);
      space.for_each_point([&](const rill::point<1>& p) { acc[p] = written(o, acc[p], p[0]); });
    }
  }
  return sum;
}

struct model {
  std::map<rill::field_id, std::vector<std::uint64_t>> v;
  explicit model(rill::coord_t points) {
    for (rill::field_id f : {fa.id, fb.id}) v[f].assign(static_cast<std::size_t>(points), 0);
  }
  std::uint64_t run(const op& o, const rill::index_space<1>& space) {
    std::uint64_t sum = 0;
    for (rill::field_id f : fields_of(o.mask))
      space.for_each_point([&](const rill::point<1>& p) {
        auto& x = v[f][static_cast<std::size_t>(p[0])];
        if (o.k == kind::read_only)
          sum = checksum_step(sum, x);
        else if (o.k == kind::reduce_sum)
          x += reduced(o, p[0]);
        else if (o.k == kind::reduce_max)
          x = std::max(x, reduced(o, p[0]));
        else
          x = written(o, x, p[0]);
      });
    return sum;
  }
  // Both fields' values, fa's then fb's.
  std::vector<std::uint64_t> values() const {
    std::vector<std::uint64_t> out = v.at(fa.id);
    out.insert(out.end(), v.at(fb.id).begin(), v.at(fb.id).end());
    return out;
  }
};

// Both fields' values in `root` (points 0 .. n-1), as model::values orders them: read back in one
// launch, after everything launched before that writes them.
inline std::vector<std::uint64_t> read_back(rill::region root, rill::coord_t n) {
  rill::promise<std::vector<std::uint64_t>> values;
  rill::launch(
      [](const rill::physical_regions& rs, rill::coord_t points, rill::promise<std::vector<std::uint64_t>> out) {
        std::vector<std::uint64_t> vals;
        for (rill::field<std::uint64_t> f : {fa, fb}) {
          auto acc = rs[0].read<std::uint64_t, 1>(f);
          for (rill::coord_t p = 0; p < points; ++p) vals.push_back(acc[{p}]);
        }
        out.put(std::move(vals));
      },
      {rill::req(root, {fa.id, fb.id}, rill::privilege::read_only)}, n, values);
  return values.get_future().get();
}

}  // namespace rill_test::launch_model
