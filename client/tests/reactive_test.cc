// The client's watch, tunnel, port list and resize calls against a real daemon.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agentd/client/client.h"
#include "daemon_process.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::DaemonProcess;
namespace fs = std::filesystem;

namespace {

// A one-connection echo server on the loopback: echoes until the peer's
// half-close, then says "bye" and closes.
class EchoOnce {
 public:
  EchoOnce() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 4);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      ssize_t n;
      while ((n = ::read(c, buf, sizeof(buf))) > 0) (void)!::write(c, buf, static_cast<size_t>(n));
      (void)!::write(c, "bye", 3);
      ::close(c);
    });
  }
  ~EchoOnce() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  int fd_;
  uint16_t port_;
  std::thread thread_;
};

std::string ReadToEnd(Tunnel& t) {
  std::string out;
  char buf[4096];
  for (;;) {
    Result<size_t> n = t.ReadSome(asio::buffer(buf));
    if (!n.ok() || *n == 0) return out;
    out.append(buf, *n);
  }
}

}  // namespace

TEST_CASE("watch: changes made after the watch is ready arrive in order", "[client][watch]") {
  DaemonProcess d;
  Client c(d.client_options());
  fs::path dir = fs::path(d.dir()) / "watched";
  fs::create_directories(dir);
  std::vector<FsWatchEvent> seen;
  WatchCallbacks cb;
  cb.on_ready = [&] {
    std::ofstream(dir / "a.txt") << "x";
    fs::rename(dir / "a.txt", dir / "b.txt");
    fs::remove(dir / "b.txt");
  };
  cb.on_event = [&](const FsWatchEvent& e) {
    seen.push_back(e);
    return e.kind != "removed";
  };
  Result<uint64_t> n = c.Watch(dir.string(), {}, cb);
  REQUIRE(n.ok());
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].kind == "created");
  CHECK(seen[0].path == (dir / "a.txt").string());
  CHECK(seen[1].kind == "modified");
  CHECK(seen[2].kind == "renamed");
  CHECK(seen[2].from == (dir / "a.txt").string());
  CHECK(seen[2].path == (dir / "b.txt").string());
  CHECK(seen[3].kind == "removed");
  CHECK(seen[3].id > seen[0].id);
}

TEST_CASE("watch: a lost connection is reported as an overflow and the watch resumes",
          "[client][watch]") {
  DaemonProcess d;
  Client c(d.client_options());
  fs::path dir = fs::path(d.dir()) / "watched";
  fs::create_directories(dir);
  int ready = 0;
  std::vector<std::string> kinds;
  WatchCallbacks cb;
  cb.on_ready = [&] {
    ++ready;
    std::ofstream(dir / ("f" + std::to_string(ready))) << "x";
  };
  cb.on_event = [&](const FsWatchEvent& e) {
    if (e.kind == "modified") return true;  // the write of each file, maybe
    kinds.push_back(e.kind + ":" + (e.kind == "overflow" ? e.reason : e.path));
    if (kinds.size() == 1) d.Restart();  // the daemon goes away mid-watch
    return kinds.size() < 3;
  };
  Result<uint64_t> n = c.Watch(dir.string(), {}, cb);
  REQUIRE(n.ok());
  CHECK(ready == 2);
  REQUIRE(kinds.size() == 3);
  CHECK(kinds[0] == "created:" + (dir / "f1").string());
  CHECK(kinds[1] == "overflow:reconnected");
  CHECK(kinds[2] == "created:" + (dir / "f2").string());
}

TEST_CASE("watch: a missing directory is not_found", "[client][watch]") {
  DaemonProcess d;
  Client c(d.client_options());
  Result<uint64_t> n = c.Watch(d.dir() + "/missing", {}, {});
  REQUIRE_FALSE(n.ok());
  CHECK(n.status().code() == ErrorCode::kNotFound);
}

TEST_CASE("tunnel: bytes go both ways and a half-close is passed on", "[client][ports]") {
  DaemonProcess d;
  EchoOnce echo;
  Client c(d.client_options());
  Result<std::unique_ptr<Tunnel>> t = c.OpenTunnel(echo.port());
  REQUIRE(t.ok());
  std::string payload(300000, 'q');
  std::thread writer([&] {
    CHECK((*t)->WriteAll(payload).ok());
    (*t)->ShutdownWrite();
  });
  std::string back = ReadToEnd(**t);
  writer.join();
  CHECK(back == payload + "bye");
}

TEST_CASE("tunnel: a closed guest port is port_unreachable", "[client][ports]") {
  DaemonProcess d;
  uint16_t closed = 0;
  {
    EchoOnce probe;  // a port that was free a moment ago
    closed = probe.port();
  }
  Client c(d.client_options());
  Result<std::unique_ptr<Tunnel>> t = c.OpenTunnel(closed);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == ErrorCode::kPortUnreachable);
  CHECK(t.status().http_status() == 502);
}

TEST_CASE("ports: the list includes the daemon's own port", "[client][ports]") {
  DaemonProcess d;
  Client c(d.client_options());
  Result<std::vector<GuestPort>> ports = c.ListPorts();
  REQUIRE(ports.ok());
  bool found = false;
  for (const GuestPort& p : *ports) found |= p.port == d.port() && p.family == "ipv4";
  CHECK(found);
}

TEST_CASE("resize: a PTY exec sees its new size; others are not_a_pty", "[client][pty]") {
  DaemonProcess d;
  Client c(d.client_options());
  ExecStartRequest req;
  req.command = "stty size; read go; stty size";
  req.pty = PtySpec{24, 80, std::nullopt};
  req.stdin_stream = true;
  std::string id = MintExecId("resize");
  REQUIRE(c.StartExec(id, req).ok());
  // The first size is printed before the resize.
  for (int i = 0; i < 100; ++i) {
    PollOptions o;
    o.stdout_from = 0;
    o.wait = std::chrono::milliseconds(100);
    Result<ExecPollResponse> p = c.PollExec(id, o);
    REQUIRE(p.ok());
    if (p->stdout_slice && p->stdout_slice->data.find("24 80") != std::string::npos) break;
  }
  REQUIRE(c.ResizeExec(id, 40, 100).ok());
  REQUIRE(c.WriteStdin(id, 0, "go\n").ok());
  std::string out;
  StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) { out.append(b); };
  Result<ExecInfo> info = c.Stream(id, {}, cb);
  REQUIRE(info.ok());
  CHECK(out.find("24 80") != std::string::npos);
  CHECK(out.find("40 100") != std::string::npos);
  CHECK(out.find("24 80") < out.find("40 100"));

  ExecStartRequest plain;
  plain.argv = {"sleep", "5"};
  std::string other = MintExecId("plain");
  REQUIRE(c.StartExec(other, plain).ok());
  Result<ExecInfo> r = c.ResizeExec(other, 10, 10);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kNotAPty);
  (void)c.KillExec(other);
}
