// Must not compile: an argument with neither a serialize member nor trivially copyable bytes.
// The compiler's error must say so in Rill's words (tests/errors/compile_fail.sh).
#include <string>

#include "rill/rill.hpp"

struct account {  // a std::string member: not trivially copyable, and no serialize()
  std::string owner;
  long balance = 0;
};

void pay(int rank) {
  rill::am::send(
      rank, [](const account& a) { (void)a.balance; }, account{"ada", 10});
}
