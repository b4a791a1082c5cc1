// The example of docs/data.md for instances, copies and reductions: every rank counts words of a
// made-up text into a fold instance of its own; the counts are reduced into one histogram on the
// last rank, copied to rank 0 in another layout, and checked there.
#include <cstdio>
#include <vector>

#include "rill/rill.hpp"

namespace {

using count = rill::reduce::sum<long>;
constexpr rill::field_id tally = 1;      // long, in the fold instances and the histogram
constexpr rill::field<double> share{2};  // double, only in the histogram
constexpr rill::coord_t words = 1000;    // the histogram's buckets
constexpr long per_rank = 100000;        // words each rank counts

rill::coord_t word_of(int rank, long i) { return (rank * 7919 + i * i) % words; }

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    const int n = rill::rank_n(), last = n - 1;
    const rill::rect<1> all{0, words - 1};
    // The histogram, in the last rank's registered memory: counts and their shares side by side.
    auto [hist, hist_ready] = rill::instance::create(
        rill::memory::registered(last), all, rill::field_space{share}.add(tally, sizeof(long)), rill::layout::aos());
    const rill::event zeroed = rill::fill(hist, rill::field<long>{tally}, 0L, hist_ready);

    // Every rank counts into a fold instance of its own, with no lock, then reduces it.
    std::vector<rill::event> reduced;
    for (int r = 0; r < n; ++r) {
      auto [part, ready] = rill::create_fold_instance<count>(rill::memory::system(r), all, tally);
      const rill::event counted = rill::proc(r).spawn(
          rill::after(ready),
          [](rill::instance p) {
            const rill::reducer<count, 1> add(p, tally);
            for (long i = 0; i < per_rank; ++i) add({word_of(rill::rank_me(), i)}, 1);
          },
          part);
      const rill::event done =
          rill::reduce_into<count>(part, tally, hist, tally, rill::merge(std::vector<rill::event>{counted, zeroed}));
      part.destroy(done);
      reduced.push_back(done);
    }
    // Each word's share of all words, computed where the histogram lives.
    const rill::event shared = rill::proc(last).spawn(
        rill::after(rill::merge(reduced)),
        [](rill::instance h, long total) {
          const rill::accessor<long, 1> c(h, tally);
          const rill::accessor<double, 1> s(h, share);
          for (rill::coord_t w = 0; w < words; ++w) s[{w}] = static_cast<double>(c[{w}]) / static_cast<double>(total);
        },
        hist, n * per_rank);

    // A copy to rank 0, as a struct of arrays this time.
    auto [mine, mine_ready] =
        rill::instance::create(rill::memory::system(0), all, rill::field_space{share}.add(tally, sizeof(long)));
    rill::copy(hist, mine, {tally, share}, rill::merge(std::vector<rill::event>{shared, mine_ready})).wait();
    const rill::accessor<long, 1> c(mine, tally);
    const rill::accessor<double, 1> s(mine, share);
    long total = 0;
    double shares = 0;
    for (rill::coord_t w = 0; w < words; ++w) total += c[{w}], shares += s[{w}];
    std::printf("%d rank(s) counted %ld words; shares add up to %.6f\n", n, total, shares);
    hist.destroy().wait();
    mine.destroy().wait();
    return total == n * per_rank ? 0 : 1;
  });
}
