// The client's HTTP response parser: any bytes from a hostile "daemon",
// fed in two pieces (split chosen by the input), then the peer closes.
// Body spans must lie inside the fed bytes.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "http_response_parser.h"

namespace {

bool Inside(std::string_view span, std::string_view fed) {
  return span.empty() ||
         (span.data() >= fed.data() && span.data() + span.size() <= fed.data() + fed.size());
}

// Feeds until the bytes are used up or the parser stops; false on an error.
bool FeedAll(agentd::client::ResponseParser& parser, std::string_view fed, bool head) {
  while (!fed.empty()) {
    agentd::Result<agentd::client::ResponseParser::Progress> p = parser.Feed(fed);
    if (!p.ok()) return false;
    for (std::string_view span : p->body) {
      if (!Inside(span, fed)) std::abort();
    }
    if (p->consumed > fed.size()) std::abort();
    if (p->upgraded) return false;
    if (p->message_complete) parser.Reset(head);
    if (p->consumed == 0) return false;
    fed.remove_prefix(p->consumed);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  bool head = data[0] & 1;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t split = bytes.empty() ? 0 : (data[0] >> 1) % (bytes.size() + 1);
  agentd::client::ResponseParser parser;
  parser.Reset(head);
  if (FeedAll(parser, bytes.substr(0, split), head) && FeedAll(parser, bytes.substr(split), head)) {
    (void)parser.Finish();
  }
  return 0;
}
