#include "run/context_notes.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "log/log.h"
#include "sys/process_start_time.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

constexpr char kSuffix[] = ".json";
constexpr size_t kMaxNoteBytes = 1 << 20;

std::string PathOf(const std::string& dir, const std::string& id) {
  return dir + "/" + id + kSuffix;
}

std::string NoteString(const json::Value& o, std::string_view key) {
  const json::Value* v = o.is_object() ? o.Find(key) : nullptr;
  return v && v->is_string() ? v->as_string() : std::string();
}

int64_t NoteInt(const json::Value& o, std::string_view key) {
  const json::Value* v = o.is_object() ? o.Find(key) : nullptr;
  return v && v->is_int() && v->as_int() > 0 ? v->as_int() : 0;
}

}  // namespace

std::optional<ContextNote> DecodeContextNote(const json::Value& doc) {
  const json::Value* request = doc.Find("request");
  const json::Value* info = doc.Find("info");
  if (!request || !info) return std::nullopt;
  Result<ContextCreateRequest> r = DecodeContextCreateRequest(*request);
  Result<ContextInfo> i = DecodeContextInfo(*info);
  if (!r.ok() || !i.ok() || r->id != i->id) return std::nullopt;
  ContextNote note;
  note.request = std::move(*r);
  note.info = std::move(*i);
  if (const json::Value* s = doc.Find("pid_start"); s && s->is_int() && s->as_int() > 0) {
    note.pid_start = static_cast<uint64_t>(s->as_int());
  }
  if (const json::Value* run = doc.Find("run"); run && run->is_object()) {
    note.run_in_progress = true;
    const json::Value* id = run->Find("run_id");
    if (id && id->is_string()) note.run_id = id->as_string();
    note.run_digest = NoteString(*run, "digest");
    note.run_timeout_sec = NoteInt(*run, "timeout_sec");
    note.run_deadline_ms = NoteInt(*run, "deadline_ms");
  }
  note.exec = NoteString(doc, "exec");
  note.nonce = NoteString(doc, "nonce");
  note.seq = NoteInt(doc, "seq");
  note.out_at = static_cast<uint64_t>(NoteInt(doc, "out_at"));
  note.err_at = static_cast<uint64_t>(NoteInt(doc, "err_at"));
  if (const json::Value* a = doc.Find("answered"); a && a->is_array()) {
    for (const json::Value& e : a->as_array()) {
      ContextNote::Answered kept;
      kept.run_id = NoteString(e, "run_id");
      kept.digest = NoteString(e, "digest");
      if (kept.run_id.empty()) continue;
      if (const json::Value* answer = e.Find("answer"); answer && answer->is_object()) {
        kept.answer = *answer;
      }
      if (const json::Value* lost = e.Find("lost"); lost && lost->is_object()) {
        const json::Value* ran = lost->Find("ran");
        const json::Value* code = lost->Find("exit_code");
        const json::Value* gone = lost->Find("context_gone");
        kept.lost = LostRun{ran && ran->is_bool() && ran->as_bool(),
                            code && code->is_int() ? std::optional(code->as_int()) : std::nullopt,
                            gone && gone->is_bool() && gone->as_bool()};
      }
      note.answered.push_back(std::move(kept));
    }
  }
  return note;
}

json::Object EncodeContextNote(const ContextNote& note) {
  json::Object o;
  o.Set("request", EncodeContextCreateRequest(note.request));
  o.Set("info", EncodeContextInfo(note.info));
  o.Set("pid_start", static_cast<int64_t>(note.pid_start));
  if (note.run_in_progress) {
    json::Object run;
    if (note.run_id) run.Set("run_id", *note.run_id);
    run.Set("digest", note.run_digest);
    run.Set("timeout_sec", note.run_timeout_sec);
    run.Set("deadline_ms", note.run_deadline_ms);
    o.Set("run", std::move(run));
  }
  if (!note.exec.empty()) {
    o.Set("exec", note.exec);
    o.Set("nonce", note.nonce);
    o.Set("seq", note.seq);
    o.Set("out_at", static_cast<int64_t>(note.out_at));
    o.Set("err_at", static_cast<int64_t>(note.err_at));
    json::Array answered;
    for (const ContextNote::Answered& a : note.answered) {
      json::Object e = json::Object().Set("run_id", a.run_id).Set("digest", a.digest);
      if (a.answer) e.Set("answer", *a.answer);
      if (a.lost) {
        json::Object lost = json::Object().Set("ran", a.lost->ran);
        if (a.lost->exit_code) lost.Set("exit_code", *a.lost->exit_code);
        if (a.lost->context_gone) lost.Set("context_gone", true);
        e.Set("lost", std::move(lost));
      }
      answered.emplace_back(std::move(e));
    }
    o.Set("answered", std::move(answered));
  }
  return o;
}

void WriteContextNote(const std::string& dir, const ContextNote& note) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return;
  Result<UniqueFd> written = ReplaceFile(
      PathOf(dir, note.info.id), json::Serialize(EncodeContextNote(note)), SyncMode::kByCaller);
  if (!written.ok()) {
    Log(LogLevel::kWarn, "cannot write a context's note",
        json::Object().Set("id", note.info.id).Set("error", written.status().message()));
  }
}

void RemoveContextNote(const std::string& dir, const std::string& id) {
  ::unlink(PathOf(dir, id).c_str());
}

std::vector<ContextNote> ReadContextNotes(const std::string& dir) {
  std::vector<ContextNote> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > sizeof(kSuffix) - 1 && name.ends_with(kSuffix)) names.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : names) {
    std::string path = dir + "/" + name;
    Result<std::string> text = ReadFileToString(path, kMaxNoteBytes);
    Result<json::Value> doc = text.ok() ? json::Parse(*text) : Result<json::Value>(text.status());
    std::optional<ContextNote> note = doc.ok() ? DecodeContextNote(*doc) : std::nullopt;
    if (!note || PathOf(dir, note->info.id) != path) {
      ::unlink(path.c_str());  // a write cut short, or not ours
      continue;
    }
    out.push_back(std::move(*note));
  }
  return out;
}

void EndContextNote(const std::string& dir, ContextNote& note) {
  pid_t pid = static_cast<pid_t>(note.info.pid);
  // Its interpreter leads its own process group (an exec's); a cell still
  // running when the daemon died runs on with no one to answer.
  if (pid > 0 && note.pid_start != 0 && ProcessStartTime(pid) == note.pid_start) {
    ::kill(-pid, SIGKILL);
    Log(LogLevel::kInfo, "ended a context's interpreter the dead daemon left",
        json::Object().Set("id", note.info.id).Set("pid", note.info.pid));
  }
  note.pid_start = 0;  // never again: the note now describes an ended context
  note.info.state = "ended";
  if (!note.info.ended_reason) note.info.ended_reason = "daemon_restart";
  WriteContextNote(dir, note);
}

}  // namespace agentd
