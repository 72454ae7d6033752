// AGENTD_THREAD_SANITIZER: defined in a ThreadSanitizer build, by GCC's
// macro or clang's feature test (scripts/test-tsan builds with clang).
#pragma once

#if defined(__SANITIZE_THREAD__)
#define AGENTD_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AGENTD_THREAD_SANITIZER 1
#endif
#endif
