// FindLiteral: where a literal first occurs in a buffer, as memmem answers,
// but fast for the short literals patterns require (`conf_`): glibc's
// memmem shifts by at most the literal's length, so a 5-byte literal is
// scanned a few bytes at a time. This compares the literal's first and
// last bytes at many positions at once and checks the rest only where both
// agree: 64 positions a step with AVX2 where the CPU has it (checked once
// at run time; the binary stays baseline x86-64), else 16 with SSE2 (part
// of every x86-64); the tail and other CPUs use memmem. On the bench's log
// this loop is most of the search's own CPU time, and AVX2 halves its
// instructions per byte. It also counts the newlines it passes (a search
// needs them for line numbers): one pass over the block instead of two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fs/line_scanner.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AGENTD_LITERAL_AVX2 1
#endif

namespace agentd {

// The widest comparison FindLiteralWith may use (tests pin each one).
enum class LiteralScan { kBytes, kSse2, kAvx2 };

namespace literal_finder_detail {

// The '\n' bytes of `mask` (bits from `at`) before `hit`.
inline size_t NewlinesBefore(uint64_t mask, const char* at, const char* hit) {
  size_t n = static_cast<size_t>(hit - at);
  return static_cast<size_t>(
      __builtin_popcountll(n >= 64 ? mask : mask & ((uint64_t{1} << n) - 1)));
}

#if defined(AGENTD_LITERAL_AVX2)
inline bool CpuHasAvx2() {
  __builtin_cpu_init();  // may run before the constructors that set it up
  return __builtin_cpu_supports("avx2");
}
// Decided once per process, before main.
inline const bool kHasAvx2 = CpuHasAvx2();

// A bit per position among the 32 from `at` whose first and last bytes
// are the literal's; `a` is the 32 bytes from `at`. (Lambdas do not take
// the target attribute.)
__attribute__((target("avx2"))) inline uint32_t EndsAgree(__m256i a, const char* at, size_t k,
                                                          __m256i first, __m256i last) {
  __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + k - 1));
  return static_cast<uint32_t>(_mm256_movemask_epi8(
      _mm256_and_si256(_mm256_cmpeq_epi8(a, first), _mm256_cmpeq_epi8(b, last))));
}

// The first position of `mask` (bits from `at`) where the whole literal is.
inline const char* CheckCandidates(const char* at, uint64_t mask, std::string_view needle) {
  for (; mask != 0; mask &= mask - 1) {
    const char* pos = at + __builtin_ctzll(mask);
    if (std::memcmp(pos + 1, needle.data() + 1, needle.size() - 2) == 0) return pos;
  }
  return nullptr;
}

// The byte-wise newline counters of `acc` summed.
__attribute__((target("avx2"))) inline size_t SumCounters(__m256i acc) {
  __m256i sums = _mm256_sad_epu8(acc, _mm256_setzero_si256());
  return static_cast<size_t>(_mm256_extract_epi64(sums, 0)) +
         static_cast<size_t>(_mm256_extract_epi64(sums, 1)) +
         static_cast<size_t>(_mm256_extract_epi64(sums, 2)) +
         static_cast<size_t>(_mm256_extract_epi64(sums, 3));
}

// Candidate starts from *i on, 64 (then 32) at a time, while their last
// bytes lie inside `hay`: the first occurrence, or nullptr with *i at the
// first start not yet looked at. Counts the '\n' bytes it passes into
// *newlines (those before the occurrence, or before *i), in the same pass:
// a search needs both, and one read of the block costs less than two.
__attribute__((target("avx2"))) inline const char* FindAvx2(std::string_view hay,
                                                            std::string_view needle, size_t* i,
                                                            size_t* newlines) {
  const size_t k = needle.size();
  const char* h = hay.data();
  const __m256i first = _mm256_set1_epi8(needle[0]);
  const __m256i last = _mm256_set1_epi8(needle[k - 1]);
  const __m256i nl = _mm256_set1_epi8('\n');
  size_t at = *i;
  // Byte-wise counters, each step adding 0-2 to each: summed before they
  // could wrap.
  __m256i acc = _mm256_setzero_si256();
  size_t steps = 0;
  for (; at + (k - 1) + 64 <= hay.size(); at += 64) {
    __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + at));
    __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + at + 32));
    uint64_t mask = EndsAgree(a0, h + at, k, first, last) |
                    static_cast<uint64_t>(EndsAgree(a1, h + at + 32, k, first, last)) << 32;
    __m256i n0 = _mm256_cmpeq_epi8(a0, nl);
    __m256i n1 = _mm256_cmpeq_epi8(a1, nl);
    if (mask != 0) {
      if (const char* hit = CheckCandidates(h + at, mask, needle)) {
        uint64_t lines = static_cast<uint32_t>(_mm256_movemask_epi8(n0)) |
                         static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(n1)))
                             << 32;
        *newlines += SumCounters(acc) + NewlinesBefore(lines, h + at, hit);
        return hit;
      }
    }
    acc = _mm256_sub_epi8(_mm256_sub_epi8(acc, n0), n1);
    if (++steps == 127) {
      *newlines += SumCounters(acc);
      acc = _mm256_setzero_si256();
      steps = 0;
    }
  }
  *newlines += SumCounters(acc);
  for (; at + (k - 1) + 32 <= hay.size(); at += 32) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + at));
    uint32_t lines = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, nl)));
    if (const char* hit = CheckCandidates(h + at, EndsAgree(a, h + at, k, first, last), needle)) {
      *newlines += NewlinesBefore(lines, h + at, hit);
      return hit;
    }
    *newlines += static_cast<size_t>(__builtin_popcount(lines));
  }
  *i = at;
  return nullptr;
}
#endif

#if defined(__SSE2__)
// As FindAvx2, 16 candidate starts at a time.
inline const char* FindSse2(std::string_view hay, std::string_view needle, size_t* i,
                            size_t* newlines) {
  const size_t k = needle.size();
  const __m128i first = _mm_set1_epi8(needle[0]);
  const __m128i last = _mm_set1_epi8(needle[k - 1]);
  const __m128i nl = _mm_set1_epi8('\n');
  size_t at = *i;
  for (; at + (k - 1) + 16 <= hay.size(); at += 16) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hay.data() + at));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hay.data() + at + k - 1));
    unsigned mask = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last))));
    unsigned lines = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, nl)));
    for (; mask != 0; mask &= mask - 1) {
      size_t pos = at + static_cast<size_t>(__builtin_ctz(mask));
      if (std::memcmp(hay.data() + pos + 1, needle.data() + 1, k - 2) == 0) {
        *newlines += NewlinesBefore(lines, hay.data() + at, hay.data() + pos);
        return hay.data() + pos;
      }
    }
    *newlines += static_cast<size_t>(__builtin_popcount(lines));
  }
  *i = at;
  return nullptr;
}
#endif

}  // namespace literal_finder_detail

// The widest comparison this CPU offers.
inline LiteralScan BestLiteralScan() {
#if defined(AGENTD_LITERAL_AVX2)
  if (literal_finder_detail::kHasAvx2) return LiteralScan::kAvx2;
#endif
#if defined(__SSE2__)
  return LiteralScan::kSse2;
#else
  return LiteralScan::kBytes;
#endif
}

// The first occurrence of `needle` in `hay`, or nullptr, comparing at most
// `scan` wide (narrower where the build or CPU lacks it). An empty needle
// is found at the start. With `newlines`, adds the '\n' bytes of `hay`
// before the occurrence (all of them when there is none), counted in the
// same pass. Inline: a source of its own would reshuffle the unity
// batches of the search layer and grow the binary by 24 KiB of duplicated
// code (the 5 MiB limit of tests/test_static_binary.py).
inline const char* FindLiteralWith(std::string_view hay, std::string_view needle, LiteralScan scan,
                                   size_t* newlines = nullptr) {
  size_t ignored = 0;
  size_t& lines = newlines ? *newlines : ignored;
  const size_t k = needle.size();
  const char* hit = nullptr;
  size_t i = 0;
  if (k == 0) {
    hit = hay.data();
  } else if (k <= hay.size()) {
    if (k >= 2) {
#if defined(AGENTD_LITERAL_AVX2)
      if (scan == LiteralScan::kAvx2 && literal_finder_detail::kHasAvx2) {
        hit = literal_finder_detail::FindAvx2(hay, needle, &i, &lines);
        if (hit) return hit;
      }
#endif
#if defined(__SSE2__)
      if (scan != LiteralScan::kBytes) {
        hit = literal_finder_detail::FindSse2(hay, needle, &i, &lines);
        if (hit) return hit;
      }
#endif
    }
    hit = static_cast<const char*>(::memmem(hay.data() + i, hay.size() - i, needle.data(), k));
  }
  if (newlines) {
    // The tail the wide steps left (under 100 bytes), or all of `hay`
    // where no wide step ran.
    const char* end = hit ? hit : hay.data() + hay.size();
    lines += CountNewlines(hay.data() + i, static_cast<size_t>(end - (hay.data() + i)));
  }
  return hit;
}

inline const char* FindLiteral(std::string_view hay, std::string_view needle,
                               size_t* newlines = nullptr) {
  return FindLiteralWith(hay, needle, BestLiteralScan(), newlines);
}

}  // namespace agentd
