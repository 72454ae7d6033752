#include "run/run_answer.h"

#include <algorithm>

#include "run/result_lines.h"

namespace agentd {
namespace {

// Stderr bytes the summary's error line is looked for in.
constexpr uint64_t kSummaryTailBytes = 4096;
// The stdout bytes (the last ones) searched for result lines: read on the
// io thread, so bounded; and the size of one read.
constexpr uint64_t kResultScanBytes = 4 << 20;
constexpr uint64_t kResultReadBytes = 64 << 10;

// The first byte of the window still on disk.
uint64_t FirstKept(const StreamWindow& w) {
  return std::min(w.to, std::max(w.from, w.log->retained_from()));
}

std::string StderrTail(const StreamWindow& w) {
  uint64_t from = FirstKept(w);
  if (w.to - from > kSummaryTailBytes) from = w.to - kSummaryTailBytes;
  std::string out;
  (void)w.log->Read(from, w.to - from, &out);
  return out;
}

// stdout read through ResultLines: the last kResultScanBytes of the
// retained window, in pieces, so a result line may span any of them.
std::string StdoutWithoutResults(const StreamWindow& w, const std::string& marker, bool* cut,
                                 RunResponse* r) {
  uint64_t from = FirstKept(w);
  if (w.to - from > kResultScanBytes) from = w.to - kResultScanBytes;
  ResultLines lines(marker, from - w.from);
  std::string chunk;
  for (uint64_t at = from; at < w.to;) {
    chunk.clear();
    if (!w.log->Read(at, std::min<uint64_t>(kResultReadBytes, w.to - at), &chunk).ok() ||
        chunk.empty()) {
      break;
    }
    at += chunk.size();
    lines.Feed(chunk);
  }
  lines.Finish();
  if (lines.found()) {
    r->result = lines.result();
    r->result_error = lines.error();
  }
  return lines.Text(cut);
}

}  // namespace

std::string RunAnswerText(const StreamWindow& w, bool* cut) {
  uint64_t from = FirstKept(w);
  uint64_t next = w.to;
  std::string head;
  std::string tail;
  if (from == w.from && next - from <= kRunOutputBytes) {
    (void)w.log->Read(from, next - from, &head);
    return head;
  }
  *cut = true;
  uint64_t tail_bytes = kRunOutputBytes - (from == w.from ? kRunHeadBytes : 0);
  tail_bytes = std::min(tail_bytes, next - from);
  (void)w.log->Read(next - tail_bytes, tail_bytes, &tail);
  std::string_view t = Utf8Tail(tail, tail.size());
  if (from > w.from) return OmittedMarker(next - t.size() - w.from) + std::string(t);
  (void)w.log->Read(w.from, kRunHeadBytes, &head);
  std::string_view h = Utf8Head(head, kRunHeadBytes);
  return std::string(h) + OmittedMarker(next - w.from - h.size() - t.size()) + std::string(t);
}

RunResponse BuildRunAnswer(AnswerParts parts) {
  const ExecInfo& info = parts.info;
  RunResponse r;
  r.exit_code = info.exit_code;
  r.signal = info.signal;
  r.timed_out = info.timed_out;
  r.killed_by = info.killed_by;
  r.limit = info.limit;
  r.duration_ms = info.duration_ms;
  r.error = info.error;
  r.profile = info.profile;
  r.restriction = info.restriction;
  r.network = info.network;
  if (parts.egress && parts.egress->accounting) r.egress = std::move(*parts.egress);
  r.artifacts = std::move(parts.artifacts);
  // Only a failed run has an exception (a report beside exit 0 was
  // written by the code itself).
  if (info.exit_code != 0) r.exception = std::move(parts.exception);
  r.success = info.exit_code == 0 && !info.killed_by && !info.error;
  bool cut_out = false;
  bool cut_err = false;
  r.stdout_text = parts.result_marker.empty()
                      ? RunAnswerText(parts.out, &cut_out)
                      : StdoutWithoutResults(parts.out, parts.result_marker, &cut_out, &r);
  r.stderr_text = RunAnswerText(parts.err, &cut_err);
  r.truncated = cut_out || cut_err;
  r.stdout_bytes = parts.out.to - parts.out.from;
  r.stderr_bytes = parts.err.to - parts.err.from;
  r.changed_files = parts.diff.changes;
  r.changed_files_truncated = parts.diff.truncated;
  r.changed_files_bound = parts.diff.bound;
  r.runtime = std::string(RuntimeName(parts.runtime));
  r.cwd = parts.cwd;
  r.timeout_sec = info.limit_timeout_sec.value_or(0);
  RunOutcome o;
  o.exit_code = info.exit_code;
  o.signal = info.signal;
  o.killed_by = info.killed_by;
  o.limit = info.limit;
  o.duration_ms = info.duration_ms;
  o.changed_files = parts.diff.total;
  // A directory that was not scanned (cwd "/") is not news in every summary.
  o.changed_files_truncated =
      parts.diff.truncated && parts.diff.bound && parts.diff.bound->name != "not_scanned";
  o.stderr_tail = StderrTail(parts.err);
  o.exception = r.exception;
  o.egress = r.egress;  // every destination: the summary names the most refused
  r.summary = RunSummary(o);
  if (r.egress) BoundEgressReport(*r.egress, kMaxRunEgressDestinations);
  return r;
}

}  // namespace agentd
