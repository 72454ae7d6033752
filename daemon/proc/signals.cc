#include "proc/signals.h"

#include <signal.h>

#include <cctype>
#include <charconv>

namespace agentd {
namespace {

struct NamedSignal {
  const char* name;
  int signo;
};

constexpr NamedSignal kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT}, {"ILL", SIGILL},
    {"TRAP", SIGTRAP}, {"ABRT", SIGABRT},     {"BUS", SIGBUS},   {"FPE", SIGFPE},
    {"KILL", SIGKILL}, {"USR1", SIGUSR1},     {"SEGV", SIGSEGV}, {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},     {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT},
    {"CHLD", SIGCHLD}, {"CONT", SIGCONT},     {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH},
    {"IO", SIGIO},     {"PWR", SIGPWR},       {"SYS", SIGSYS},
};

std::optional<int> ParseSmall(std::string_view s) {
  int n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || n < 0 || n > 64) {
    return std::nullopt;
  }
  return n;
}

std::optional<int> Realtime(std::string_view name) {
  int base = 0;
  int sign = 1;
  if (name.starts_with("RTMIN")) {
    base = SIGRTMIN;
  } else if (name.starts_with("RTMAX")) {
    base = SIGRTMAX;
    sign = -1;
  } else {
    return std::nullopt;
  }
  std::string_view rest = name.substr(5);
  int offset = 0;
  if (!rest.empty()) {
    if (rest[0] != (sign > 0 ? '+' : '-')) return std::nullopt;
    std::optional<int> n = ParseSmall(rest.substr(1));
    if (!n) return std::nullopt;
    offset = *n;
  }
  int signo = base + sign * offset;
  if (signo < SIGRTMIN || signo > SIGRTMAX) return std::nullopt;
  return signo;
}

}  // namespace

std::optional<int> SignalFromName(std::string_view name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string_view n = upper;
  if (n.starts_with("SIG")) n.remove_prefix(3);
  for (const NamedSignal& s : kSignals) {
    if (n == s.name) return s.signo;
  }
  return Realtime(n);
}

std::string SignalName(int signo) {
  for (const NamedSignal& s : kSignals) {
    if (s.signo == signo) return s.name;
  }
  if (signo >= SIGRTMIN && signo <= SIGRTMAX) {
    return signo == SIGRTMIN ? "RTMIN" : "RTMIN+" + std::to_string(signo - SIGRTMIN);
  }
  return "SIG" + std::to_string(signo);
}

}  // namespace agentd
