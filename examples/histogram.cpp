// The example of docs/one_sided.md: every rank bins samples into a histogram that lives on rank 0,
// with delegates (plain code, serialised at the bins' home) and remote atomics (a running total),
// all feed-forward, then reads the result back with rget.
#include <rill/rill.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

struct bin {
  std::int64_t count;
  double sum;
};

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    constexpr int bins = 8, samples = 1000;
    rill::global_ptr<bin> hist = rill::new_array<bin>(bins);  // on rank 0
    rill::global_ptr<std::int64_t> seen = rill::new_<std::int64_t>(0);
    std::vector<rill::future<void>> ranks;
    for (int r = 0; r < rill::rank_n(); ++r)
      ranks.push_back(rill::rpc(r, [hist, seen] {
        rill::completion_counter done;
        for (int i = 0; i < samples; ++i) {
          const double x = (i * 37 + rill::rank_me() * 11) % 800 / 100.0;  // in [0, 8)
          rill::delegate::call_ff(
              done, hist + static_cast<int>(x),
              [](bin& b, double v) {
                ++b.count;
                b.sum += v;
              },
              x);
          rill::atomics::add(seen, 1, done);
        }
        done.wait();  // every update has landed at rank 0
      }));
    for (auto& f : ranks) f.wait();
    std::vector<bin> out(bins);
    rill::rget(hist, out.data(), bins).wait();
    std::int64_t total = 0;
    for (const bin& b : out) total += b.count;
    std::printf("%lld samples in %d bins, %lld counted by atomics\n", static_cast<long long>(total), bins,
                static_cast<long long>(rill::rget(seen).get()));
    // A bin far outside rank 0's segment: the delegate's future is poisoned, naming the cause.
    try {
      rill::delegate::call(hist + (1L << 40), [](bin& b) { return b.count; }).wait();
    } catch (const rill::poisoned_error& e) {
      std::printf("caught: %s\n", e.what());
    }
    rill::delete_array(hist);
    rill::delete_(seen);
  });
}
