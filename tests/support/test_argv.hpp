// An argv built from strings and kept alive for as long as an option parser or a rill::runtime
// needs it (both may reorder and remove entries, as they do with a real argv).
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace rill_test {

struct test_argv {
  explicit test_argv(std::vector<std::string> words) : store(std::move(words)) {
    for (auto& s : store) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
    argc = static_cast<int>(store.size());
  }
  test_argv(const test_argv&) = delete;
  test_argv& operator=(const test_argv&) = delete;

  char** argv() { return ptrs.data(); }
  // The arguments left after parsing.
  std::vector<std::string> left() const {
    std::vector<std::string> v;
    for (int i = 0; i < argc; ++i) v.emplace_back(ptrs[static_cast<std::size_t>(i)]);
    return v;
  }

  std::vector<std::string> store;
  std::vector<char*> ptrs;
  int argc;
};

// `program` followed by `flags`.
inline std::vector<std::string> command_line(std::string program, std::initializer_list<std::string> flags) {
  std::vector<std::string> words{std::move(program)};
  words.insert(words.end(), flags.begin(), flags.end());
  return words;
}

}  // namespace rill_test
