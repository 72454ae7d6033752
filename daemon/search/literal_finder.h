// FindLiteral: where a literal first occurs in a buffer, as memmem answers,
// but fast for the short literals patterns require (`conf_`): glibc's
// memmem shifts by at most the literal's length, so a 5-byte literal is
// scanned a few bytes at a time. This compares the literal's first and
// last bytes at 16 positions at once (SSE2, part of every x86-64) and
// checks the rest only where both agree; elsewhere it is memmem.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace agentd {

// The first occurrence of `needle` in `hay`, or nullptr. An empty needle
// is found at the start. Inline: a source of its own would reshuffle the
// unity batches of the search layer and grow the binary by 24 KiB of
// duplicated code (the 5 MiB limit of tests/test_static_binary.py).
inline const char* FindLiteral(std::string_view hay, std::string_view needle) {
  const size_t k = needle.size();
  if (k == 0) return hay.data();
  if (k > hay.size()) return nullptr;
  size_t i = 0;
#if defined(__SSE2__)
  if (k >= 2) {
    const __m128i first = _mm_set1_epi8(needle[0]);
    const __m128i last = _mm_set1_epi8(needle[k - 1]);
    // Blocks of 16 candidate starts whose last bytes lie inside `hay`.
    for (; i + (k - 1) + 16 <= hay.size(); i += 16) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hay.data() + i));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hay.data() + i + k - 1));
      unsigned mask = static_cast<unsigned>(
          _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last))));
      while (mask != 0) {
        size_t at = i + static_cast<size_t>(__builtin_ctz(mask));
        if (std::memcmp(hay.data() + at + 1, needle.data() + 1, k - 2) == 0) return hay.data() + at;
        mask &= mask - 1;
      }
    }
  }
#endif
  const void* r = ::memmem(hay.data() + i, hay.size() - i, needle.data(), k);
  return static_cast<const char*>(r);
}

}  // namespace agentd
