#include "spool/output_log.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "log/log.h"
#include "sys/pipe.h"

namespace agentd {
namespace {

// One splice call moves at most this much (a pipe never holds more).
constexpr uint64_t kSpliceChunk = 1 << 20;
// What a log without a file reads (and copies) before it splices.
constexpr uint64_t kFirstCopyBytes = 16 * 1024;
// A tap's pipe: larger than the pump's 1 MiB pipe, so that a tap does not
// fill within one turn of the pump while its reader waits for its turn
// (a hint: above /proc/sys/fs/pipe-max-size only a privileged daemon gets
// it, and the tap then has what the kernel gives).
constexpr int kTapPipeBytes = 4 << 20;

}  // namespace

OutputLog::OutputLog(std::string path, UniqueFd fd, uint64_t next, uint64_t retained_from)
    : path_(std::move(path)), fd_(std::move(fd)), next_(next), retained_from_(retained_from) {}

OutputLog::~OutputLog() {
  if (budget_) budget_->Remove(this);
}

std::unique_ptr<OutputLog> OutputLog::Create(const std::string& path) {
  return std::unique_ptr<OutputLog>(new OutputLog(path, UniqueFd(), 0, 0));
}

Status OutputLog::MakeFile() {
  if (fd_) return Status::Ok();
  fd_.reset(::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd_) return PosixError(errno, "cannot create output log", path_);
  return Status::Ok();
}

Result<std::unique_ptr<OutputLog>> OutputLog::Open(const std::string& path,
                                                   uint64_t recorded_retained_from) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return PosixError(errno, "cannot open output log", path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return PosixError(errno, "cannot stat output log", path);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  // The first byte still on disk: ENXIO means the whole file is a hole; a
  // file system that cannot tell (EINVAL) is taken at the recorded value.
  off_t data = ::lseek(fd.get(), 0, SEEK_DATA);
  uint64_t first_data = data >= 0 ? static_cast<uint64_t>(data) : errno == ENXIO ? size : 0;
  uint64_t retained_from = std::min(size, std::max(recorded_retained_from, first_data));
  auto log = std::unique_ptr<OutputLog>(new OutputLog(path, std::move(fd), size, retained_from));
  log->punched_to_ = std::min(first_data, retained_from) / kPunchUnit * kPunchUnit;
  return log;
}

void OutputLog::set_budget(RetentionBudget* budget) {
  if (budget_) budget_->Remove(this);
  budget_ = budget;
  if (budget_) budget_->Add(this);
}

void OutputLog::Grew(uint64_t bytes) {
  // Every byte FillFrom takes from the pipe passes here, teed or not (a
  // splice, a read on a full disk or of a PTY); FillFrom returns only with
  // the pipe drained or ended, so tee_owed_ is 0 whenever Append is called
  // from outside.
  tee_owed_ -= std::min(tee_owed_, bytes);
  next_ += bytes;
  if (budget_) budget_->OnGrow(this, bytes);
}

OutputLog::Fill OutputLog::FillFrom(int pipe_fd, uint64_t max_bytes, bool until_short) {
  Fill f;
  int waiting = 0;
  if (!fd_ && max_bytes > 0 &&
      (::ioctl(pipe_fd, FIONREAD, &waiting) != 0 || waiting == 0 || !MakeFile().ok())) {
    // No bytes waiting (end of file, or nothing), or no file to be had:
    // read (and append, which makes the file), then splice takes over.
    // With bytes waiting the file is made first and they are spliced: no
    // byte is ever read into the daemon's memory only, so a daemon killed
    // at any instant loses none (proc/exec_holder.h keeps the rest).
    f = CopyFrom(pipe_fd, std::min<uint64_t>(max_bytes, kFirstCopyBytes), f);
    if (f.eof || f.would_block) return f;
  }
  while (f.bytes < max_bytes) {
    loff_t off = static_cast<loff_t>(next_);
    uint64_t want = std::min(max_bytes - f.bytes, kSpliceChunk);
    uint64_t teed = 0;
    if (tee_owed_ == 0 && !taps_.empty()) teed = tee_owed_ = TeeTaps(pipe_fd, want);
    // Exactly the teed bytes go next, so a tap that took them all still
    // ends where the log does.
    uint64_t ask = tee_owed_ > 0 ? std::min(want, tee_owed_) : want;
    ssize_t n = ::splice(pipe_fd, nullptr, fd_.get(), &off, static_cast<size_t>(ask),
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      Grew(static_cast<uint64_t>(n));
      f.bytes += static_cast<uint64_t>(n);
      // Short: the tee (when one took bytes) or the splice found fewer
      // bytes than asked. A tee can also be short because its tap filled;
      // then bytes remain, and the caller's wait reports them at once.
      if (until_short && tee_owed_ == 0 &&
          (teed > 0 ? teed < want : static_cast<uint64_t>(n) < ask)) {
        f.emptied = true;
        return f;
      }
      continue;
    }
    if (n == 0) {
      f.eof = true;
      return f;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      f.would_block = true;
      return f;
    }
    if (errno == EINVAL) return CopyFrom(pipe_fd, max_bytes, f);  // not a pipe: a PTY
    // The disk refused (full, quota, I/O error). The newest bytes matter
    // most (a failing command's last lines say why), so give up this log's
    // oldest retained unit and try again while there is one to give.
    int err = errno;
    if (DiskFull(err) && FreeOldestUnit()) continue;
    // Nothing left to give: keep the child running, read the bytes, drop
    // them, and make the loss an explicit gap.
    char buf[64 * 1024];
    ssize_t r = ::read(pipe_fd, buf, sizeof(buf));
    if (r > 0) {
      Log(LogLevel::kWarn, "output dropped: cannot write the spool",
          json::Object().Set("errno", err).Set("bytes", r));
      Grew(static_cast<uint64_t>(r));
      ReleaseTo(next_);
      f.bytes += static_cast<uint64_t>(r);
      continue;
    }
    if (r < 0 && errno == EAGAIN) {
      f.would_block = true;
    } else {
      f.eof = true;
    }
    return f;
  }
  return f;
}

OutputLog::Fill OutputLog::CopyFrom(int fd, uint64_t max_bytes, Fill f) {
  char buf[64 * 1024];
  while (f.bytes < max_bytes) {
    ssize_t n = ::read(fd, buf, std::min<uint64_t>(sizeof(buf), max_bytes - f.bytes));
    if (n > 0) {
      std::string_view bytes(buf, static_cast<size_t>(n));
      Status written = Append(bytes);
      // A full disk first costs this log its oldest units (see FillFrom).
      while (written.code() == ErrorCode::kInsufficientStorage && FreeOldestUnit())
        written = Append(bytes);
      if (!written.ok()) {
        Grew(static_cast<uint64_t>(n));  // not on disk: an explicit gap
        ReleaseTo(next_);
      }
      f.bytes += static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      f.would_block = true;
    } else {
      f.eof = true;  // 0, or EIO: a PTY master whose slave side is all closed
    }
    return f;
  }
  return f;
}

Status OutputLog::Append(std::string_view bytes) {
  if (bytes.empty()) return Status::Ok();
  AGENTD_RETURN_IF_ERROR(MakeFile());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd_.get(), bytes.data() + done, bytes.size() - done,
                         static_cast<off_t>(next_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError(errno, "cannot write output log");
    done += static_cast<size_t>(n);
  }
  Grew(bytes.size());
  return Status::Ok();
}

Status OutputLog::Read(uint64_t from, uint64_t max_bytes, std::string* out) const {
  if (from < retained_from_ || from > next_) {
    out->clear();
    return Status::Internal("read outside the retained range");
  }
  uint64_t len = std::min(max_bytes, next_ - from);
  // Resized without clearing first: a reused buffer of the same size is
  // not zero-filled again before pread overwrites it.
  out->resize(static_cast<size_t>(len));
  if (len == 0) return Status::Ok();
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd_.get(), out->data() + done, len - done, static_cast<off_t>(from + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      out->resize(done);
      return n == 0 ? Status::Internal("output log shorter than its length")
                    : PosixError(errno, "cannot read output log");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

void OutputLog::ReleaseTo(uint64_t offset) {
  offset = std::min(offset, next_);
  if (offset <= retained_from_) return;
  uint64_t released = offset - retained_from_;
  retained_from_ = offset;
  if (budget_) budget_->OnRelease(released);
  Punch();
}

bool OutputLog::DiskFull(int err) { return err == ENOSPC || err == EDQUOT; }

bool OutputLog::FreeOldestUnit() {
  // The first unit boundary after the retained front: releasing up to it
  // frees at least one whole unit of disk, unless a reader's pin holds it.
  uint64_t boundary = (retained_from_ / kPunchUnit + 1) * kPunchUnit;
  if (boundary > next_ || !punch_supported_) return false;
  uint64_t punched_before = punched_to_;
  ReleaseTo(boundary);
  return punched_to_ > punched_before;
}

void OutputLog::Punch() {
  uint64_t limit = retained_from_;
  if (!pins_.empty()) limit = std::min(limit, *pins_.begin());
  uint64_t target = limit / kPunchUnit * kPunchUnit;
  if (target <= punched_to_ || !punch_supported_ || !fd_) return;
  if (::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  static_cast<off_t>(punched_to_), static_cast<off_t>(target - punched_to_)) != 0) {
    if (errno == EOPNOTSUPP || errno == ENOSYS) {
      punch_supported_ = false;
      Log(LogLevel::kWarn, "the state directory cannot punch holes; released output stays on disk");
    }
    return;
  }
  punched_to_ = target;
}

uint64_t OutputLog::TeeTaps(int pipe_fd, uint64_t max_bytes) {
  uint64_t most = 0;
  for (Tap* tap : taps_) {
    if (tap->end_ != next_ || !tap->write_) continue;
    ssize_t n =
        ::tee(pipe_fd, tap->write_.get(), static_cast<size_t>(max_bytes), SPLICE_F_NONBLOCK);
    // EAGAIN: the tap is full (or the pipe empty: the splice will say);
    // EINVAL: not a pipe (a PTY). Either way the tap stops growing here.
    if (n <= 0) continue;
    tap->end_ += static_cast<uint64_t>(n);
    most = std::max(most, static_cast<uint64_t>(n));
  }
  return most;
}

int OutputLog::Tap::live_pipes_ = 0;

OutputLog::Tap::Tap(OutputLog& log, uint64_t offset) : log_(log), start_(offset), end_(offset) {
  log_.taps_.push_back(this);
}

OutputLog::Tap::~Tap() {
  std::erase(log_.taps_, this);
  if (write_) --live_pipes_;
}

void OutputLog::Tap::OpenPipe() {
  if (live_pipes_ >= kMaxTapPipes) return;
  Result<Pipe> made = MakePipe(true, true, kTapPipeBytes);
  if (!made.ok()) return;
  int size = ::fcntl(made->read.get(), F_GETPIPE_SZ);
  batch_ = std::min<uint64_t>(kBatchBytes, size > 0 ? static_cast<uint64_t>(size) / 4 : 0);
  read_ = std::move(made->read);
  write_ = std::move(made->write);
  ++live_pipes_;
}

void OutputLog::Tap::Restart(uint64_t offset) {
  if (!empty()) return;
  start_ = end_ = offset;
  if (!write_) OpenPipe();
}

OutputLog::Pin::Pin(OutputLog& log, uint64_t offset) : log_(log), it_(log.pins_.insert(offset)) {}

OutputLog::Pin::~Pin() {
  log_.pins_.erase(it_);
  log_.Punch();
}

void OutputLog::Pin::Move(uint64_t offset) {
  if (*it_ == offset) return;
  log_.pins_.erase(it_);
  it_ = log_.pins_.insert(offset);
  log_.Punch();
}

void RetentionBudget::Add(OutputLog* log) {
  if (logs_.insert(log).second) retained_ += log->retained();
}

void RetentionBudget::Remove(OutputLog* log) {
  if (logs_.erase(log)) retained_ -= log->retained();
}

void RetentionBudget::OnGrow(OutputLog* log, uint64_t bytes) {
  retained_ += bytes;
  uint64_t cap = per_stream_;
  if (log->stream_cap() != 0 && log->stream_cap() < cap) cap = log->stream_cap();
  if (log->retained() > cap) log->ReleaseTo(log->next() - cap);
  while (retained_ > total_) {
    OutputLog* largest = nullptr;
    for (OutputLog* l : logs_) {
      if (!largest || l->retained() > largest->retained()) largest = l;
    }
    if (!largest || largest->retained() == 0) return;
    uint64_t excess = retained_ - total_;
    largest->ReleaseTo(largest->retained_from() + std::min(excess, largest->retained()));
  }
}

}  // namespace agentd
