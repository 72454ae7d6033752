// RequiredLiteral: the longest run of literal bytes that every match of a
// regular expression must contain, found by a deliberately conservative
// reading of the pattern. The line matcher uses it as a prefilter: a literal
// search (search/literal_finder.h) skips to the few lines holding it; only those reach PCRE2
// (grep's DFA and rg's literal search skip the same way; PCRE2's own start
// optimisation knows only a first byte). Anything the reader does not fully
// understand (alternation, groups, inline options, \Q..\E, verbs, classes
// inside runs, non-ASCII) yields no literal or a shorter one, never a wrong
// one: a wrong literal would silently drop matches.
#pragma once

#include <string>
#include <string_view>

namespace agentd {

// The literal, or "" when none is certain. `fixed` patterns are their own
// literal; case-insensitive patterns have none (a byte search cannot fold
// case).
std::string RequiredLiteral(std::string_view pattern, bool fixed, bool ignore_case);

}  // namespace agentd
