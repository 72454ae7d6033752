// Shell-style path patterns as git's wildmatch reads them (the rules are
// docs/PROTOCOL.md, "Pattern rules"): `*` any run of characters but '/',
// `?` one character but '/', `[...]` one character of a set (`!` or `^`
// negates, `a-z` ranges, `[:alpha:]` classes; never '/'), `**` as a whole
// component any number of components (zero included), `\x` the character
// x. Used by the ignore files, the search filters and the glob route.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace agentd {

// True when all of `path` (components joined by '/') matches `pattern`.
bool WildMatch(std::string_view pattern, std::string_view path, bool ignore_case = false);

// Brace sets, as the shell expands them: "a.{c,h}" is "a.c" and "a.h";
// sets nest and combine ("{a,b}{1,2}" is four patterns). A brace without a
// matching close, or a set without a comma, is literal. More than
// `max_patterns` results: nullopt-like empty vector and `*too_many` set.
std::vector<std::string> ExpandBraces(std::string_view pattern, size_t max_patterns,
                                      bool* too_many);

}  // namespace agentd
