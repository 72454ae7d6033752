#include "proc/listening_ports.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

namespace agentd {
namespace {

constexpr std::string_view kListenState = "0A";  // TCP_LISTEN in the kernel's table

// The kernel prints each 32-bit word of the address in host byte order as
// hex; on every architecture we run on that reverses to memory order.
bool DecodeAddress(std::string_view hex, std::string_view family, std::string* out) {
  size_t words = family == "ipv4" ? 1 : 4;
  if (hex.size() != words * 8) return false;
  unsigned char bytes[16];
  for (size_t w = 0; w < words; ++w) {
    uint32_t v = 0;
    for (size_t i = 0; i < 8; ++i) {
      char c = hex[w * 8 + i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return false;
      v = (v << 4) | static_cast<uint32_t>(d);
    }
    std::memcpy(bytes + w * 4, &v, 4);
  }
  char text[INET6_ADDRSTRLEN];
  int af = family == "ipv4" ? AF_INET : AF_INET6;
  if (!inet_ntop(af, bytes, text, sizeof(text))) return false;
  *out = text;
  return true;
}

std::string ReadAll(const char* path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::vector<ListeningPort> ParseProcNetTcp(std::string_view text, std::string_view family) {
  std::vector<ListeningPort> out;
  std::istringstream lines{std::string(text)};
  std::string line;
  std::getline(lines, line);  // the column header
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    if (!(fields >> slot >> local >> remote >> state) || state != kListenState) continue;
    size_t colon = local.find(':');
    if (colon == std::string::npos || local.size() - colon - 1 != 4) continue;
    ListeningPort p;
    unsigned long port = std::strtoul(local.c_str() + colon + 1, nullptr, 16);
    if (port == 0 || port > 65535) continue;
    p.port = static_cast<uint16_t>(port);
    p.family = std::string(family);
    if (!DecodeAddress(std::string_view(local).substr(0, colon), family, &p.address)) continue;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<ListeningPort> ListListeningPorts() {
  std::vector<ListeningPort> all = ParseProcNetTcp(ReadAll("/proc/net/tcp"), "ipv4");
  std::vector<ListeningPort> v6 = ParseProcNetTcp(ReadAll("/proc/net/tcp6"), "ipv6");
  all.insert(all.end(), v6.begin(), v6.end());
  auto key = [](const ListeningPort& p) { return std::tie(p.port, p.family, p.address); };
  std::sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  all.erase(std::unique(all.begin(), all.end(),
                        [&](const auto& a, const auto& b) { return key(a) == key(b); }),
            all.end());
  return all;
}

}  // namespace agentd
