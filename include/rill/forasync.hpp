// Parallel loops, Habanero style: forasync over 1-, 2- and 3-D ranges, cut into tiles that run as
// tasks of the calling rank (HabaneroUPC++ §2.1, §3.1; Grappa's parallel_for, §2.2).
//
//   rill::finish([&] {
//     rill::forasync(0, n, [&](std::int64_t i) { a[i] += b[i]; });             // 1-D, chunked
//     rill::forasync({0, rows, 16}, {0, cols, 64},                             // 2-D, 16x64 tiles,
//                    [&](std::int64_t i, std::int64_t j) { m[i][j] = 0; },     // divide and conquer
//                    rill::loop_mode::recursive);
//   });                                    // forasync returns at once; finish waits for the tiles
//
//   rill::finish_forasync(0, n, [&](std::int64_t i) { ... });  // the same, waiting (finish around)
//
// Each dimension is a rill::loop_range {lo, hi, tile, stride}: the indices lo, lo + stride, ...
// below hi, cut into tiles of `tile` iterations (0: the default, the dimension's iterations divided
// by the rank's workers, rounded up -- the paper's rule). Modes:
//   chunked    the calling task starts one task per tile;
//   recursive  one task takes the whole range and halves it along the dimension with the most
//              tiles, starting a task for one half and going on with the other, until one tile is
//              left, which it runs (Cilk's cilk_for, Grappa's parallel_for with a threshold).
// Both modes run the same tiles. Every tile task is started with rill::async, so it belongs to the
// caller's finish scope; the body gets the indices (fn(i), fn(i, j), fn(i, j, k)), is shared by all
// tiles and called concurrently, so it is called as const. Nothing is allocated per index or per
// tile: a tile task is a pointer to the loop and the tile's coordinates (one allocation per
// forasync call holds the loop and the body; finish_forasync keeps it on the caller's stack).
// Loops are per rank: the tiles run on the calling rank's workers.
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "rill/error.hpp"
#include "rill/finish.hpp"
#include "rill/proc.hpp"
#include "rill/rank.hpp"
#include "rill/task.hpp"

namespace rill {

enum class loop_mode {
  chunked,    // one task per tile, started by the caller
  recursive,  // divide and conquer: halve, start a task for one half, go on with the other
};

// One dimension of a loop: the indices lo, lo + stride, lo + 2 * stride, ... that are below hi.
struct loop_range {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  std::int64_t tile = 0;    // iterations per tile along this dimension; 0: iterations / workers
  std::int64_t stride = 1;  // > 0
};

namespace detail {

template <int D>
struct loop_shape {
  std::int64_t lo[D];
  std::uint64_t stride[D];
  std::uint64_t n[D];      // iterations
  std::uint64_t tile[D];   // iterations per tile
  std::uint32_t tiles[D];  // tiles: ceil(n / tile)
};

// Fills `s` from the ranges; false when the loop has no iteration.
template <int D>
bool make_loop_shape(const loop_range (&r)[D], loop_shape<D>& s) {
  // At most 2^63 tiles in all, so that a tile's linear number fits.
  constexpr std::uint64_t max_tiles = D == 3 ? (std::uint64_t{1} << 21) : std::numeric_limits<std::uint32_t>::max();
  bool empty = false;
  for (int d = 0; d < D; ++d) {
    if (r[d].stride <= 0) throw misuse_error("rill::forasync: a stride must be positive");
    if (r[d].tile < 0) throw misuse_error("rill::forasync: a tile size must not be negative (0: the default)");
    const auto stride = static_cast<std::uint64_t>(r[d].stride);
    const std::uint64_t span =
        r[d].hi > r[d].lo ? static_cast<std::uint64_t>(r[d].hi) - static_cast<std::uint64_t>(r[d].lo) : 0;
    s.lo[d] = r[d].lo;
    s.stride[d] = stride;
    s.n[d] = span / stride + (span % stride != 0);
    if (s.n[d] == 0) empty = true;
  }
  if (empty) return false;
  std::uint64_t workers = 0;
  for (int d = 0; d < D; ++d) {
    std::uint64_t t = static_cast<std::uint64_t>(r[d].tile);
    if (t == 0) {
      if (workers == 0) workers = static_cast<std::uint64_t>(std::max(1, workers_here()));
      t = s.n[d] / workers + (s.n[d] % workers != 0);
    }
    t = std::min(t, s.n[d]);
    if (s.n[d] / t + (s.n[d] % t != 0) > max_tiles) t = s.n[d] / max_tiles + 1;
    s.tile[d] = t;
    s.tiles[d] = static_cast<std::uint32_t>(s.n[d] / t + (s.n[d] % t != 0));
  }
  return true;
}

// A box of tiles: tile coordinates a[d] <= c < b[d].
template <int D>
struct tile_box {
  std::uint32_t a[D];
  std::uint32_t b[D];
};

// One forasync call: the loop's shape and body, shared by its tile tasks.
template <int D, class F>
struct loop_body {
  loop_shape<D> shape;
  F fn;
  bool on_heap = false;
  std::atomic<std::uint64_t> tasks{0};  // heap loops: tile tasks not yet ended

  template <class G>
  loop_body(const loop_shape<D>& s, G&& g, bool heap) : shape(s), fn(std::forward<G>(g)), on_heap(heap) {}

  std::int64_t index(int d, std::uint64_t q) const {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(shape.lo[d]) + q * shape.stride[d]);
  }

  // Runs every iteration of the tiles in `box`.
  void run(const tile_box<D>& box) const {
    std::uint64_t q0[D];
    std::uint64_t q1[D];
    for (int d = 0; d < D; ++d) {
      q0[d] = box.a[d] * shape.tile[d];
      q1[d] = std::min(box.b[d] * shape.tile[d], shape.n[d]);
    }
    const F& f = fn;
    if constexpr (D == 1) {
      for (std::uint64_t i = q0[0]; i < q1[0]; ++i) f(index(0, i));
    } else if constexpr (D == 2) {
      for (std::uint64_t i = q0[0]; i < q1[0]; ++i) {
        const std::int64_t x = index(0, i);
        for (std::uint64_t j = q0[1]; j < q1[1]; ++j) f(x, index(1, j));
      }
    } else {
      for (std::uint64_t i = q0[0]; i < q1[0]; ++i) {
        const std::int64_t x = index(0, i);
        for (std::uint64_t j = q0[1]; j < q1[1]; ++j) {
          const std::int64_t y = index(1, j);
          for (std::uint64_t k = q0[2]; k < q1[2]; ++k) f(x, y, index(2, k));
        }
      }
    }
  }

  // The tile with linear number t (row-major over the tile grid).
  tile_box<D> tile_at(std::uint64_t t) const {
    tile_box<D> box;
    for (int d = D - 1; d >= 0; --d) {
      box.a[d] = static_cast<std::uint32_t>(t % shape.tiles[d]);
      box.b[d] = box.a[d] + 1;
      t /= shape.tiles[d];
    }
    return box;
  }

  struct releaser {
    loop_body* l;
    ~releaser() { l->release(); }
  };
  // A tile task ended: the last one frees a heap loop.
  void release() {
    if (on_heap && tasks.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  void acquire(std::uint64_t n) {
    if (on_heap) tasks.fetch_add(n, std::memory_order_relaxed);
  }

  // Recursive mode: halve `box` along its dimension with the most tiles, start a task for the upper
  // half, go on with the lower, until one tile is left; run it.
  void split_and_run(tile_box<D> box) {
    for (;;) {
      int widest = 0;
      for (int d = 1; d < D; ++d)
        if (box.b[d] - box.a[d] > box.b[widest] - box.a[widest]) widest = d;
      const std::uint32_t width = box.b[widest] - box.a[widest];
      if (width <= 1) break;
      tile_box<D> upper = box;
      upper.a[widest] = box.a[widest] + width / 2;
      box.b[widest] = upper.a[widest];
      acquire(1);
      rill::async([this, upper] {
        const releaser guard{this};
        split_and_run(upper);
      });
    }
    run(box);
  }

  void start(loop_mode mode) {
    if (mode == loop_mode::recursive) {
      tile_box<D> all;
      for (int d = 0; d < D; ++d) {
        all.a[d] = 0;
        all.b[d] = shape.tiles[d];
      }
      acquire(1);
      rill::async([this, all] {
        const releaser guard{this};
        split_and_run(all);
      });
      return;
    }
    std::uint64_t count = 1;
    for (int d = 0; d < D; ++d) count *= shape.tiles[d];
    // Count every tile before starting any: a tile that ends early must not free the loop.
    acquire(count);
    for (std::uint64_t t = 0; t < count; ++t) {
      rill::async([this, t] {
        const releaser guard{this};
        run(tile_at(t));
      });
    }
  }
};

template <int D, class F>
void forasync_start(const loop_range (&r)[D], F&& fn, loop_mode mode) {
  require_worker("rill::forasync");
  loop_shape<D> s;
  if (!make_loop_shape(r, s)) return;
  auto* body = new loop_body<D, std::decay_t<F>>(s, std::forward<F>(fn), true);
  body->start(mode);
}

template <int D, class F>
void finish_forasync_run(const loop_range (&r)[D], F&& fn, loop_mode mode) {
  require_worker("rill::finish_forasync");
  loop_shape<D> s;
  if (!make_loop_shape(r, s)) return;
  loop_body<D, F&> body(s, fn, false);  // lives until finish has seen every tile end
  rill::finish([&] { body.start(mode); });
}

// A body that can be called only as non-const (a `mutable` lambda): the loops below take it by
// these overloads, which say what is wrong instead of "no matching function".
template <class F, class... Index>
concept mutable_loop_body =
    !std::invocable<const std::decay_t<F>&, Index...> && std::invocable<std::decay_t<F>&, Index...>;
template <class F>
inline constexpr bool const_loop_body = false;
#define RILL_CONST_BODY_MESSAGE                                                                                \
  "rill::forasync: the body runs on many workers at once and is called as const, so it cannot be a `mutable` " \
  "lambda: drop `mutable`, and keep per-iteration state in locals (or atomics)"

}  // namespace detail

// ---- forasync: start the tiles, return at once (wrap in rill::finish to wait) ------------------

template <class F>
requires std::invocable < const std::decay_t<F>
&, std::int64_t > void forasync(loop_range i, F&& fn, loop_mode mode = loop_mode::chunked) {
  const loop_range r[1] = {i};
  detail::forasync_start<1>(r, std::forward<F>(fn), mode);
}

// 1-D, indices lo..hi-1, default tile.
template <class F>
requires std::invocable < const std::decay_t<F>
&, std::int64_t > void forasync(std::int64_t lo, std::int64_t hi, F&& fn, loop_mode mode = loop_mode::chunked) {
  forasync(loop_range{lo, hi}, std::forward<F>(fn), mode);
}

template <class F>
requires std::invocable < const std::decay_t<F>
&, std::int64_t, std::int64_t > void forasync(loop_range i, loop_range j, F&& fn, loop_mode mode = loop_mode::chunked) {
  const loop_range r[2] = {i, j};
  detail::forasync_start<2>(r, std::forward<F>(fn), mode);
}

template <class F>
requires std::invocable < const std::decay_t<F>
&, std::int64_t, std::int64_t,
    std::int64_t >
        void forasync(loop_range i, loop_range j, loop_range k, F&& fn, loop_mode mode = loop_mode::chunked) {
  const loop_range r[3] = {i, j, k};
  detail::forasync_start<3>(r, std::forward<F>(fn), mode);
}

// ---- finish_forasync: the same inside a finish of its own; returns when every tile has ended -----
// (and rethrows the first exception a tile threw). The body is not copied.

template <class F>
requires std::invocable < const std::decay_t<F>
&, std::int64_t > void finish_forasync(loop_range i, const F& fn, loop_mode mode = loop_mode::chunked) {
  const loop_range r[1] = {i};
  detail::finish_forasync_run<1>(r, fn, mode);
}

template <class F>
requires std::invocable < const std::decay_t<F>
&, std::int64_t >
       void finish_forasync(std::int64_t lo, std::int64_t hi, const F& fn, loop_mode mode = loop_mode::chunked) {
  finish_forasync(loop_range{lo, hi}, fn, mode);
}

template <class F>
requires std::invocable < const std::decay_t<F>
&, std::int64_t,
    std::int64_t > void finish_forasync(loop_range i, loop_range j, const F& fn, loop_mode mode = loop_mode::chunked) {
  const loop_range r[2] = {i, j};
  detail::finish_forasync_run<2>(r, fn, mode);
}

template <class F>
requires std::invocable < const std::decay_t<F>
&, std::int64_t, std::int64_t,
    std::int64_t > void finish_forasync(loop_range i, loop_range j, loop_range k, const F& fn,
                                        loop_mode mode = loop_mode::chunked) {
  const loop_range r[3] = {i, j, k};
  detail::finish_forasync_run<3>(r, fn, mode);
}

// ---- a `mutable` body: refused with a message that says why ----------------------------------

template <detail::mutable_loop_body<std::int64_t> F>
void forasync(loop_range, F&&, loop_mode = loop_mode::chunked) {
  static_assert(detail::const_loop_body<F>, RILL_CONST_BODY_MESSAGE);
}
template <detail::mutable_loop_body<std::int64_t> F>
void forasync(std::int64_t, std::int64_t, F&&, loop_mode = loop_mode::chunked) {
  static_assert(detail::const_loop_body<F>, RILL_CONST_BODY_MESSAGE);
}
template <detail::mutable_loop_body<std::int64_t, std::int64_t> F>
void forasync(loop_range, loop_range, F&&, loop_mode = loop_mode::chunked) {
  static_assert(detail::const_loop_body<F>, RILL_CONST_BODY_MESSAGE);
}
template <detail::mutable_loop_body<std::int64_t, std::int64_t, std::int64_t> F>
void forasync(loop_range, loop_range, loop_range, F&&, loop_mode = loop_mode::chunked) {
  static_assert(detail::const_loop_body<F>, RILL_CONST_BODY_MESSAGE);
}
template <detail::mutable_loop_body<std::int64_t> F>
void finish_forasync(loop_range, F&&, loop_mode = loop_mode::chunked) {
  static_assert(detail::const_loop_body<F>, RILL_CONST_BODY_MESSAGE);
}
template <detail::mutable_loop_body<std::int64_t> F>
void finish_forasync(std::int64_t, std::int64_t, F&&, loop_mode = loop_mode::chunked) {
  static_assert(detail::const_loop_body<F>, RILL_CONST_BODY_MESSAGE);
}
template <detail::mutable_loop_body<std::int64_t, std::int64_t> F>
void finish_forasync(loop_range, loop_range, F&&, loop_mode = loop_mode::chunked) {
  static_assert(detail::const_loop_body<F>, RILL_CONST_BODY_MESSAGE);
}
template <detail::mutable_loop_body<std::int64_t, std::int64_t, std::int64_t> F>
void finish_forasync(loop_range, loop_range, loop_range, F&&, loop_mode = loop_mode::chunked) {
  static_assert(detail::const_loop_body<F>, RILL_CONST_BODY_MESSAGE);
}
template <detail::mutable_loop_body<std::int64_t> F>
void parallel_for(std::int64_t, std::int64_t, F&&, std::int64_t = 0) {
  static_assert(detail::const_loop_body<F>, RILL_CONST_BODY_MESSAGE);
}
#undef RILL_CONST_BODY_MESSAGE

// Grappa's parallel_for: indices lo..hi-1 by recursive decomposition down to `threshold`
// iterations per task (0: the default tile); returns when all have run.
template <class F>
requires std::invocable < const std::decay_t<F>
&, std::int64_t > void parallel_for(std::int64_t lo, std::int64_t hi, const F& fn, std::int64_t threshold = 0) {
  finish_forasync(loop_range{lo, hi, threshold}, fn, loop_mode::recursive);
}

}  // namespace rill
