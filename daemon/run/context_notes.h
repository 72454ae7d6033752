// Contexts through a daemon crash (docs/OPERATIONS.md, "Surviving a
// crash"): what the state directory keeps of each context, so that a
// daemon started after a crash answers for it truthfully.
//
// A context's interpreter has no holder (proc/exec_holder.h): when the
// daemon dies its channel closes and the driver exits once it next reads
// (a cell still running runs on until then, unless the next daemon ends
// it). So the context itself does not survive; what does is this note,
// <state-dir>/contexts/<id>.json, rewritten at its create, at each run's
// start and end, and at a reset, and removed at its delete. The next
// daemon lists each noted context as ended (`ended_reason`
// "daemon_restart", or what ended it before the crash), names a run that
// was in progress at the crash in its `context_gone` answers, and kills
// an interpreter still running from the dead daemon (by pid and start
// time); the note stays, marked ended, until the context is deleted or
// reset. Rewritten without fsync: the notes are for a crash of the
// daemon, not of the guest (the page cache survives the one, and the
// interpreter not the other).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/context.h"

namespace agentd {

struct ContextNote {
  ContextCreateRequest request;
  ContextInfo info;                   // as of the note
  uint64_t pid_start = 0;             // the interpreter's start time (sys/process_start_time.h)
  bool run_in_progress = false;       // a run had started and not yet answered
  std::optional<std::string> run_id;  // that run's, if it had one
};

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
