// The client's file calls against a real daemon.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "agentd/client/client.h"
#include "daemon_process.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::DaemonProcess;

TEST_CASE("files: write with a mode, read back whole, by lines and by bytes", "[client][files]") {
  DaemonProcess d;
  Client c(d.client_options());
  std::string path = d.dir() + "/sub/script.sh";
  WriteOptions w;
  w.mode = 0750;
  w.parents = true;
  auto st = c.WriteFile(path, "one\ntwo\nthree\nfour", w);
  REQUIRE(st.ok());
  CHECK(st->mode == 0750);
  CHECK(st->size == 18);
  CHECK(c.ReadFile(path).value() == "one\ntwo\nthree\nfour");
  ReadOptions lines;
  lines.start_line = 2;
  lines.end_line = 3;
  CHECK(c.ReadFile(path, lines).value() == "two\nthree\n");
  lines.start_line = 4;
  lines.end_line = 99;
  CHECK(c.ReadFile(path, lines).value() == "four");
  ReadOptions bytes;
  bytes.first_byte = 4;
  bytes.last_byte = 6;
  CHECK(c.ReadFile(path, bytes).value() == "two");
  ReadOptions bad;
  bad.start_line = 0;
  auto r = c.ReadFile(path, bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kInvalidRange);
}

TEST_CASE("files: streaming a write from a source and a read into a sink", "[client][files]") {
  DaemonProcess d;
  Client c(d.client_options());
  std::string block(1 << 20, 'x');
  int blocks = 0;
  ByteSource source = [&]() -> Result<std::string_view> {
    if (blocks == 8) return std::string_view();
    ++blocks;
    return std::string_view(block);
  };
  auto st = c.WriteFileFrom(d.dir() + "/big", source);
  REQUIRE(st.ok());
  CHECK(st->size == 8u << 20);
  uint64_t seen = 0;
  auto n = c.ReadFileTo(d.dir() + "/big", {}, [&](std::string_view b) {
    seen += b.size();
    return Status::Ok();
  });
  REQUIRE(n.ok());
  CHECK(*n == 8u << 20);
  CHECK(seen == *n);
  ReadOptions small;
  small.max_bytes = 1024;
  auto too_big = c.ReadFile(d.dir() + "/big", small);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().code() == ErrorCode::kPayloadTooLarge);
}

TEST_CASE("files: a write from an open file sends it whole, or leaves the old file",
          "[client][files]") {
  DaemonProcess d;
  Client c(d.client_options());
  // 3 MiB of distinct bytes (sent by sendfile with Content-Length).
  std::string local = d.dir() + "/local.bin";
  std::string data;
  for (int i = 0; data.size() < (3u << 20); ++i) data += std::to_string(i) + ",";
  {
    std::FILE* f = std::fopen(local.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(data.data(), 1, data.size(), f) == data.size());
    std::fclose(f);
  }
  int fd = ::open(local.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  std::string remote = d.dir() + "/remote.bin";
  auto st = c.WriteFileFromFd(remote, fd, data.size());
  REQUIRE(st.ok());
  CHECK(st->size == data.size());
  auto back = c.ReadFileWithEtag(remote);
  REQUIRE(back.ok());
  CHECK(back->data == data);
  REQUIRE(st->etag.has_value());
  CHECK(st->etag == back->etag);  // the daemon's hash of the written file
  // Declared longer than the file: the body is cut short, the connection
  // closed; the old content stays and the error names the local file.
  auto cut = c.WriteFileFromFd(remote, fd, data.size() + 4096);
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.status().code() == ErrorCode::kIoError);
  CHECK(c.ReadFile(remote).value() == data);
  ::close(fd);
}

TEST_CASE("files: a write with etag false answers no tag, a later stat has it, guards still hold",
          "[client][files]") {
  DaemonProcess d;
  Client c(d.client_options());
  std::string data;
  for (int i = 0; data.size() < (1u << 20); ++i) data += std::to_string(i) + ";";
  std::string local = d.dir() + "/local.bin";
  {
    std::FILE* f = std::fopen(local.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(data.data(), 1, data.size(), f) == data.size());
    std::fclose(f);
  }
  WriteOptions untagged;
  untagged.etag = false;
  std::string path = d.dir() + "/untagged.bin";
  auto st = c.WriteFile(path, data, untagged);
  REQUIRE(st.ok());
  CHECK(st->size == data.size());
  CHECK_FALSE(st->etag.has_value());
  auto back = c.ReadFileWithEtag(path);
  REQUIRE(back.ok());
  CHECK(back->data == data);
  REQUIRE(back->etag.has_value());
  CHECK(c.Stat(path)->etag == back->etag);
  // The same bytes written with the tag asked for: the same tag.
  auto tagged = c.WriteFile(d.dir() + "/tagged.bin", data);
  REQUIRE(tagged.ok());
  CHECK(tagged->etag == back->etag);

  int fd = ::open(local.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto from_fd = c.WriteFileFromFd(d.dir() + "/from-fd.bin", fd, data.size(), untagged);
  ::close(fd);
  REQUIRE(from_fd.ok());
  CHECK_FALSE(from_fd->etag.has_value());
  CHECK(c.Stat(d.dir() + "/from-fd.bin")->etag == back->etag);

  WriteOptions stale = untagged;
  stale.guard.if_match = "\"sha256:" + std::string(64, '0') + "\"";
  auto refused = c.WriteFile(path, "lost", stale);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::kPreconditionFailed);
  CHECK(c.ReadFile(path).value() == data);
  WriteOptions current = untagged;
  current.guard.if_match = back->etag;
  auto replaced = c.WriteFile(path, "new", current);
  REQUIRE(replaced.ok());
  CHECK_FALSE(replaced->etag.has_value());
  CHECK(c.ReadFile(path).value() == "new");
}

TEST_CASE("files: a daemon that closes during a write from an open file is an error, not SIGPIPE",
          "[client][files]") {
  // sendfile(2) has no MSG_NOSIGNAL. On a unix socket whose reader closed
  // it raises SIGPIPE, whose default action ends this test process.
  char dir_template[] = "/tmp/agentd-sigpipe-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  std::string dir = dir_template;
  std::string local = dir + "/local.bin";
  std::string data(4u << 20, 'x');  // beyond Expect's threshold and the socket's buffer
  {
    std::FILE* f = std::fopen(local.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(data.data(), 1, data.size(), f) == data.size());
    std::fclose(f);
  }
  // A fake daemon: it closes a GET at once (the client's protocol probe),
  // and answers a PUT's head with 100 Continue, then closes unread.
  std::string path = dir + "/fake.sock";
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::listen(listener, 8) == 0);
  std::atomic<bool> stop{false};
  std::thread fake([listener, &stop] {
    for (;;) {
      int c = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      if (stop) {  // the test's last connection, made to end this loop
        ::close(c);
        return;
      }
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(c, buf, sizeof(buf));
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      if (head.starts_with("PUT")) {
        static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        (void)!::write(c, kContinue, sizeof(kContinue) - 1);
      }
      ::close(c);
    }
  });
  ClientOptions o;
  o.url = "unix:" + path;
  o.max_attempts = 1;
  Client c(o);
  int fd = ::open(local.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto cut = c.WriteFileFromFd("/remote.bin", fd, data.size());
  ::close(fd);
  stop = true;
  int last = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(::connect(last, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  fake.join();
  ::close(last);
  ::close(listener);
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.status().code() == ErrorCode::kTransport);
  std::filesystem::remove_all(dir);
}

TEST_CASE("files: metadata calls and their errors", "[client][files]") {
  DaemonProcess d;
  Client c(d.client_options());
  std::string dir = d.dir() + "/meta";
  MkdirRequest mk;
  mk.path = dir + "/a/b";
  mk.parents = true;
  mk.mode = 0700;
  auto made = c.MakeDir(mk);
  REQUIRE(made.ok());
  CHECK(made->type == FileStat::Type::kDir);
  CHECK(made->mode == 0700);
  REQUIRE(c.WriteFile(dir + "/a/file", "data").ok());
  auto listed = c.ListDir(dir + "/a");
  REQUIRE(listed.ok());
  CHECK(listed->entries.size() == 2);
  RenameRequest mv;
  mv.from = dir + "/a/file";
  mv.to = dir + "/a/renamed";
  REQUIRE(c.Rename(mv).ok());
  auto missing = c.Stat(dir + "/a/file");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kNotFound);
  CHECK(missing.status().details().Find("path"));
  auto real = c.Realpath(dir + "/a/b/../renamed");
  REQUIRE(real.ok());
  CHECK(real->ends_with("/meta/a/renamed"));
  auto not_empty = c.Remove(dir + "/a");
  REQUIRE_FALSE(not_empty.ok());
  CHECK(not_empty.status().code() == ErrorCode::kDirectoryNotEmpty);
  auto removed = c.Remove(dir, /*recursive=*/true);
  REQUIRE(removed.ok());
  CHECK(removed->removed == 4);
}

TEST_CASE("files: a read's etag guards a write, a delete and an edit", "[client][files]") {
  DaemonProcess d;
  Client c(d.client_options());
  std::string path = d.dir() + "/guarded.txt";
  REQUIRE(c.WriteFile(path, "a\nx\nb\nx\n").ok());
  auto read = c.ReadFileWithEtag(path);
  REQUIRE(read.ok());
  CHECK(read->data == "a\nx\nb\nx\n");
  REQUIRE(read->etag.has_value());
  CHECK(c.Stat(path)->etag == read->etag);

  EditRequest ambiguous;
  ambiguous.path = path;
  ambiguous.edits = {{"x", "y", 1}};
  auto mismatch = c.Edit(ambiguous);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.status().code() == ErrorCode::kEditMismatch);
  CHECK(c.ReadFile(path).value() == "a\nx\nb\nx\n");

  EditRequest both = ambiguous;
  both.edits[0].count = 2;
  both.if_match = read->etag;
  auto edited = c.Edit(both);
  REQUIRE(edited.ok());
  CHECK(c.ReadFile(path).value() == "a\ny\nb\ny\n");
  CHECK(edited->etag == c.Stat(path)->etag);
  CHECK(edited->diff.find("-x\n+y\n") != std::string::npos);

  WriteOptions stale;
  stale.guard.if_match = read->etag;
  auto refused = c.WriteFile(path, "lost", stale);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::kPreconditionFailed);
  auto kept = c.Remove(path, false, read->etag);
  REQUIRE_FALSE(kept.ok());
  CHECK(kept.status().code() == ErrorCode::kPreconditionFailed);
  CHECK(c.ReadFile(path).value() == "a\ny\nb\ny\n");

  RenameRequest mv;
  mv.from = path;
  mv.to = d.dir() + "/moved.txt";
  REQUIRE(c.Rename(mv, Preconditions{edited->etag, true}).ok());
  CHECK(c.Remove(mv.to, false, edited->etag).ok());
}
