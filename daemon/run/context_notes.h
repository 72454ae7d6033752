// Contexts through a daemon crash (docs/OPERATIONS.md, "Surviving a
// crash"): what the state directory keeps of each context, so that a
// daemon started after a crash takes it back, or answers for it
// truthfully.
//
// The note, <state-dir>/contexts/<id>.json, is rewritten at a context's
// create, at each run's start and end, and at a reset, and removed at its
// delete. Under holders (--exec-holder, the default) the interpreter's
// exec has one, which keeps the context's channel open and hands it to
// the next daemon (proc/exec_holder.h): that daemon takes the context
// back from its note (the interpreter's exec id, where the next cell's
// output begins, the token nonce and sequence, the run in progress and
// the run_ids answered) and talks on with the interpreter, its names
// intact. Without a holder (--exec-holder=off, or a holder gone) the
// interpreter's channel closes with the daemon and the driver exits once
// it next reads, so the context itself does not survive: the next daemon
// lists it as ended (`ended_reason` "daemon_restart", or what ended it
// before the crash), names a run that was in progress at the crash in its
// `context_gone` answers, and kills an interpreter still running from the
// dead daemon (by pid and start time); the note stays, marked ended,
// until the context is deleted or reset. Rewritten without fsync: the
// notes are for a crash of the daemon, not of the guest (the page cache
// survives the one, and the interpreter not the other).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/context.h"

namespace agentd {

// What a resync found of a run the crash cut: whether the interpreter
// ran its cell, and to what exit code when its answer came.
struct LostRun {
  bool ran = false;
  std::optional<int64_t> exit_code;
  // The resync found no answer by the run's deadline: the interpreter was
  // ended with it, and the run's retry answers 410 context_gone with
  // lost_run (also after a later crash, from the ended context's note).
  bool context_gone = false;
};

// The one description of a context that outlives its daemon: written to
// disk for a crash, and handed over whole (with its kept answers) for an
// upgrade in place; either way the next daemon takes the context back from
// it (CodeContext::TakeBack).
struct ContextNote {
  ContextCreateRequest request;
  ContextInfo info;                   // as of the note
  uint64_t pid_start = 0;             // the interpreter's start time (sys/process_start_time.h)
  bool run_in_progress = false;       // a run had started and not yet answered
  std::optional<std::string> run_id;  // that run's, if it had one
  // What a daemon needs to take the context back (empty `exec`: the note
  // of an agentd from before, never taken back).
  std::string exec;     // the interpreter's exec id
  std::string nonce;    // of its cells' tokens
  int64_t seq = 0;      // the last cell sent; a run in progress goes as seq + 1
  uint64_t out_at = 0;  // where the next cell's output begins in each stream
  uint64_t err_at = 0;
  std::string run_digest;       // the run in progress: its code's digest,
  int64_t run_timeout_sec = 0;  // its deadline's length,
  int64_t run_deadline_ms = 0;  // and the deadline (unix ms)
  struct Answered {
    std::string run_id;
    std::string digest;
    // Its answer, to replay: only in an upgrade's handover (the note on
    // disk keeps none; after a crash the retry answers 410 run_lost).
    std::optional<json::Value> answer;
    // A run in progress at a crash, as its resync settled it: its retry
    // answers 410 run_lost with these (run/context_takeback.cc).
    std::optional<LostRun> lost;
  };
  std::vector<Answered> answered;  // the run_ids whose answers were kept, oldest first
};

// The note as JSON, and back: nullopt for one that is not a note (cut
// short, or its request and info name different contexts).
json::Object EncodeContextNote(const ContextNote& note);
std::optional<ContextNote> DecodeContextNote(const json::Value& doc);

// `dir` is <state-dir>/contexts (made on the first write). Errors are
// logged, never fatal: a context works without its note.
void WriteContextNote(const std::string& dir, const ContextNote& note);
void RemoveContextNote(const std::string& dir, const std::string& id);

// Every note in `dir` (unreadable ones removed).
std::vector<ContextNote> ReadContextNotes(const std::string& dir);
// For a context that did not survive: kills its interpreter's process
// group if it still runs from the dead daemon, and rewrites its note as
// ended ("daemon_restart" unless it had ended before), so a later crash
// lists it the same until it is deleted or reset.
void EndContextNote(const std::string& dir, ContextNote& note);

}  // namespace agentd
