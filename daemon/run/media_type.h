// The media type of an artifact (docs/PROTOCOL.md, "Run code",
// "artifacts"), sniffed from its first bytes the way browsers do (the
// WHATWG MIME sniffing signatures for the formats code runs write), never
// from its name: a model renaming out.png to out.txt does not change what
// the file is. Pure; tests feed it bytes.
#pragma once

#include <cstddef>
#include <string_view>

namespace agentd {

// How many leading bytes SniffMediaType looks at.
inline constexpr size_t kSniffBytes = 512;

// `head` is the file's first min(size, kSniffBytes) bytes; `size` its
// whole length. Text is "text/plain; charset=utf-8" (valid UTF-8, no NUL
// or other binary control bytes in the head), JSON "application/json"
// when the whole head parses or plausibly starts a document; what no
// signature names is "application/octet-stream".
std::string_view SniffMediaType(std::string_view head, size_t size);

}  // namespace agentd
