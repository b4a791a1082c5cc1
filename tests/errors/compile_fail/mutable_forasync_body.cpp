// Must not compile: a `mutable` forasync body (the body is called concurrently, as const). The
// error must say so in Rill's words (tests/errors/compile_fail.sh).
#include <cstdint>

#include "rill/rill.hpp"

void count() {
  long seen = 0;
  rill::finish_forasync(0, 100, [seen](std::int64_t) mutable { ++seen; });
}
