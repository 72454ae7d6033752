// A unified diff ("diff -u" format) of two versions of one text, for the
// answer of POST /v1/fs/edit. Pure; any thread.
#pragma once

#include <string>
#include <string_view>

namespace agentd {

// Lines of context around each change.
inline constexpr size_t kDiffContextLines = 3;
// Beyond this many differing lines the middle of the change is shown as one
// replacement instead of searched for a shortest edit script.
inline constexpr size_t kDiffMaxSearch = 2000;

// "--- a<path>\n+++ b<path>\n" and the hunks of the change from `before`
// to `after` ("" when they are equal). A last line without a newline is
// marked "\ No newline at end of file", as diff does.
std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view path);

}  // namespace agentd
