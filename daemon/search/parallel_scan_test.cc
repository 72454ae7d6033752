#include "search/parallel_scan.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "testing/temp_dir.h"

using namespace agentd;

namespace {

// A tally of at most `max_results` matches and 1 MiB, an hour to run,
// whose answer's blocks go into `out`.
SearchTally TallyInto(std::string& out, uint64_t max_results) {
  auto now = SearchTally::Clock::now();
  return SearchTally(max_results, 1 << 20, now, now + std::chrono::hours(1),
                     [&out](std::string block) {
                       out += block;
                       return true;
                     });
}

}  // namespace

TEST_CASE("batches are scanned on two threads at once and applied in walk order") {
  testing::TempDir d;
  d.Mkdir("a");
  d.Mkdir("b");
  UniqueFd a(::open((d / "a").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd b(::open((d / "b").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(a);
  REQUIRE(b);
  std::mutex mu;
  std::condition_variable cv;
  bool second_started = false;
  bool waited_out = false;
  // The first batch's file finishes only once the second batch's file has
  // begun on another thread: one thread scanning batch after batch never
  // gets there (the bound below only ends a failing run).
  auto make = [&](const std::atomic<bool>*) -> ParallelScan::FileScan {
    return [&](const FileBatch& batch, size_t i, ScanSink& sink) {
      std::string name = batch.name(i);
      if (name == "second") {
        std::lock_guard<std::mutex> lock(mu);
        second_started = true;
        cv.notify_all();
      } else {
        std::unique_lock<std::mutex> lock(mu);
        waited_out = !cv.wait_for(lock, std::chrono::seconds(60), [&] { return second_started; });
      }
      return sink.FileStart() && sink.Match(name + "\n") && sink.FileEnd(FileOutcome::kDone);
    };
  };
  std::string out;
  SearchTally tally = TallyInto(out, 100);
  {
    ParallelScan scan(2, make, tally);
    REQUIRE(scan.helpers() == 2);
    CHECK(scan.Add(a.get(), "first", "/a/first", 3, false, 0));
    CHECK(scan.Add(b.get(), "second", "/b/second", 3, false, 2));  // another directory
    CHECK(scan.Finish());
  }
  CHECK_FALSE(waited_out);
  tally.Finish();
  CHECK(out.substr(0, out.find('{')) == "first\nsecond\n");
  CHECK(tally.summary().files_scanned == 2);
  CHECK(tally.summary().unreadable == 2);
}

TEST_CASE("a bound hit in an early batch ends the search at that match") {
  testing::TempDir d;
  std::vector<UniqueFd> dirs;
  auto make = [&](const std::atomic<bool>*) -> ParallelScan::FileScan {
    return [](const FileBatch& batch, size_t i, ScanSink& sink) {
      if (!sink.FileStart()) return false;
      for (int k = 0; k < 3; ++k) {
        if (!sink.Match(std::string(batch.name(i)) + std::to_string(k) + "\n")) return false;
      }
      return sink.FileEnd(FileOutcome::kDone);
    };
  };
  std::string out;
  SearchTally tally = TallyInto(out, 10);
  ParallelScan scan(2, make, tally);
  bool go = true;
  for (int k = 0; k < 40 && go; ++k) {
    std::string name = "d" + std::to_string(k);
    d.Mkdir(name);
    dirs.emplace_back(::open((d / name).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    go = scan.Add(dirs.back().get(), name.c_str(), "/" + name, 1, false, 0);
  }
  if (go) CHECK_FALSE(scan.Finish());
  tally.Finish();
  CHECK(out.substr(0, out.find('{')) == "d00\nd01\nd02\nd10\nd11\nd12\nd20\nd21\nd22\nd30\n");
  CHECK(tally.summary().bound == std::optional<std::string>("results"));
  CHECK(tally.summary().files_scanned == 4);
  CHECK(tally.summary().matches == 10);
}
