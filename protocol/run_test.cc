#include <catch2/catch.hpp>

#include "agentd/protocol/run.h"
#include "json_doc_for_test.h"

using namespace agentd;

TEST_CASE("run request: runtime and code are required, unknown members refused", "[run]") {
  auto r = DecodeRunRequest(Doc(R"({"runtime":"shell","code":"echo hi","timeout_sec":900})"));
  REQUIRE(r.ok());
  CHECK(r->timeout_sec == 900);  // clamped by the daemon, not refused
  CHECK(DecodeRunRequest(Doc(R"({"code":"1"})")).status().code() == ErrorCode::kInvalidRequest);
  CHECK(DecodeRunRequest(Doc(R"({"runtime":"shell"})")).status().code() ==
        ErrorCode::kInvalidRequest);
  Status s = DecodeRunRequest(Doc(R"({"runtime":"shell","code":"1","timeout":3})")).status();
  CHECK(s.code() == ErrorCode::kInvalidRequest);
  CHECK(s.details().Find("field")->as_string() == "timeout");
}

TEST_CASE("a run becomes the runtime's one argv with its limits", "[run]") {
  auto r = DecodeRunRequest(Doc(R"j({"runtime":"python","code":"print(1)","memory_mb":64})j"));
  REQUIRE(r.ok());
  ExecStartRequest e = RunToExecRequest(*r, "/w", 300);
  CHECK(e.EffectiveArgv() == std::vector<std::string>{"python3", "-c", "print(1)"});
  CHECK(e.cwd == "/w");
  CHECK(e.timeout_sec == 300);
  CHECK(e.limits.memory_mb == 64);
}

TEST_CASE("summary of a clean exit counts the changed files", "[run]") {
  RunOutcome o;
  o.exit_code = 0;
  o.duration_ms = 120;
  o.changed_files = 2;
  CHECK(RunSummary(o) == "exit 0 in 120 ms; 2 files changed");
  o.changed_files = 1;
  CHECK(RunSummary(o) == "exit 0 in 120 ms; 1 file changed");
  o.changed_files = 0;
  CHECK(RunSummary(o) == "exit 0 in 120 ms");
}

TEST_CASE("summary of a failure ends with the last error line of stderr", "[run]") {
  RunOutcome o;
  o.exit_code = 1;
  o.duration_ms = 30;
  o.stderr_tail =
      "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
      "ModuleNotFoundError: No module named 'x'\n\n";
  CHECK(RunSummary(o) == "exit 1 in 30 ms: ModuleNotFoundError: No module named 'x'");
}

TEST_CASE("summary of a limit kill names the limit and its value", "[run]") {
  RunOutcome o;
  o.exit_code = 124;
  o.killed_by = "timeout";
  o.limit = TimeoutHit(30);
  CHECK(RunSummary(o) == "killed: wall-clock limit 30s exceeded");
  o.killed_by = "memory";
  o.limit = MemoryHit(256);
  CHECK(RunSummary(o) == "killed: memory limit 256 MiB exceeded");
}

TEST_CASE("last error line: control characters, blank lines, long lines", "[run]") {
  CHECK(LastErrorLine("a\nb\x1b[31m err\t\n  \n") == "b [31m err");
  CHECK(LastErrorLine("") == "");
  std::string long_line(1000, 'x');
  CHECK(LastErrorLine(long_line).size() == kMaxSummaryLineBytes);
}

TEST_CASE("UTF-8 cuts never split a character", "[run]") {
  std::string s = "a\xc3\xa9z";  // a é z
  CHECK(Utf8Head(s, 2) == "a");
  CHECK(Utf8Head(s, 3) == "a\xc3\xa9");
  CHECK(Utf8Tail(s, 2) == "z");
  CHECK(Utf8Tail(s, 3) == "\xc3\xa9z");
}

TEST_CASE("run answers round-trip", "[run]") {
  RunResponse r;
  r.summary = "exit 0 in 1 ms; 1 file changed";
  r.exit_code = 0;
  r.success = true;
  r.stdout_text = "hi\n";
  r.changed_files.push_back({"out.txt", "added", "file"});
  auto back = DecodeRunResponse(EncodeRunResponse(r));
  REQUIRE(back.ok());
  CHECK(back->summary == r.summary);
  CHECK(back->success);
  REQUIRE(back->changed_files.size() == 1);
  CHECK(back->changed_files[0].path == "out.txt");
  CHECK(back->changed_files[0].change == "added");
}

TEST_CASE("run exception round-trips and the summary names it instead of stderr", "[run]") {
  RunException e;
  e.type = "KeyError";
  e.message = "'amount'";
  e.file = "<string>";
  e.line = 4;
  e.source_line = "total += row[\"amount\"]";
  e.frames.push_back({"<string>", 4, "<module>", e.source_line});
  e.omitted_frames = 2;
  e.keys_present = std::vector<std::string>{"tenant", "value"};
  e.keys_total = 2;
  RunResponse r;
  r.summary = "s";
  r.exception = e;
  auto back = DecodeRunResponse(EncodeRunResponse(r));
  REQUIRE(back.ok());
  REQUIRE(back->exception.has_value());
  CHECK(*back->exception == e);

  RunOutcome o;
  o.exit_code = 1;
  o.duration_ms = 30;
  o.stderr_tail = "Traceback ...\nKeyError: 'amount'\n";
  o.exception = e;
  CHECK(RunSummary(o) == "exit 1 in 30 ms: KeyError: 'amount' at line 4: total += row[\"amount\"]");
  e.file = "ledger.py";
  e.line = 6;
  e.column = 3;
  e.message = "two\nlines";
  e.source_line.reset();
  o.exception = e;
  CHECK(RunSummary(o) == "exit 1 in 30 ms: KeyError: two lines at ledger.py line 6, column 3");
}

TEST_CASE("a run exception from a driver is cut to its bounds", "[run]") {
  json::Array frames;
  for (int i = 0; i < 40; ++i) {
    frames.emplace_back(json::Object().Set("file", "<string>").Set("line", i).Set("function", "f"));
  }
  json::Object doc;
  doc.Set("type", "RecursionError");
  doc.Set("message", std::string(5000, 'm'));
  doc.Set("frames", std::move(frames));
  doc.Set("omitted_frames", 7);
  auto e = DecodeRunException(doc);
  REQUIRE(e.ok());
  CHECK(e->frames.size() == kExceptionMaxFrames);
  CHECK(e->omitted_frames == 7 + 10);
  CHECK(e->message.size() == kExceptionMaxMessageBytes);
  CHECK(!DecodeRunException(json::Object().Set("message", "no type")).ok());
}

TEST_CASE("summary names the most refused egress destination and how many more", "[run][egress]") {
  RunOutcome o;
  o.exit_code = 0;
  o.duration_ms = 41;
  EgressReport r;
  r.accounting = true;
  r.policy = EgressPolicy{"public", {}, {}, false, {}};
  r.destinations = {{"ipv4", "tcp", "10.0.0.1", 80, "refused", 1, "", ""},
                    {"ipv4", "tcp", "169.254.169.254", 80, "refused", 2, "", ""},
                    {"ipv4", "tcp", "8.8.8.8", 443, "allowed", 5, "", ""}};
  r.refused = 3;
  o.egress = r;
  CHECK(RunSummary(o) ==
        "exit 0 in 41 ms; network: 2 connections to 169.254.169.254:80 refused by policy public "
        "(1 more refused)");
  r.destinations = {{"ipv6", "udp", "fd00:ec2::254", 53, "refused", 1, "", ""}};
  r.refused = 1;
  o.egress = r;
  CHECK(RunSummary(o) ==
        "exit 0 in 41 ms; network: 1 datagram to [fd00:ec2::254]:53 refused by policy public");
  r.destinations = {{"ipv4", "icmp", "", 0, "refused", 1, "", ""}};
  o.egress = r;
  CHECK(RunSummary(o) == "exit 0 in 41 ms; network: 1 icmp socket refused by policy public");
  r.destinations = {{"ipv4", "tcp", "8.8.8.8", 443, "allowed", 5, "", ""}};
  r.refused = 0;
  o.egress = r;
  CHECK(RunSummary(o) == "exit 0 in 41 ms");
}

TEST_CASE("an egress report says from when and why counts are missing", "[egress]") {
  EgressReport r;
  r.id = "e-1";
  r.incomplete = EgressIncomplete{"2026-12-04T22:00:00.000Z", "no holder kept the exec"};
  json::Object o = EncodeEgressReport(r);
  REQUIRE(o.Find("incomplete"));
  Result<EgressReport> back = DecodeEgressReport(json::Value(std::move(o)));
  REQUIRE(back.ok());
  REQUIRE(back->incomplete);
  CHECK(back->incomplete->since == "2026-12-04T22:00:00.000Z");
  CHECK(back->incomplete->why == "no holder kept the exec");
  r.incomplete.reset();
  CHECK(EncodeEgressReport(r).Find("incomplete") == nullptr);
}

TEST_CASE("a run answer's egress destinations are bounded, refused first", "[run][egress]") {
  EgressReport r;
  for (int i = 0; i < 20; ++i) {
    r.destinations.push_back({"ipv4", "tcp", "192.0.2." + std::to_string(i), 80,
                              i % 2 ? "refused" : "allowed", i, "", ""});
  }
  BoundEgressReport(r, 4);
  REQUIRE(r.destinations.size() == 4);
  CHECK(r.destinations_omitted == 16);
  CHECK(r.destinations[0].address == "192.0.2.19");
  CHECK(r.destinations[3].verdict == "refused");
}

TEST_CASE("a run request carries its egress policy to the exec", "[run][egress]") {
  auto r = DecodeRunRequest(Doc(
      R"({"runtime":"shell","code":"true","egress":{"mode":"allow","allow":["10.0.0.0/8:443"]}})"));
  REQUIRE(r.ok());
  ExecStartRequest e = RunToExecRequest(*r, "/w", 30);
  REQUIRE(e.egress);
  CHECK(e.egress->mode == "allow");
  CHECK(e.egress->allow == std::vector<std::string>{"10.0.0.0/8:443"});
  Status s =
      DecodeRunRequest(Doc(R"({"runtime":"shell","code":"true","egress":{"mode":"x"}})")).status();
  CHECK(s.details().Find("field")->as_string() == "egress");
}
