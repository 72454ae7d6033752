// The lexical path check: any bytes as a client path (under "/" and under
// an --fs-root prefix) and as an archive member name. Beyond not crashing,
// an accepted path must hold the documented invariants: no empty or "."
// component, and ".." never climbing above the root (none at all in a
// member name).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fs/lexical_path.h"

namespace {

void CheckInvariants(const agentd::RelPath& rel, bool dotdot_allowed) {
  int depth = 0;
  for (const std::string& part : rel.parts) {
    if (part.empty() || part == "." || part.find('/') != std::string::npos ||
        part.find('\0') != std::string::npos) {
      std::abort();
    }
    if (part == "..") {
      if (!dotdot_allowed || --depth < 0) std::abort();
    } else {
      ++depth;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const agentd::PathPolicy whole("/");
  static const agentd::PathPolicy confined("/srv/root");
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const agentd::PathPolicy* policy : {&whole, &confined}) {
    agentd::Result<agentd::RelPath> rel = policy->Check(text);
    if (rel.ok()) {
      CheckInvariants(*rel, true);
      std::string shown = policy->Display(*rel);
      if (!shown.starts_with(policy->root())) std::abort();
    }
  }
  agentd::Result<agentd::RelPath> member = agentd::CheckMemberName(text);
  if (member.ok()) CheckInvariants(*member, false);
  return 0;
}
