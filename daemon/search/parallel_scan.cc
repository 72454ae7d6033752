#include "search/parallel_scan.h"

#include <fcntl.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <system_error>

namespace agentd {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBatchFiles = 128;
// Sealed batches not yet claimed: the walk waits at kQueuedBatches and
// goes on at kResumeWalkAt (fewer wake-ups than waking at each claim).
constexpr size_t kQueuedBatches = 4;
constexpr size_t kResumeWalkAt = 2;
// Batches not yet applied (each holds a descriptor of its directory).
constexpr size_t kMaxBatches = 64;
// A scanner hands over what it found at the end of a batch, and sooner
// when it has this much or has held it this long (so a slow search still
// streams). Once kHeldBytes wait to be applied, the scanners of all but
// the oldest batch wait.
constexpr size_t kPublishBytes = 64 * 1024;
constexpr auto kPublishEvery = std::chrono::milliseconds(100);
constexpr size_t kHeldBytes = 4 << 20;
constexpr size_t kMaxScanHelpers = 4;

}  // namespace

FileBatch::FileBatch(UniqueFd dir) : dir_(std::move(dir)) {
  static std::atomic<uint64_t> next{1};
  serial_ = next.fetch_add(1, std::memory_order_relaxed);
}

void FileBatch::Add(std::string_view name, std::string_view path, size_t walk_at, bool followed,
                    uint64_t unreadable_before) {
  File f{text_.size(), 0, path.size(), walk_at, unreadable_before, followed};
  text_.append(name);
  text_ += '\0';
  f.path_at = text_.size();
  text_.append(path);
  files_.push_back(f);
}

std::string_view FileBatch::path(size_t i) const {
  return std::string_view(text_).substr(files_[i].path_at, files_[i].path_len);
}

size_t ScanHelperThreads(size_t requested) {
  if (requested == 1) return 0;
  if (requested > 1) return std::min(requested, kMaxScanHelpers);
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return cpus <= 1 ? 0 : std::min(static_cast<size_t>(cpus), kMaxScanHelpers);
}

// A scanning thread's sink: records, and hands the record to its batch.
class ParallelScan::Publisher : public ScanSink {
 public:
  Publisher(ParallelScan& ps, Batch& b) : ps_(ps), b_(b), last_(Clock::now()) {}

  bool Unreadable(uint64_t n) override {
    log_.Unreadable(n);
    return !ps_.stop_.load(std::memory_order_relaxed);
  }
  bool FileStart() override {
    log_.FileStart();
    return !ps_.stop_.load(std::memory_order_relaxed);
  }
  bool Match(std::string_view line) override {
    log_.Match(line);
    if (log_.bytes() >= kPublishBytes || Clock::now() - last_ >= kPublishEvery) {
      bool go = Publish();
      // A file with many matches: the next record is made at its size at
      // once, not doubled up to it (copies, fresh pages).
      log_.Reserve(kPublishBytes + kPublishBytes / 4);
      return go;
    }
    return !ps_.stop_.load(std::memory_order_relaxed);
  }
  bool FileEnd(FileOutcome outcome) override {
    log_.FileEnd(outcome);
    return !ps_.stop_.load(std::memory_order_relaxed);
  }

  bool Publish() {
    last_ = Clock::now();
    std::unique_lock<std::mutex> lock(ps_.mu_);
    if (log_.empty()) return !ps_.stop_;
    ps_.held_bytes_ += log_.bytes();
    b_.published.Append(std::move(log_));
    ps_.WakeMain();
    auto may_go = [&] {
      return ps_.stop_ || ps_.held_bytes_ < kHeldBytes || ps_.queue_.front().get() == &b_;
    };
    if (!may_go()) {
      ++ps_.cap_waiters_;
      ps_.work_cv_.wait(lock, may_go);
      --ps_.cap_waiters_;
    }
    return !ps_.stop_;
  }

 private:
  ParallelScan& ps_;
  Batch& b_;
  ScanLog log_;
  Clock::time_point last_;
};

ParallelScan::ParallelScan(size_t helpers, MakeFileScan make, SearchTally& tally)
    : make_(std::move(make)), tally_(tally) {
  for (size_t k = 0; k < helpers; ++k) {
    try {
      threads_.emplace_back([this] { Helper(); });
    } catch (const std::system_error&) {
      break;  // no thread: fewer helpers
    }
  }
  if (threads_.empty()) direct_ = make_(nullptr);
}

ParallelScan::~ParallelScan() { Abort(); }

bool ParallelScan::Add(int dir_fd, std::string_view name, std::string_view path, size_t walk_at,
                       bool followed, uint64_t unreadable_before) {
  if (stopped_) return false;
  if (cur_ && (dir_fd != cur_src_fd_ || cur_->files.size() >= kBatchFiles) && !Seal()) {
    return false;
  }
  if (!cur_) {
    // The walk closes its directory when it leaves it; the batch keeps its
    // own descriptor until it is scanned.
    cur_ = std::make_unique<Batch>(UniqueFd(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0)));
    cur_src_fd_ = dir_fd;
  }
  cur_->files.Add(name, path, walk_at, followed, unreadable_before);
  return true;
}

bool ParallelScan::Seal() {
  if (stopped_) return false;
  if (!cur_) return true;
  std::unique_ptr<Batch> b = std::move(cur_);
  if (threads_.empty()) {
    for (size_t i = 0; i < b->files.size(); ++i) {
      uint64_t before = b->files.unreadable_before(i);
      if ((before > 0 && !tally_.Unreadable(before)) || !direct_(b->files, i, tally_)) {
        stopped_ = true;
        return false;
      }
    }
    return true;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::shared_ptr<Batch>(std::move(b)));
  }
  work_cv_.notify_one();
  return Pump(false);
}

bool ParallelScan::Finish() {
  bool go = Seal();
  if (threads_.empty()) return go;
  {
    std::lock_guard<std::mutex> lock(mu_);
    walk_done_ = true;
  }
  work_cv_.notify_all();
  if (go) go = Pump(true);
  Join();
  return go;
}

void ParallelScan::Abort() {
  if (!threads_.empty()) {
    std::unique_lock<std::mutex> lock(mu_);
    Stop(lock);
  }
  stopped_ = true;
  Join();
}

void ParallelScan::Join() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

bool ParallelScan::Stop(std::unique_lock<std::mutex>& lock) {
  (void)lock;
  stopped_ = true;
  stop_ = true;
  walk_done_ = true;
  work_cv_.notify_all();
  return false;
}

bool ParallelScan::MainCanProceed() const {
  if (stop_) return true;
  if (!queue_.empty() && (queue_.front()->done || !queue_.front()->published.empty())) return true;
  return !main_final_ && queue_.size() - claimed_ <= kResumeWalkAt && queue_.size() < kMaxBatches;
}

void ParallelScan::WakeMain() {
  if (main_waiting_ && MainCanProceed()) main_cv_.notify_one();
}

bool ParallelScan::Pump(bool final) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // Apply the oldest batch's record, as far as it goes.
    while (!queue_.empty()) {
      Batch& head = *queue_.front();
      if (!head.published.empty()) {
        ScanLog take;
        held_bytes_ -= head.published.bytes();
        take.Append(std::move(head.published));
        if (cap_waiters_ > 0) work_cv_.notify_all();
        lock.unlock();
        bool go = take.Replay(tally_);
        lock.lock();
        if (!go) return Stop(lock);
        continue;
      }
      if (!head.done) break;
      queue_.pop_front();
      --claimed_;
      if (cap_waiters_ > 0) work_cv_.notify_all();  // a new oldest batch
    }
    if (final ? queue_.empty()
              : queue_.size() - claimed_ < kQueuedBatches && queue_.size() < kMaxBatches) {
      return true;
    }
    lock.unlock();
    tally_.FlushIfDue();
    bool go = tally_.InTime() && !tally_.gone();
    lock.lock();
    if (!go) return Stop(lock);
    main_waiting_ = true;
    main_final_ = final;
    main_cv_.wait_for(lock, kPublishEvery, [&] { return MainCanProceed(); });
    main_waiting_ = false;
    if (stop_) return Stop(lock);
  }
}

void ParallelScan::Helper() {
  FileScan scan = make_(&stop_);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stop_) return;
    if (claimed_ < queue_.size()) {
      std::shared_ptr<Batch> b = queue_[claimed_++];
      WakeMain();
      lock.unlock();
      ScanBatch(*b, scan);
      lock.lock();
      b->done = true;
      WakeMain();
      continue;
    }
    if (walk_done_) return;
    work_cv_.wait(lock);
  }
}

void ParallelScan::ScanBatch(Batch& b, FileScan& scan) {
  Publisher p(*this, b);
  for (size_t i = 0; i < b.files.size(); ++i) {
    if (stop_.load(std::memory_order_relaxed)) break;
    uint64_t before = b.files.unreadable_before(i);
    if (before > 0 && !p.Unreadable(before)) break;
    if (!scan(b.files, i, p)) break;
  }
  p.Publish();
}

}  // namespace agentd
