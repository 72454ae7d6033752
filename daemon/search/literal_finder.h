// FindLiteral: where a literal first occurs in a buffer, as memmem answers,
// but fast for the short literals patterns require (`conf_`): glibc's
// memmem shifts by at most the literal's length, so a 5-byte literal is
// scanned a few bytes at a time. This compares the literal's first and
// last bytes at 16 positions at once (SSE2, part of every x86-64) and
// checks the rest only where both agree; elsewhere it is memmem.
#pragma once

#include <cstddef>
#include <string_view>

namespace agentd {

// The first occurrence of `needle` in `hay`, or nullptr. An empty needle
// is found at the start.
const char* FindLiteral(std::string_view hay, std::string_view needle);

}  // namespace agentd
