// The example of docs/global_array.md and docs/cache.md: a table striped over the ranks counts the
// keys every rank draws (remote atomics on its elements), each rank sums the counts it holds where
// they live, and rank 0 reads the first slots through a cache.
#include <rill/rill.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    constexpr std::uint64_t slots = 1000, keys_per_rank = 5000;
    auto table = rill::global_alloc<std::uint64_t>(slots, rill::dist::cyclic());  // 8 slots per block
    std::vector<rill::future<void>> ranks;
    for (int r = 0; r < rill::rank_n(); ++r)
      ranks.push_back(rill::rpc(r, [table] {
        rill::completion_counter done;
        std::uint64_t key = 12345 + static_cast<std::uint64_t>(rill::rank_me());
        for (std::uint64_t i = 0; i < keys_per_rank; ++i) {
          key = key * 6364136223846793005ull + 1442695040888963407ull;
          rill::atomics::add(table[(key >> 33) % table.size()], 1, done);
        }
        done.wait();
      }));
    for (auto& f : ranks) f.wait();
    // Where the data lives: one task per rank over its own slots, each slot's index at hand.
    auto partial = rill::global_alloc<std::uint64_t>(static_cast<std::uint64_t>(rill::rank_n()), rill::dist::cyclic(8));
    rill::for_each(table, [partial](std::uint64_t, std::uint64_t& count) {
      rill::atomics::add(partial[static_cast<std::uint64_t>(rill::rank_me())], count).wait();
    }).wait();
    std::uint64_t total = 0;
    for (int r = 0; r < rill::rank_n(); ++r) total += rill::rget(partial[static_cast<std::uint64_t>(r)]).get();
    std::printf("%llu keys counted in %llu slots over %d ranks (rank 0 holds %llu slots)\n",
                static_cast<unsigned long long>(total), static_cast<unsigned long long>(table.size()), rill::rank_n(),
                static_cast<unsigned long long>(table.count_at(0)));
    // A range spread over every rank, as one local copy: all its pieces fetched at once.
    rill::cache<std::uint64_t> first(table, 0, 100, rill::cache_mode::read_only);
    first.acquire().wait();
    std::uint64_t in_first = 0;
    for (std::uint64_t c : first) in_first += c;
    std::printf("the first 100 slots (%zu pieces) hold %llu keys\n", first.pieces(),
                static_cast<unsigned long long>(in_first));
    first.release().wait();
    try {
      (void)table[slots];
    } catch (const rill::misuse_error& e) {
      std::printf("caught: %s\n", e.what());
    }
    rill::global_free(partial);
    rill::global_free(table);
  });
}
