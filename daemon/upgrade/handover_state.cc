#include "upgrade/handover_state.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {
namespace {

Status Missing(std::string_view field) {
  return Status::InvalidRequest("the upgrade state has no valid \"" + std::string(field) + "\"")
      .With("field", std::string(field));
}

Result<int64_t> Int(const json::Value& doc, std::string_view field) {
  const json::Value* v = doc.Find(field);
  if (!v || !v->is_int()) return Missing(field);
  return v->as_int();
}

}  // namespace

std::string EncodeHandover(const HandoverState& s) {
  json::Array listeners;
  for (int fd : s.listeners) listeners.emplace_back(fd);
  json::Object doc;
  bool plain = s.streams.empty() && !s.init_pid && s.contexts.empty();
  int64_t format = plain                ? kHandoverFormatWithoutStreams
                   : s.contexts.empty() ? kHandoverFormatWithStreams
                                        : s.format;
  doc.Set("format", format)
      .Set("from_version", s.from_version)
      .Set("upgrades", s.upgrades)
      .Set("upgrade_failures", s.upgrade_failures)
      .Set("attempt", s.attempt)
      .Set("uptime_ms", s.uptime_ms)
      .Set("generation", s.generation)
      .Set("listeners", std::move(listeners))
      .Set("secrets_fd", s.secrets_fd)
      .Set("execs", s.execs);
  if (!plain) doc.Set("streams", s.streams);
  if (s.init_pid) doc.Set("init_pid", *s.init_pid);
  if (format == kHandoverFormat) doc.Set("contexts", s.contexts);
  return json::Serialize(doc) + "\n";
}

Result<HandoverState> DecodeHandover(std::string_view text) {
  Result<json::Value> doc = json::Parse(text);
  if (!doc.ok()) return doc.status();
  HandoverState s;
  Result<int64_t> format = Int(*doc, "format");
  if (!format.ok()) return format.status();
  if (*format == kHandoverFormatWithContextFields) {
    return Status::InvalidRequest(
               "the upgrade state is format 3, whose contexts this binary cannot take back "
               "(it reads format 4, each context as its note); delete the contexts first, or "
               "upgrade to a binary that reads format 3")
        .With("format", *format)
        .With("supported", kHandoverFormat);
  }
  if (*format < kHandoverFormatWithoutStreams || *format > kHandoverFormat) {
    return Status::InvalidRequest("the upgrade state is format " + std::to_string(*format) +
                                  "; this binary reads format " + std::to_string(kHandoverFormat))
        .With("format", *format)
        .With("supported", kHandoverFormat);
  }
  const json::Value* version = doc->Find("from_version");
  if (!version || !version->is_string()) return Missing("from_version");
  s.from_version = version->as_string();
  int64_t* ints[] = {&s.upgrades, &s.upgrade_failures, &s.attempt, &s.uptime_ms, &s.generation};
  const char* names[] = {"upgrades", "upgrade_failures", "attempt", "uptime_ms", "generation"};
  for (size_t i = 0; i < std::size(ints); ++i) {
    Result<int64_t> v = Int(*doc, names[i]);
    if (!v.ok()) return v.status();
    *ints[i] = *v;
  }
  Result<int64_t> secrets = Int(*doc, "secrets_fd");
  if (!secrets.ok()) return secrets.status();
  s.secrets_fd = static_cast<int>(*secrets);
  const json::Value* listeners = doc->Find("listeners");
  if (!listeners || !listeners->is_array()) return Missing("listeners");
  for (const json::Value& fd : listeners->as_array()) {
    if (!fd.is_int() || fd.as_int() < 0) return Missing("listeners");
    s.listeners.push_back(static_cast<int>(fd.as_int()));
  }
  const json::Value* execs = doc->Find("execs");
  if (!execs || !execs->is_array()) return Missing("execs");
  for (const json::Value& e : execs->as_array()) {
    const json::Value* id = e.Find("id");
    if (!id || !id->is_string()) return Missing("execs[].id");
  }
  s.execs = execs->as_array();
  if (*format == kHandoverFormat) {
    const json::Value* contexts = doc->Find("contexts");
    if (!contexts || !contexts->is_array()) return Missing("contexts");
    s.contexts = contexts->as_array();
  }
  if (*format >= kHandoverFormatWithStreams) {
    const json::Value* streams = doc->Find("streams");
    if (!streams || !streams->is_array()) return Missing("streams");
    for (const json::Value& e : streams->as_array()) {
      const json::Value* kind = e.Find("kind");
      if (!kind || !kind->is_string()) return Missing("streams[].kind");
    }
    s.streams = streams->as_array();
    if (const json::Value* init = doc->Find("init_pid")) {
      if (!init->is_int() || init->as_int() < -1 || init->as_int() == 0) return Missing("init_pid");
      s.init_pid = init->as_int();
    }
  }
  return s;
}

Result<int> WriteSecrets(std::string_view text) {
  UniqueFd fd(::memfd_create("agentd-upgrade", MFD_CLOEXEC));
  if (!fd) return PosixError(errno, "cannot create the upgrade's memfd");
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return PosixError(errno, "cannot write the upgrade's memfd");
    done += static_cast<size_t>(n);
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return PosixError(errno, "cannot rewind the memfd");
  return fd.release();
}

Result<std::string> ReadSecrets(int raw) {
  UniqueFd fd(raw);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError(errno, "cannot read the upgrade's secrets");
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace agentd
