#include "sys/process_start_time.h"

#include <cstdlib>
#include <string>

#include "sys/read_file.h"

namespace agentd {

std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  Result<std::string> stat = ReadFileToString("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat.ok()) return std::nullopt;
  // The command name may hold spaces and parentheses: fields follow the last ')'.
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  size_t pos = close + 1;
  for (int field = 3; field <= 22; ++field) {
    pos = stat->find_first_not_of(' ', pos);
    if (pos == std::string::npos) return std::nullopt;
    size_t end = stat->find(' ', pos);
    if (field == 22) return std::strtoull(stat->substr(pos, end - pos).c_str(), nullptr, 10);
    pos = end;
  }
  return std::nullopt;
}

}  // namespace agentd
