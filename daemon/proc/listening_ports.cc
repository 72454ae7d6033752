#include "proc/listening_ports.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "sys/read_file.h"

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

// /proc/net/tcp{,6} of a host with many sockets runs to megabytes.
constexpr size_t kProcNetLimit = 64 << 20;

std::string ReadAll(const char* path) {
  Result<std::string> text = ReadFileToString(path, kProcNetLimit);
  return text.ok() ? std::move(*text) : std::string();
}

// The next whitespace-separated field of `line` from `*pos`.
std::string_view NextField(std::string_view line, size_t* pos) {
  size_t begin = line.find_first_not_of(" \t", *pos);
  if (begin == std::string_view::npos) return {};
  size_t end = line.find_first_of(" \t", begin);
  if (end == std::string_view::npos) end = line.size();
  *pos = end;
  return line.substr(begin, end - begin);
}

}  // namespace

std::vector<ListeningPort> ParseProcNetTcp(std::string_view text, std::string_view family) {
  std::vector<ListeningPort> out;
  size_t next = text.find('\n');  // past the column header
  while (next != std::string_view::npos && next + 1 < text.size()) {
    size_t start = next + 1;
    next = text.find('\n', start);
    std::string_view line =
        text.substr(start, next == std::string_view::npos ? std::string_view::npos : next - start);
    size_t pos = 0;
    NextField(line, &pos);  // the slot number
    std::string local(NextField(line, &pos));
    NextField(line, &pos);  // the remote address
    if (NextField(line, &pos) != kListenState) continue;
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
