#include "search/file_prefetch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

using namespace agentd;

namespace {

// Every event as a line of text, in order.
class Record : public ScanSink {
 public:
  bool Unreadable(uint64_t n) override {
    out += "unreadable " + std::to_string(n) + "\n";
    return true;
  }
  bool FileStart() override {
    out += "start\n";
    return true;
  }
  bool Match(std::string_view line) override {
    out.append(line);
    return true;
  }
  bool FileEnd(FileOutcome o) override {
    out += "end " + std::to_string(static_cast<int>(o)) + "\n";
    return true;
  }
  std::string out;
};

}  // namespace

TEST_CASE("files read through the io ring are scanned as with a system call each") {
  testing::TempDir d;
  std::vector<std::pair<std::string, bool>> listed;  // name, reached through a followed link
  // Small files with and without hits (more than two windows of them),
  // an empty one, binary ones, files too large for the window's buffer
  // (alone, and together), a FIFO, a directory and a symlink where the
  // listing said "file", a name gone since, and a followed link.
  for (int i = 0; i < 3 * static_cast<int>(kPrefetchFiles) + 5; ++i) {
    std::string text;
    for (int j = 0; j < i % 4; ++j) text += "x\nhit " + std::to_string(i) + "\n";
    char name[16];
    std::snprintf(name, sizeof(name), "f%03d", i);
    d.Write(name, text);
    listed.emplace_back(name, false);
    if (i == 3) {
      d.Write("empty", "");
      listed.emplace_back("empty", false);
      d.Write("bin", std::string("hit\0", 4));
      listed.emplace_back("bin", false);
      std::string big;
      while (big.size() < kPrefetchBytes + 1000) big += "hay\nhit big\n";
      d.Write("big", big);
      listed.emplace_back("big", false);
      for (int k = 0; k < 3; ++k) {
        d.Write("mid" + std::to_string(k), big.substr(0, kPrefetchBytes / 2));
        listed.emplace_back("mid" + std::to_string(k), false);
      }
      REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
      listed.emplace_back("fifo", false);
      d.Mkdir("dir");
      listed.emplace_back("dir", false);
      d.Symlink("f001", "link");
      listed.emplace_back("link", false);
      listed.emplace_back("gone", false);
      listed.emplace_back("link", true);
    }
  }
  auto root = ConfinedRoot::Open(d.path(), ConfinedRoot::Mode::kBeneath);
  REQUIRE(root.ok());
  PathPolicy policy("/");
  auto rel = policy.Check("/");
  REQUIRE(rel.ok());
  TreeWalk walk(*root, *rel, {});
  auto m = LineMatcher::Compile("hit", {});
  REQUIRE(m.ok());
  UniqueFd dir(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(dir);
  // Where the kernel offers no ring (io_uring disabled), both take the
  // plain path and the comparison holds trivially.
  const bool offered = IoRing::Create(8) != nullptr;
  auto scan_all = [&](bool use_ring, FileScanOptions o) {
    FileBatch batch(UniqueFd(::dup(dir.get())));
    for (auto& [name, followed] : listed) batch.Add(name, "/" + name, 1, followed, 0);
    FilePrefetch prefetch(walk, use_ring);
    CHECK(prefetch.ring() == (use_ring && offered));
    FileScanner scanner(*m, o);
    Record r;
    for (size_t i = 0; i < batch.size(); ++i) REQUIRE(prefetch.Scan(scanner, batch, i, r));
    if (prefetch.ring()) CHECK(prefetch.scanned_from_ring() > 2 * kPrefetchFiles);
    return r.out;
  };
  for (size_t context : {0, 2}) {
    FileScanOptions o{context, 1024};
    std::string plain = scan_all(false, o);
    CHECK(plain.find("\"path\":\"/big\"") != std::string::npos);
    CHECK(plain.find("\"path\":\"/link\"") != std::string::npos);  // the followed one
    CHECK(scan_all(true, o) == plain);
  }
}
