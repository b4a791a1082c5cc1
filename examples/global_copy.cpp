// The example of docs/global_ptr.md: every rank allocates a block in its segment, rank 0 gathers
// them with async_copy into one array, and a copy from a pointer outside any segment fails cleanly.
#include <rill/rill.hpp>

#include <cstdio>
#include <span>
#include <vector>

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    const int n = rill::rank_n();
    constexpr std::size_t block = 1000;
    // One block per rank, filled there with its rank number.
    std::vector<rill::future<rill::global_ptr<int>>> blocks;
    for (int r = 0; r < n; ++r)
      blocks.push_back(rill::rpc(r, [] {
        rill::global_ptr<int> p = rill::new_array<int>(block);
        for (int& x : std::span(p.local(block), block)) x = rill::rank_me();
        return p;
      }));
    // Gather: every block into its slot of one array here, all copies in flight at once.
    rill::global_ptr<int> all = rill::new_array<int>(block * static_cast<std::size_t>(n));
    std::vector<rill::future<void>> copies;
    for (int r = 0; r < n; ++r)
      copies.push_back(
          rill::async_copy(blocks[static_cast<std::size_t>(r)].get(), all + r * static_cast<long>(block), block));
    long sum = 0;
    for (auto& c : copies) c.wait();
    for (int x : std::span(all.local(block * static_cast<std::size_t>(n)), block * static_cast<std::size_t>(n)))
      sum += x;
    std::printf("gathered %d blocks, sum %ld\n", n, sum);

    // A pointer far outside rank n-1's segment: the copy's future is poisoned, naming the cause.
    try {
      rill::async_copy(blocks.back().get() + (1L << 40), all, 10).wait();
    } catch (const rill::poisoned_error& e) {
      std::printf("caught: %s\n", e.what());
    }
    for (auto& b : blocks)
      rill::rpc(
          b.get().where(),
          [](rill::global_ptr<int> p) {
            rill::delete_array(p);
            return 0;
          },
          b.get())
          .wait();
    rill::delete_array(all);
  });
}
