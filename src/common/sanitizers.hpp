// Which sanitizer this translation unit is built with: RILL_ASAN, RILL_TSAN (GCC names them one
// way, Clang another). Code that the sanitizers model differently (fiber stacks, fences) asks here.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define RILL_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define RILL_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RILL_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define RILL_TSAN 1
#endif
#endif
