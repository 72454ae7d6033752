// OutputLog: one output stream of one exec, as an append-only byte log in a
// file under --state-dir, addressed by absolute offsets
// (docs/PROTOCOL.md, "Exec").
//
// Bytes move from the child's pipe into the file with splice(2): the daemon
// never copies output through its own memory, so its RSS stays flat however
// much a child prints. The page cache is the log's in-memory tail (recent
// bytes are read back from it); the daemon holds no output buffer of its
// own beyond what one reader asks for. The file offset of a byte is its
// stream offset.
//
// The file is created with the stream's first byte, not with the exec: an
// exec that prints nothing (most of a harness's commands on one stream)
// costs no file and holds no descriptor, and every descriptor the daemon
// holds is copied into and closed in each child it spawns, so idle spool
// descriptors made every spawn slower as records piled up.
//
// Retention releases bytes from the front: `retained_from` moves forward at
// once (readers before it see a gap), and the disk space is returned by
// punching holes (fallocate PUNCH_HOLE | KEEP_SIZE) in whole kPunchUnit
// steps, never past a reader's pin: a reader streaming with sendfile pins
// its cursor so the bytes it is sending stay on disk until it moved on.
// Bytes are never rewritten, so any byte at or after the first data block
// on disk is a correct byte of the stream (recovery relies on this).
//
// A reader that has caught up holds a Tap: before the pump splices bytes
// from the child's pipe into the file, it tee(2)s them into each tap that
// ends where the log does (page references, no copy), and the reader
// splices them from its tap to its socket. The spool copy stays (the
// bytes are kept until acked), but a live reader's bytes are never read
// back from the file: on tmpfs that read (sendfile) was 19% of the
// daemon's CPU per streamed GiB, most of it marking each page accessed.
// A tap that fills, or misses bytes (a PTY's read path, the daemon's own
// Append), stops growing; its reader sends what it holds, then reads the
// file from there as before, and starts the tap again once caught up.
// A tap's pipe is made only when its reader first catches up (a reader of
// a finished exec never makes one), and at most kMaxTapPipes exist in the
// daemon: each pins up to its pipe's size (4 MiB as root) of unswappable
// kernel memory while its client stalls, and counts against the user's
// pipe allowance (pipe-user-pages-soft, 64 MiB) that the execs' own pipes
// share when the daemon is not root. Readers beyond the cap read the file.
//
// A reader of a fast producer batches its sends (Tap::HoldUntil), like TCP
// autocorking with a deadline: each send costs the daemon ~3 system calls
// and the reader a wake-up, and a pump turn of a streamed exec moves 32-170
// KiB, so sending every turn is most of what streaming costs beyond the
// copies. A tap that holds kFastBytes or more when its reader looks is held
// until it holds a batch (a quarter of its pipe, at most kBatchBytes), the
// tap stops growing (the exec ended, the tap filled or missed bytes) or
// kMaxHold passed since the hold began; less is sent at once, as an
// interactive child's prompt must be. The pipe of a paused child is empty
// after every turn whether it pauses for a microsecond or an hour, so only
// a clock can end a hold: kMaxHold bounds the delay a batch adds.
//
// Used only on the io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

class RetentionBudget;

class OutputLog {
 public:
  static constexpr uint64_t kPunchUnit = 1 << 20;

  // A new empty log at `path`; the file (mode 0600, truncated if it
  // exists) is made with the first byte. Never fails.
  static std::unique_ptr<OutputLog> Create(const std::string& path);
  // An existing log, for recovery: its size is `next`; `retained_from` is
  // the larger of the recorded value and the first byte still on disk.
  static Result<std::unique_ptr<OutputLog>> Open(const std::string& path,
                                                 uint64_t recorded_retained_from);
  ~OutputLog();

  uint64_t next() const { return next_; }
  uint64_t retained_from() const { return retained_from_; }
  uint64_t retained() const { return next_ - retained_from_; }
  // -1 until the first byte; [retained_from, next) is then non-empty only
  // when the file exists.
  int fd() const { return fd_.get(); }

  // Attaches the log to a budget (per-stream and total caps). Optional.
  void set_budget(RetentionBudget* budget);
  // This stream's own retention cap, below the budget's per-stream cap
  // (an exec's output_bytes limit); 0 means none.
  void set_stream_cap(uint64_t cap) { stream_cap_ = cap; }
  uint64_t stream_cap() const { return stream_cap_; }

  struct Fill {
    uint64_t bytes = 0;
    bool eof = false;          // the pipe's writers are all gone
    bool would_block = false;  // the pipe is empty for now
    // With `until_short`: a splice (or the tee before it) took fewer bytes
    // than asked, so the pipe held no more at that instant.
    bool emptied = false;
  };
  // Moves up to `max_bytes` from `pipe_fd` (non-blocking) into the log.
  // Without `until_short` it reads until the pipe says EAGAIN; with it, it
  // also stops after a short splice, sparing the two calls (a tee and a
  // splice) that would only hear EAGAIN: for a caller that then waits for
  // the pipe to be readable, which reports bytes already there (asio's
  // async_wait), so a wrong guess (a tap that filled) costs a turn, not
  // bytes. Those two calls were 2 of the ~12 system calls of each pump
  // turn of a streamed exec, at ~2 us each on this kind of guest.
  // A full disk (or quota) first releases this log's oldest whole units,
  // one at a time, so the newest bytes are kept; only when no unit is left
  // to give (or on another disk error) are the new bytes read and dropped,
  // and the log's front jumps past them: either way an explicit gap. A
  // descriptor splice cannot read (a PTY master) is copied with read(2);
  // EIO from it is its end of file.
  Fill FillFrom(int pipe_fd, uint64_t max_bytes, bool until_short = false);
  // Appends bytes the daemon itself writes (a spawn failure's reason).
  Status Append(std::string_view bytes);

  // Reads up to `max_bytes` starting at `from` (which must be within
  // [retained_from, next]) into `out`.
  Status Read(uint64_t from, uint64_t max_bytes, std::string* out) const;

  // Releases every byte before `offset` (clamped to next).
  void ReleaseTo(uint64_t offset);

  // A live reader's copy of the bytes as the pump moves them (see above).
  // The tap holds the stream's bytes [start, end) in its pipe; it grows
  // only while end == the log's next.
  class Tap {
   public:
    // Taps with a pipe at once, daemon-wide (see above).
    static constexpr int kMaxTapPipes = 16;
    // Batching (see above): a hold begins at kFastBytes held, ends at a
    // batch or after kMaxHold.
    static constexpr uint64_t kFastBytes = 32 * 1024;
    static constexpr uint64_t kBatchBytes = 256 * 1024;
    static constexpr std::chrono::microseconds kMaxHold{1000};
    using Clock = std::chrono::steady_clock;
    // Until when a reader holds the `held` bytes its tap holds before it
    // sends them; nullopt: send now. `batch`: the tap's batch(); `growing`:
    // the tap still ends where the log does and the exec can print more;
    // `until`: the hold under way (nullopt: none), as this returned it.
    static std::optional<Clock::time_point> HoldUntil(uint64_t held, uint64_t batch, bool growing,
                                                      std::optional<Clock::time_point> until,
                                                      Clock::time_point now) {
      if (!growing || held >= batch) return std::nullopt;
      if (!until) return held < kFastBytes ? std::nullopt : std::optional(now + kMaxHold);
      return now < *until ? until : std::nullopt;
    }
    // An empty tap at `offset`, with no pipe yet: it grows only after
    // Restart gave it one; without one (none to be had) its reader reads
    // the file.
    Tap(OutputLog& log, uint64_t offset);
    ~Tap();
    Tap(const Tap&) = delete;
    Tap& operator=(const Tap&) = delete;
    uint64_t start() const { return start_; }
    uint64_t end() const { return end_; }
    bool empty() const { return start_ == end_; }
    // The pipe's read end, to splice [start, end) from.
    int fd() const { return read_.get(); }
    // The reader moved `bytes` out of the pipe.
    void Took(uint64_t bytes) { start_ += bytes; }
    // Empty: starts again at `offset` (the reader's cursor), making the
    // pipe if it has none and the daemon-wide cap allows.
    void Restart(uint64_t offset);
    bool has_pipe() const { return static_cast<bool>(write_); }
    // What a held tap sends at once: a quarter of its pipe (room for the
    // turns that arrive meanwhile), at most kBatchBytes; 0 without a pipe.
    uint64_t batch() const { return batch_; }

   private:
    friend class OutputLog;
    void OpenPipe();
    static int live_pipes_;
    OutputLog& log_;
    UniqueFd read_;
    UniqueFd write_;
    uint64_t start_;
    uint64_t end_;
    uint64_t batch_ = 0;
  };

  // A reader's position; the disk bytes at and after it are kept.
  class Pin {
   public:
    Pin(OutputLog& log, uint64_t offset);
    ~Pin();
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    void Move(uint64_t offset);

   private:
    OutputLog& log_;
    std::multiset<uint64_t>::iterator it_;
  };

 private:
  OutputLog(std::string path, UniqueFd fd, uint64_t next, uint64_t retained_from);
  Status MakeFile();
  void Grew(uint64_t bytes);
  Fill CopyFrom(int fd, uint64_t max_bytes, Fill f);
  void Punch();
  static bool DiskFull(int err);
  // Releases the front up to the next whole kPunchUnit and punches it;
  // false when that freed no disk (no whole unit retained, or pinned).
  bool FreeOldestUnit();
  // Tees up to `max_bytes` at the head of `pipe_fd` into every tap that
  // ends at next_; the most any tap took (0: none).
  uint64_t TeeTaps(int pipe_fd, uint64_t max_bytes);

  std::string path_;
  UniqueFd fd_;
  uint64_t next_ = 0;
  uint64_t retained_from_ = 0;
  uint64_t punched_to_ = 0;  // disk bytes before this are holes
  bool punch_supported_ = true;
  std::multiset<uint64_t> pins_;
  std::vector<Tap*> taps_;
  // Bytes teed into taps that are still at the head of the pipe: the next
  // splices take exactly these before anything is teed again.
  uint64_t tee_owed_ = 0;
  RetentionBudget* budget_ = nullptr;
  uint64_t stream_cap_ = 0;
};

// RetentionBudget: the per-stream and total retention caps over every
// live log. After a log grows, it releases that log's front beyond the
// per-stream cap, then (while the sum over all logs exceeds the total cap)
// the front of the log retaining the most, so small outputs stay whole.
class RetentionBudget {
 public:
  RetentionBudget(uint64_t per_stream, uint64_t total) : per_stream_(per_stream), total_(total) {}

  void Add(OutputLog* log);
  void Remove(OutputLog* log);
  uint64_t retained_total() const { return retained_; }

  // For OutputLog.
  void OnGrow(OutputLog* log, uint64_t bytes);
  void OnRelease(uint64_t bytes) { retained_ -= bytes; }

 private:
  uint64_t per_stream_;
  uint64_t total_;
  uint64_t retained_ = 0;
  std::set<OutputLog*> logs_;
};

}  // namespace agentd
