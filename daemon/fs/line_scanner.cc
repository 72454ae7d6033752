#include "fs/line_scanner.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AGENTD_COUNT_AVX2 1
#endif

namespace agentd {
namespace {

// Counting is done in slices this big before FindNthNewline looks at the
// bytes one newline at a time.
constexpr size_t kSliceBytes = 4096;

size_t CountScalar(const char* p, size_t n) {
  size_t count = 0;
  const char* end = p + n;
  while (p < end) {
    const void* hit = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (!hit) break;
    ++count;
    p = static_cast<const char*>(hit) + 1;
  }
  return count;
}

#if defined(__SSE2__)
size_t CountSse2(const char* p, size_t n) {
  size_t count = 0;
  const __m128i newline = _mm_set1_epi8('\n');
  while (n >= 16) {
    // Up to 255 rounds of byte-wise counters (each compare adds 0 or -1),
    // then one horizontal sum.
    size_t rounds = n / 16 < 255 ? n / 16 : 255;
    __m128i acc = _mm_setzero_si128();
    for (size_t i = 0; i < rounds; ++i) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(v, newline));
      p += 16;
    }
    __m128i sums = _mm_sad_epu8(acc, _mm_setzero_si128());
    count += static_cast<size_t>(_mm_cvtsi128_si32(sums)) +
             static_cast<size_t>(_mm_cvtsi128_si32(_mm_srli_si128(sums, 8)));
    n -= rounds * 16;
  }
  return count + CountScalar(p, n);
}
#endif

#if defined(AGENTD_COUNT_AVX2)
// As CountSse2, 32 bytes a step: a search counts every newline of a file
// for the line numbers, so this runs over all of a large log.
__attribute__((target("avx2"))) size_t CountAvx2(const char* p, size_t n) {
  size_t count = 0;
  const __m256i newline = _mm256_set1_epi8('\n');
  while (n >= 32) {
    size_t rounds = n / 32 < 255 ? n / 32 : 255;
    __m256i acc = _mm256_setzero_si256();
    for (size_t i = 0; i < rounds; ++i) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v, newline));
      p += 32;
    }
    __m256i sums = _mm256_sad_epu8(acc, _mm256_setzero_si256());
    count += static_cast<size_t>(_mm256_extract_epi64(sums, 0)) +
             static_cast<size_t>(_mm256_extract_epi64(sums, 1)) +
             static_cast<size_t>(_mm256_extract_epi64(sums, 2)) +
             static_cast<size_t>(_mm256_extract_epi64(sums, 3));
    n -= rounds * 32;
  }
  return count + CountScalar(p, n);
}

bool CpuHasAvx2() {
  __builtin_cpu_init();  // may run before the constructors that set it up
  return __builtin_cpu_supports("avx2");
}
// Decided once per process, before main.
const bool kHasAvx2 = CpuHasAvx2();
#endif

}  // namespace

size_t CountNewlinesWith(const char* p, size_t n, NewlineCount how) {
#if defined(AGENTD_COUNT_AVX2)
  if (how == NewlineCount::kAvx2 && kHasAvx2) return CountAvx2(p, n);
#endif
#if defined(__SSE2__)
  if (how != NewlineCount::kBytes) return CountSse2(p, n);
#endif
  (void)how;
  return CountScalar(p, n);
}

size_t CountNewlines(const char* p, size_t n) {
  return CountNewlinesWith(p, n, NewlineCount::kAvx2);
}

std::optional<size_t> FindNthNewline(const char* p, size_t n, uint64_t k, size_t* counted) {
  size_t seen = 0;
  size_t off = 0;
  while (off < n) {
    size_t len = n - off < kSliceBytes ? n - off : kSliceBytes;
    size_t in_slice = CountNewlines(p + off, len);
    if (seen + in_slice < k) {
      seen += in_slice;
      off += len;
      continue;
    }
    const char* q = p + off;
    const char* end = q + len;
    for (;;) {
      q = static_cast<const char*>(std::memchr(q, '\n', static_cast<size_t>(end - q)));
      if (++seen == k) return static_cast<size_t>(q - p);
      ++q;
    }
  }
  *counted = seen;
  return std::nullopt;
}

std::string_view LineRangeScanner::Feed(std::string_view block) {
  if (done() || block.empty()) {
    pos_ += block.size();
    return {};
  }
  uint64_t block_start = pos_;
  size_t from = 0;  // first byte of `block` not yet examined
  if (!begin_) {
    uint64_t want = range_.start - 1;  // newlines before the first line asked for
    if (newlines_ == want) {
      begin_ = block_start;
    } else {
      size_t counted = 0;
      std::optional<size_t> hit =
          FindNthNewline(block.data(), block.size(), want - newlines_, &counted);
      if (!hit) {
        newlines_ += counted;
        pos_ += block.size();
        return {};
      }
      newlines_ = want;
      from = *hit + 1;
      begin_ = block_start + from;
    }
  }
  size_t slice_begin = from;
  if (range_.end) {
    uint64_t want = *range_.end - newlines_;  // newlines still to pass, the last one included
    size_t counted = 0;
    std::optional<size_t> hit =
        FindNthNewline(block.data() + from, block.size() - from, want, &counted);
    if (hit) {
      newlines_ = *range_.end;
      end_ = block_start + from + *hit + 1;
      pos_ += block.size();
      return block.substr(slice_begin, from + *hit + 1 - slice_begin);
    }
    newlines_ += counted;
  }
  pos_ += block.size();
  return block.substr(slice_begin);
}

void LineRangeScanner::Finish() {
  if (!end_) end_ = pos_;
  if (!begin_) begin_ = pos_;
}

}  // namespace agentd
