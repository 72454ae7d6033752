// ReadFileToFd against a real daemon: the bytes land in the descriptor
// whole, by splice(2) where it can write the descriptor and by the copy
// path where it cannot, and the connection serves the next call.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "agentd/client/client.h"
#include "cutting_proxy.h"
#include "daemon_process.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::CuttingProxy;
using agentd::testing::DaemonProcess;

namespace {

// `size` bytes that differ along the file (a shifted or repeated block
// would not compare equal).
std::string Pattern(size_t size) {
  std::string data;
  for (uint64_t i = 0; data.size() < size; ++i) data += std::to_string(i * 7919) + ",";
  data.resize(size);
  return data;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The bytes this process handed to write(2) and its kin so far
// (/proc/self/io "wchar"); splice(2) does not count there.
uint64_t BytesWritten() {
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "wchar:") return value;
  }
  return 0;
}

ClientOptions Through(const CuttingProxy& proxy, const DaemonProcess& d) {
  ClientOptions o = d.client_options();
  o.url = "http://127.0.0.1:" + std::to_string(proxy.port());
  return o;
}

}  // namespace

TEST_CASE("files: a download into a file is byte-identical at any size; the body skips write(2)",
          "[client][files]") {
  DaemonProcess d;
  Client c(d.client_options());
  // Empty, one byte, one that arrives with the answer's head, one that
  // ends within the first read's 256 KiB, and several MiB.
  for (size_t size :
       {size_t{0}, size_t{1}, size_t{1000}, size_t{200'000}, size_t{(5u << 20) + 7}}) {
    DYNAMIC_SECTION("size " << size) {
      std::string data = Pattern(size);
      std::string remote = d.dir() + "/remote-" + std::to_string(size);
      REQUIRE(c.WriteFile(remote, data).ok());
      std::string local = d.dir() + "/local-" + std::to_string(size);
      int fd = ::open(local.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      REQUIRE(fd >= 0);
      uint64_t heard = 0;
      uint64_t written_before = BytesWritten();
      Result<uint64_t> n = c.ReadFileToFd(remote, {}, fd, [&](uint64_t b) { heard += b; });
      uint64_t written = BytesWritten() - written_before;
      ::close(fd);
      REQUIRE(n.ok());
      CHECK(*n == size);
      CHECK(heard == size);
      CHECK(Slurp(local) == data);
      if (size > (1u << 20)) {
        // Only what came buffered with the head went through write(2)
        // (at most one 256 KiB read); the rest moved by splice.
        CHECK(written <= 256u * 1024);
      }
    }
  }
}

TEST_CASE("files: a download into a descriptor splice cannot write gives the same bytes",
          "[client][files]") {
  DaemonProcess d;
  Client c(d.client_options());
  std::string data = Pattern((3u << 20) + 11);
  std::string remote = d.dir() + "/remote.bin";
  REQUIRE(c.WriteFile(remote, data).ok());

  SECTION("a file opened O_APPEND (splice refuses it: the copy path from the first byte)") {
    std::string local = d.dir() + "/appended.bin";
    int fd = ::open(local.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "prefix:", 7) == 7);
    uint64_t written_before = BytesWritten();
    Result<uint64_t> n = c.ReadFileToFd(remote, {}, fd);
    uint64_t written = BytesWritten() - written_before;
    ::close(fd);
    REQUIRE(n.ok());
    CHECK(*n == data.size());
    CHECK(Slurp(local) == "prefix:" + data);
    CHECK(written >= data.size());  // every byte went through write(2)
  }

  SECTION("a pipe whose reader takes the bytes as they come") {
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    std::string got;
    std::thread reader([&] {
      char buf[65536];
      for (;;) {
        ssize_t r = ::read(p[0], buf, sizeof(buf));
        if (r <= 0) break;
        got.append(buf, static_cast<size_t>(r));
      }
    });
    Result<uint64_t> n = c.ReadFileToFd(remote, {}, p[1]);
    ::close(p[1]);
    reader.join();
    ::close(p[0]);
    REQUIRE(n.ok());
    CHECK(*n == data.size());
    CHECK(got == data);
  }

  SECTION("a chunked answer (a procfs file, size unknown) goes through the parser") {
    std::string expected = c.ReadFile("/proc/version").value();
    REQUIRE_FALSE(expected.empty());
    std::string local = d.dir() + "/version";
    int fd = ::open(local.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    Result<uint64_t> n = c.ReadFileToFd("/proc/version", {}, fd);
    ::close(fd);
    REQUIRE(n.ok());
    CHECK(*n == expected.size());
    CHECK(Slurp(local) == expected);
  }
}

TEST_CASE("files: after a download into a descriptor the same connection serves the next calls",
          "[client][files]") {
  DaemonProcess d;
  CuttingProxy proxy(d.port(), [](int) { return UINT64_MAX; });
  Client c(Through(proxy, d));
  std::string data = Pattern((2u << 20) + 3);
  std::string remote = d.dir() + "/remote.bin";
  REQUIRE(c.WriteFile(remote, data).ok());
  std::string spliced = d.dir() + "/spliced.bin";
  std::string copied = d.dir() + "/copied.bin";
  int fd = ::open(spliced.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(c.ReadFileToFd(remote, {}, fd).value() == data.size());
  ::close(fd);
  // The next answer is read whole from where the body ended.
  auto st = c.Stat(remote);
  REQUIRE(st.ok());
  CHECK(st->size == data.size());
  fd = ::open(copied.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(c.ReadFileToFd(remote, {}, fd).value() == data.size());
  ::close(fd);
  CHECK(c.ReadFile(remote).value() == data);
  CHECK(Slurp(spliced) == data);
  CHECK(Slurp(copied) == data);
  CHECK(proxy.connections() == 1);
}

TEST_CASE("files: a download into a descriptor cut mid-body is a transport error",
          "[client][files]") {
  DaemonProcess d;
  std::string data = Pattern(4u << 20);
  {
    Client direct(d.client_options());
    REQUIRE(direct.WriteFile(d.dir() + "/remote.bin", data).ok());
  }
  // Every connection is cut 1 MiB into the answer: the body has started,
  // so the read is not retried.
  CuttingProxy proxy(d.port(), [](int) { return uint64_t{1} << 20; });
  Client c(Through(proxy, d));
  std::string local = d.dir() + "/cut.bin";
  int fd = ::open(local.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  Result<uint64_t> n = c.ReadFileToFd(d.dir() + "/remote.bin", {}, fd);
  ::close(fd);
  REQUIRE_FALSE(n.ok());
  CHECK(n.status().code() == ErrorCode::kTransport);
  std::string partial = Slurp(local);
  CHECK(partial.size() < data.size());
  CHECK(partial == data.substr(0, partial.size()));
}
