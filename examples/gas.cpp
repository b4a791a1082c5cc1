// The example of docs/gas.md: a table of relocatable blocks updated from every rank while its
// blocks move, a parcel whose results land in an LCO at a global address, and a use after free.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "rill/rill.hpp"

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    const int ranks = rill::rank_n();
    // Four 4 KiB blocks, one per rank round from rank 0.
    const rill::gaddr table = rill::gas::alloc(4 * 4096, rill::dist::cyclic(4096));
    rill::finish([&] {
      for (int r = 0; r < ranks; ++r)
        rill::async_at(
            r,
            [](rill::gaddr t) {
              rill::completion_counter done;
              for (std::uint64_t k = 0; k < 1000; ++k)  // word k of 2048
                rill::gas::call_ff<std::uint64_t>(done, t + static_cast<std::int64_t>((k * 7 % 2048) * 8),
                                                  [](std::uint64_t& w) { ++w; });
              done.wait();
            },
            table);
      rill::async([=] {  // meanwhile, every block moves to the last rank
        for (int b = 0; b < 4; ++b) rill::gas::migrate(table + b * 4096, ranks - 1).wait();
      });
    });
    std::uint64_t total = 0;
    for (int b = 0; b < 4; ++b) {
      const std::vector<std::uint64_t> words = rill::gas::read<std::uint64_t>(table + b * 4096, 512).get();
      for (std::uint64_t w : words) total += w;
    }
    std::printf("%llu updates from %d ranks, block 0 now on rank %d\n", static_cast<unsigned long long>(total), ranks,
                rill::gas::owner(table).get());

    // A parcel: double word 7 where it lives, and set the result into a reduction LCO.
    auto sum = rill::reduce_lco<std::uint64_t>::create(1);
    const auto at = rill::gas::place(sum);
    rill::make_parcel<std::uint64_t>(table + 7 * 8, [](std::uint64_t& w) { return 2 * w; }).send(at).wait();
    std::printf("the parcel's result: %llu\n", static_cast<unsigned long long>(sum.get().get()));

    rill::gas::free(at.addr).wait();
    rill::gas::free(table).wait();
    try {
      rill::gas::get<std::uint64_t>(table).get();
    } catch (const rill::poisoned_error& e) {
      std::printf("caught: %s\n", e.what());
    }
    return 0;
  });
}
