// The client's output stream over the event stream's binary frames
// (docs/PROTOCOL.md, "Frames") from a fake daemon: exact bytes, gaps and
// the exit from frames; SSE when an older daemon answers text/event-stream;
// a frame longer than the documented bounds refused before its payload.
#include <catch2/catch.hpp>

#include <string>

#include "agentd/client/client.h"
#include "agentd/protocol/exec_frames.h"
#include "fake_daemon.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::FakeDaemon;

namespace {

std::string Answer(std::string_view type, const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: " + std::string(type) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

std::string Frame(ExecFrameKind kind, uint8_t stream, uint64_t offset, std::string_view payload) {
  std::string out;
  AppendExecFrameHeader(out, kind, stream, static_cast<uint32_t>(payload.size()), offset);
  out += payload;
  return out;
}

const std::string kExitDoc = R"({"id":"fake-1","state":"exited","exit_code":7})";

ClientOptions Once(const std::string& url) {
  ClientOptions o;
  o.url = url;
  o.token = "t";
  o.max_stream_reconnects = 0;
  o.max_attempts = 1;
  return o;
}

struct Seen {
  std::string out, err, gaps;
};

StreamCallbacks Recorder(Seen& s) {
  StreamCallbacks cb;
  cb.on_stdout = [&s](uint64_t offset, std::string_view b) {
    s.out += std::to_string(offset) + ":" + std::string(b) + ";";
  };
  cb.on_stderr = [&s](uint64_t offset, std::string_view b) {
    s.err += std::to_string(offset) + ":" + std::string(b) + ";";
  };
  cb.on_gap = [&s](std::string_view stream, uint64_t from, uint64_t to) {
    s.gaps += std::string(stream) + ":" + std::to_string(from) + "-" + std::to_string(to) + ";";
  };
  return cb;
}

}  // namespace

TEST_CASE("Stream reads output, gaps and the exit from frames", "[client][exec][frames]") {
  std::string body;
  AppendExecGapFrame(body, 1, 0, 3);
  body += Frame(ExecFrameKind::kKeepalive, 0, 0, "");
  body += Frame(ExecFrameKind::kOutput, 1, 3, "lo");
  body += Frame(ExecFrameKind::kOutput, 2, 0, "E");
  body += Frame(static_cast<ExecFrameKind>(9), 0, 0, "a kind from the future");
  body += Frame(ExecFrameKind::kExit, 0, 0, kExitDoc);
  FakeDaemon daemon(Answer(kExecFramesMediaType, body));
  Client c(Once(daemon.url()));
  Seen s;
  auto exited = c.Stream("fake-1", {}, Recorder(s));
  REQUIRE(exited.ok());
  CHECK(exited->exit_code == 7);
  CHECK(s.gaps == "stdout:0-3;");
  CHECK(s.out == "3:lo;");
  CHECK(s.err == "0:E;");
}

TEST_CASE("Stream reads SSE when an older daemon answers text/event-stream",
          "[client][exec][frames]") {
  FakeDaemon daemon(Answer("text/event-stream",
                           "event: stdout\ndata: {\"offset\":0,\"data_b64\":\"aGVsbG8=\"}\n"
                           "id: 5:0\n\nevent: exit\ndata: " +
                               kExitDoc + "\nid: 5:0\n\n"));
  Client c(Once(daemon.url()));
  Seen s;
  auto exited = c.Stream("fake-1", {}, Recorder(s));
  REQUIRE(exited.ok());
  CHECK(exited->exit_code == 7);
  CHECK(s.out == "0:hello;");
}

TEST_CASE("Stream refuses a frame over the documented bounds", "[client][exec][frames]") {
  struct Case {
    ExecFrameKind kind;
    uint32_t length;
  };
  for (Case k : {Case{ExecFrameKind::kOutput, kMaxExecFrameOutputBytes + 1},
                 Case{ExecFrameKind::kExit, kMaxExecFramePayloadBytes + 1},
                 Case{ExecFrameKind::kOutput, 0xffffffffu}, Case{ExecFrameKind::kGap, 9}}) {
    // The header alone: refused before waiting for (or holding) the payload.
    std::string head;
    AppendExecFrameHeader(head, k.kind, 1, k.length, 0);
    FakeDaemon daemon(Answer(kExecFramesMediaType, head));
    Client c(Once(daemon.url()));
    auto exited = c.Stream("fake-1", {}, {});
    REQUIRE_FALSE(exited.ok());
    CHECK(exited.status().code() == ErrorCode::kProtocolError);
  }
}

TEST_CASE("the frame decoder gives the same frames at every split", "[client][frames]") {
  std::string wire = Frame(ExecFrameKind::kOutput, 1, 0, std::string(128000, 'x')) +
                     Frame(ExecFrameKind::kOutput, 2, 5, "y") +
                     Frame(ExecFrameKind::kExit, 0, 0, "{}");
  for (size_t step : {size_t{1}, size_t{5}, size_t{16}, size_t{17}, size_t{4096}, wire.size()}) {
    ExecFrameDecoder dec;
    std::string seen;
    for (size_t i = 0; i < wire.size(); i += step) {
      Status fed = dec.Feed(std::string_view(wire).substr(i, step), [&](const ExecFrame& f) {
        seen += std::to_string(f.kind) + "/" + std::to_string(f.stream) + "/" +
                std::to_string(f.offset) + "/" + std::to_string(f.payload.size()) + ";";
      });
      REQUIRE(fed.ok());
    }
    CHECK(seen == "1/1/0/128000;1/2/5/1;3/0/0/2;");
  }
}
