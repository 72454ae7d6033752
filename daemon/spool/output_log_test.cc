#include "spool/output_log.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sys/pipe.h"
#include "testing/temp_dir.h"

using namespace agentd;

namespace {

std::string Pattern(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 9)) & 0xff);
  return s;
}

// Writes `bytes` into a pipe and drains it into the log.
void Feed(OutputLog& log, const std::string& bytes) {
  Result<Pipe> p = MakePipe(true, false, 1 << 20);
  REQUIRE(p.ok());
  size_t done = 0;
  while (done < bytes.size()) {
    size_t chunk = std::min<size_t>(bytes.size() - done, 64 * 1024);
    REQUIRE(::write(p->write.get(), bytes.data() + done, chunk) == static_cast<ssize_t>(chunk));
    done += chunk;
    OutputLog::Fill f = log.FillFrom(p->read.get(), UINT64_MAX);
    REQUIRE(f.would_block);
  }
  p->write.reset();
  CHECK(log.FillFrom(p->read.get(), UINT64_MAX).eof);
}

uint64_t DiskBytes(int fd) {
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace

TEST_CASE("spool: bytes keep their absolute offsets and read back exactly", "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  std::string data = Pattern(300000, 1);
  Feed(*log, data);
  CHECK(log->next() == data.size());
  CHECK(log->retained_from() == 0);
  std::string out;
  REQUIRE(log->Read(1000, 5000, &out).ok());
  CHECK(out == data.substr(1000, 5000));
  REQUIRE(log->Read(299990, 5000, &out).ok());
  CHECK(out == data.substr(299990));
  REQUIRE(log->Append("tail").ok());
  REQUIRE(log->Read(300000, 10, &out).ok());
  CHECK(out == "tail");
}

TEST_CASE("spool: the per-stream cap releases the front and moves retained_from", "[spool]") {
  testing::TempDir dir;
  RetentionBudget budget(3 << 20, 1ull << 40);  // outlives the logs attached to it
  auto log = OutputLog::Create(dir.path() + "/stdout");
  log->set_budget(&budget);
  std::string data = Pattern(10 << 20, 2);
  Feed(*log, data);
  CHECK(log->next() == data.size());
  CHECK(log->retained_from() == data.size() - (3 << 20));
  CHECK(budget.retained_total() == 3u << 20);
  std::string out;
  REQUIRE(log->Read(log->retained_from(), 1 << 20, &out).ok());
  CHECK(out == data.substr(log->retained_from(), 1 << 20));
  CHECK_FALSE(log->Read(0, 10, &out).ok());
  // Released space went back to the file system (holes), in whole units.
  CHECK(DiskBytes(log->fd()) <= (4u << 20) + 65536);
}

TEST_CASE("spool: the total cap takes from the log retaining the most", "[spool]") {
  testing::TempDir dir;
  RetentionBudget budget(1ull << 40, 4 << 20);
  auto small = OutputLog::Create(dir.path() + "/small");
  auto big = OutputLog::Create(dir.path() + "/big");
  small->set_budget(&budget);
  big->set_budget(&budget);
  Feed(*small, Pattern(1 << 20, 3));
  Feed(*big, Pattern(6 << 20, 4));
  CHECK(budget.retained_total() == 4u << 20);
  CHECK(small->retained_from() == 0);
  CHECK(big->retained() == 3u << 20);
  big.reset();  // a released exec gives its share back
  CHECK(budget.retained_total() == 1u << 20);
}

TEST_CASE("spool: a reader's pin keeps the disk bytes it is about to send", "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  std::string data = Pattern(8 << 20, 5);
  Feed(*log, data);
  {
    OutputLog::Pin pin(*log, 1 << 20);
    log->ReleaseTo(6 << 20);
    CHECK(log->retained_from() == 6u << 20);
    // Logically released, physically still there for the pinned reader.
    std::string out(4096, '\0');
    REQUIRE(pread(log->fd(), out.data(), out.size(), 1 << 20) == 4096);
    CHECK(out == data.substr(1 << 20, 4096));
    pin.Move(5 << 20);
    REQUIRE(pread(log->fd(), out.data(), out.size(), 5 << 20) == 4096);
    CHECK(out == data.substr(5 << 20, 4096));
  }
  CHECK(lseek(log->fd(), 0, SEEK_DATA) >= (6 << 20));
}

TEST_CASE("spool: reopening recovers the size and the first retained byte", "[spool]") {
  testing::TempDir dir;
  std::string path = dir.path() + "/stdout";
  std::string data = Pattern(5 << 20, 6);
  {
    auto log = OutputLog::Create(path);
    Feed(*log, data);
    log->ReleaseTo((2 << 20) + 100);
  }
  // The recorded value wins when it is ahead of the holes...
  auto again = OutputLog::Open(path, (2 << 20) + 100);
  REQUIRE(again.ok());
  CHECK((*again)->next() == data.size());
  CHECK((*again)->retained_from() == (2u << 20) + 100);
  // ...and the holes win when the record is stale.
  auto stale = OutputLog::Open(path, 0);
  REQUIRE(stale.ok());
  CHECK((*stale)->retained_from() == 2u << 20);
  std::string out;
  REQUIRE((*stale)->Read(2 << 20, 1 << 20, &out).ok());
  CHECK(out == data.substr(2 << 20, 1 << 20));
}

TEST_CASE("spool: a stream that prints nothing makes no file", "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  Result<Pipe> p = MakePipe(true, false, 1 << 16);
  REQUIRE(p.ok());
  CHECK(log->FillFrom(p->read.get(), UINT64_MAX).would_block);
  p->write.reset();
  CHECK(log->FillFrom(p->read.get(), UINT64_MAX).eof);
  CHECK(log->fd() == -1);
  CHECK_FALSE(dir.Exists("stdout"));
  std::string out = "x";
  REQUIRE(log->Read(0, 100, &out).ok());
  CHECK(out.empty());
}

TEST_CASE("spool: the first bytes make the file and the rest follow them in order", "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  std::string data = Pattern(200000, 7);
  Feed(*log, data);  // 64 KiB per fill: the first read, then splices
  CHECK(dir.Exists("stdout"));
  std::string out;
  REQUIRE(log->Read(0, data.size(), &out).ok());
  CHECK(out == data);
}

TEST_CASE("spool: a file that cannot be made turns the bytes into a gap", "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/missing/stdout");
  Feed(*log, Pattern(100000, 8));
  CHECK(log->next() == 100000);
  CHECK(log->retained_from() == 100000);  // the loss is explicit
  CHECK(log->fd() == -1);
}

TEST_CASE("spool: a full disk costs the oldest output and keeps the newest bytes", "[spool]") {
  testing::TempDir dir;
  // A 3 MiB tmpfs is the full disk; mounting one needs root.
  if (::mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=3m") != 0) {
    WARN("cannot mount a tmpfs (not root?): skipped");
    return;
  }
  std::string data = Pattern(8 << 20, 9);
  {
    auto log = OutputLog::Create(dir.path() + "/stdout");
    Feed(*log, data);
    Feed(*log, "tail-marker\n");
    CHECK(log->next() == data.size() + 12);
    CHECK(log->retained_from() > 0);
    CHECK(log->retained_from() % OutputLog::kPunchUnit == 0);  // whole units were given up
    std::string out;
    uint64_t keep = log->next() - log->retained_from();
    REQUIRE(keep > OutputLog::kPunchUnit);
    REQUIRE(log->Read(log->retained_from(), keep, &out).ok());
    CHECK(out == (data + "tail-marker\n").substr(log->retained_from()));
  }
  ::umount2(dir.path().c_str(), MNT_DETACH);
}

namespace {

// Everything the tap's pipe holds now (its read end is non-blocking).
std::string DrainTap(OutputLog::Tap& tap) {
  std::string out;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(tap.fd(), buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  tap.Took(out.size());
  return out;
}

// Writes `bytes` into `pipe` and moves them into the log, in 64 KiB steps.
void FeedPipe(OutputLog& log, Pipe& pipe, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    size_t chunk = std::min<size_t>(bytes.size() - done, 64 * 1024);
    REQUIRE(::write(pipe.write.get(), bytes.data() + done, chunk) == static_cast<ssize_t>(chunk));
    done += chunk;
    REQUIRE(log.FillFrom(pipe.read.get(), UINT64_MAX).would_block);
  }
}

}  // namespace

TEST_CASE("spool: a tap at the log's end holds exactly the bytes the pump moves", "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  Result<Pipe> p = MakePipe(true, false, 1 << 20);
  REQUIRE(p.ok());
  std::string data = Pattern(600000, 3);
  OutputLog::Tap tap(*log, 0);
  OutputLog::Tap behind(*log, 0);
  tap.Restart(0);  // both readers caught up
  behind.Restart(0);
  FeedPipe(*log, *p, data.substr(0, 200000));
  CHECK(tap.start() == 0);
  CHECK(tap.end() == 200000);
  CHECK(DrainTap(tap) == data.substr(0, 200000));
  CHECK(DrainTap(behind) == data.substr(0, 200000));
  // A reader that does not take for a while: its tap grows while it has room.
  FeedPipe(*log, *p, data.substr(200000, 100000));
  CHECK(DrainTap(tap) == data.substr(200000, 100000));
  FeedPipe(*log, *p, data.substr(300000, 300000));
  CHECK(tap.end() == 600000);
  CHECK(DrainTap(tap) == data.substr(300000));
  CHECK(behind.start() == 200000);
  CHECK(DrainTap(behind) == data.substr(200000));
  // The file has every byte as before.
  std::string out;
  REQUIRE(log->Read(0, data.size(), &out).ok());
  CHECK(out == data);
}

TEST_CASE("spool: a tap behind the log's end gets nothing until it restarts there", "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  Result<Pipe> p = MakePipe(true, false, 1 << 20);
  REQUIRE(p.ok());
  std::string data = Pattern(300000, 4);
  FeedPipe(*log, *p, data.substr(0, 100000));
  OutputLog::Tap tap(*log, 50000);  // a reader still reading the file
  FeedPipe(*log, *p, data.substr(100000, 100000));
  CHECK(tap.empty());
  CHECK(tap.end() == 50000);
  tap.Restart(log->next());  // caught up from the file
  FeedPipe(*log, *p, data.substr(200000));
  CHECK(tap.start() == 200000);
  CHECK(DrainTap(tap) == data.substr(200000));
}

TEST_CASE("spool: a full tap stops growing; the file keeps every byte", "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  Result<Pipe> p = MakePipe(true, false, 1 << 20);
  REQUIRE(p.ok());
  OutputLog::Tap tap(*log, 0);
  tap.Restart(0);
  int capacity = ::fcntl(tap.fd(), F_GETPIPE_SZ);
  REQUIRE(capacity > 0);
  std::string data = Pattern(static_cast<size_t>(capacity) + (3 << 20), 5);
  FeedPipe(*log, *p, data);
  CHECK(log->next() == data.size());
  CHECK(tap.end() < log->next());
  uint64_t held = tap.end();
  CHECK(held <= static_cast<uint64_t>(capacity));
  CHECK(DrainTap(tap) == data.substr(0, held));
  // Emptied but behind: nothing more until the reader caught up.
  FeedPipe(*log, *p, Pattern(1000, 6));
  CHECK(tap.empty());
  std::string out;
  REQUIRE(log->Read(0, data.size(), &out).ok());
  CHECK(out == data);
}

TEST_CASE(
    "spool: a tap gets a pipe only once its reader caught up, and the daemon holds at most "
    "kMaxTapPipes",
    "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  Result<Pipe> p = MakePipe(true, false, 1 << 20);
  REQUIRE(p.ok());
  std::string data = Pattern(100000, 7);
  FeedPipe(*log, *p, data.substr(0, 50000));
  // Readers of the file (a finished exec's followers among them) hold no pipe.
  std::vector<std::unique_ptr<OutputLog::Tap>> taps;
  for (int i = 0; i <= OutputLog::Tap::kMaxTapPipes; ++i)
    taps.push_back(std::make_unique<OutputLog::Tap>(*log, 0));
  for (auto& tap : taps) CHECK_FALSE(tap->has_pipe());
  for (auto& tap : taps) tap->Restart(log->next());
  for (int i = 0; i < OutputLog::Tap::kMaxTapPipes; ++i) CHECK(taps[i]->has_pipe());
  OutputLog::Tap& over = *taps.back();
  CHECK_FALSE(over.has_pipe());
  FeedPipe(*log, *p, data.substr(50000, 25000));
  CHECK(over.empty());  // it reads the file, which has every byte
  CHECK(DrainTap(*taps[0]) == data.substr(50000, 25000));
  // One reader leaves: the next to catch up gets its pipe.
  taps.erase(taps.begin());
  over.Restart(log->next());
  CHECK(over.has_pipe());
  FeedPipe(*log, *p, data.substr(75000));
  CHECK(DrainTap(over) == data.substr(75000));
}

TEST_CASE(
    "spool: until_short stops after a short read with every byte the pipe held, and a full "
    "tap's short tee leaves the rest for the next turn",
    "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  Result<Pipe> p = MakePipe(true, false, 1 << 20);
  REQUIRE(p.ok());
  std::string data = Pattern(200000, 8);
  // No tap: the splice that took fewer bytes than asked ends the turn.
  REQUIRE(::write(p->write.get(), data.data(), 3) == 3);
  OutputLog::Fill f = log->FillFrom(p->read.get(), UINT64_MAX, true);
  CHECK(f.bytes == 3);
  CHECK(f.emptied);
  CHECK_FALSE(f.would_block);
  // With a tap: the tee that took fewer bytes than asked ends it.
  OutputLog::Tap tap(*log, 3);
  tap.Restart(3);
  REQUIRE(::write(p->write.get(), data.data() + 3, 60000) == 60000);
  f = log->FillFrom(p->read.get(), UINT64_MAX, true);
  CHECK(f.bytes == 60000);
  CHECK(f.emptied);
  CHECK(tap.end() == log->next());
  CHECK(DrainTap(tap) == data.substr(3, 60000));
  // A tap with room for less than the pipe holds: its short tee ends the
  // turn with bytes left in the pipe; the next turn moves them, untapped.
  REQUIRE(::fcntl(tap.fd(), F_SETPIPE_SZ, 4096) > 0);
  tap.Restart(log->next());
  REQUIRE(::write(p->write.get(), data.data() + 60003, 100000) == 100000);
  uint64_t moved = 0;
  for (int turn = 0; turn < 100 && moved < 100000; ++turn) {
    f = log->FillFrom(p->read.get(), UINT64_MAX, true);
    moved += f.bytes;
  }
  CHECK(moved == 100000);
  CHECK(tap.end() < log->next());
  std::string out;
  REQUIRE(log->Read(0, log->next(), &out).ok());
  CHECK(out == data.substr(0, 160003));
}

TEST_CASE("spool: a reader batches a fast producer's bytes for at most kMaxHold", "[spool]") {
  using Tap = OutputLog::Tap;
  const uint64_t batch = Tap::kBatchBytes;
  const Tap::Clock::time_point t0{std::chrono::seconds(100)};
  const auto later = t0 + Tap::kMaxHold / 2;
  // A small turn (a prompt) is sent at once.
  CHECK_FALSE(Tap::HoldUntil(3, batch, true, std::nullopt, t0));
  CHECK_FALSE(Tap::HoldUntil(Tap::kFastBytes - 1, batch, true, std::nullopt, t0));
  // A big turn below a batch is held, until kMaxHold after the hold began.
  auto held = Tap::HoldUntil(Tap::kFastBytes, batch, true, std::nullopt, t0);
  REQUIRE(held);
  CHECK(*held == t0 + Tap::kMaxHold);
  // More turns keep the deadline; the hold does not start again.
  auto again = Tap::HoldUntil(Tap::kFastBytes + 4096, batch, true, held, later);
  REQUIRE(again);
  CHECK(*again == *held);
  // A batch is sent; so is a hold whose deadline passed, small or not.
  CHECK_FALSE(Tap::HoldUntil(batch, batch, true, held, later));
  CHECK_FALSE(Tap::HoldUntil(Tap::kFastBytes, batch, true, held, *held));
  CHECK_FALSE(Tap::HoldUntil(Tap::kFastBytes, batch, true, held, *held + Tap::kMaxHold));
  // The exec ended or the tap stopped growing: nothing more can join it.
  CHECK_FALSE(Tap::HoldUntil(Tap::kFastBytes, batch, false, std::nullopt, t0));
  CHECK_FALSE(Tap::HoldUntil(Tap::kFastBytes, batch, false, held, later));
  // A tap whose pipe is small has a small batch: never held past a fill.
  CHECK_FALSE(Tap::HoldUntil(Tap::kFastBytes, 16 * 1024, true, std::nullopt, t0));
}

TEST_CASE("spool: a tap's batch is a quarter of its pipe, at most kBatchBytes", "[spool]") {
  testing::TempDir dir;
  auto log = OutputLog::Create(dir.path() + "/stdout");
  OutputLog::Tap tap(*log, 0);
  CHECK(tap.batch() == 0);  // no pipe yet
  tap.Restart(0);
  REQUIRE(tap.has_pipe());
  int size = ::fcntl(tap.fd(), F_GETPIPE_SZ);
  CHECK(tap.batch() == std::min<uint64_t>(OutputLog::Tap::kBatchBytes, size / 4));
  CHECK(tap.batch() > OutputLog::Tap::kFastBytes);
}
