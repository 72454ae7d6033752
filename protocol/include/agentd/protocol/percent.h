// Percent-encoding of request targets (RFC 3986): how a guest path or an
// exec id travels in a URL. The client encodes, the daemon decodes; both
// use these two functions, so the two sides cannot disagree on a byte.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace agentd {

// Percent-encodes every byte but the unreserved characters (A-Z a-z 0-9
// - . _ ~), and '/' when `keep_slash` (a path stays readable in logs).
std::string PercentEncode(std::string_view in, bool keep_slash);

// Decodes %XX escapes (either case), and '+' as a space when
// `plus_is_space` (query components). nullopt for a '%' not followed by
// two hex digits.
std::optional<std::string> PercentDecode(std::string_view in, bool plus_is_space);

}  // namespace agentd
