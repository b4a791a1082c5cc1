// The example of docs/dist_object.md: a word count spread over the ranks. Every rank owns the
// counts of the words that hash to it, in a dist_object; every rank sends each of its words to the
// word's owner, whose task finds the owner's counts by the object's id. Rank 0 then fetches every
// rank's counts and checks the total against a count it makes alone.
#include <rill/rill.hpp>

#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

// The words rank r reads: a deterministic text, so that any rank can recount all of it.
std::vector<std::string> words_of(int r) {
  static const char* vocabulary[] = {"event", "task", "rank", "region", "copy", "fiber", "parcel"};
  std::vector<std::string> out;
  for (int i = 0; i < 200; ++i) out.emplace_back(vocabulary[(i * 7 + r * 3 + i / 5) % 7]);
  return out;
}

struct counts {
  std::mutex lock;  // a rank with several workers runs several arrivals at once
  std::map<std::string, long> of;
};

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run_spmd([] {
    const int n = rill::rank_n();
    rill::dist_object<counts> mine(std::in_place);  // every rank constructs it: the same id everywhere
    rill::finish_spmd([&] {
      for (const std::string& w : words_of(rill::rank_me()))
        rill::async_at(
            static_cast<int>(std::hash<std::string>{}(w) % static_cast<std::size_t>(n)),
            [](rill::dist_id<counts> c, std::string word) {
              std::lock_guard<std::mutex> g(c->lock);
              ++c->of[word];
            },
            mine.id(), w);
    });
    if (rill::rank_me() == 0) {
      std::map<std::string, long> expected, total;
      for (int r = 0; r < n; ++r)
        for (const std::string& w : words_of(r)) ++expected[w];
      for (int r = 0; r < n; ++r)  // a copy of rank r's map, fetched by a task on rank r
        for (const auto& [w, c] : rill::rpc(
                                      r, [](rill::dist_id<counts> d) { return d->of; }, mine.id())
                                      .get())
          total[w] += c;
      for (const auto& [w, c] : total) std::printf("%-7s %ld\n", w.c_str(), c);
      std::printf("%zu words counted on %d ranks: %s\n", total.size(), n, total == expected ? "correct" : "WRONG");
      if (total != expected) return 1;
    }
    rill::finish_spmd([] {});  // no rank destroys its counts while rank 0 may still read them
    return 0;
  });
}
