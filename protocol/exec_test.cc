#include <catch2/catch.hpp>

#include "agentd/protocol/exec.h"
#include "json_doc_for_test.h"

using namespace agentd;

namespace {

Status DecodeStatus(const char* text) { return DecodeExecStartRequest(Doc(text)).status(); }

std::string FieldOf(const Status& s) {
  const json::Value* f = s.details().Find("field");
  return f && f->is_string() ? f->as_string() : "";
}

}  // namespace

TEST_CASE("exec ids are 1 to 128 characters of the documented set", "[exec]") {
  CHECK(IsValidExecId("a"));
  CHECK(IsValidExecId("build-1.step_2"));
  CHECK(IsValidExecId(".."));  // valid per the contract; never used as a bare path
  CHECK(IsValidExecId(std::string(128, 'x')));
  CHECK_FALSE(IsValidExecId(""));
  CHECK_FALSE(IsValidExecId(std::string(129, 'x')));
  CHECK_FALSE(IsValidExecId("a/b"));
  CHECK_FALSE(IsValidExecId("a b"));
  CHECK_FALSE(IsValidExecId("caf\xc3\xa9"));
  CHECK(ValidateExecId("a%b").code() == ErrorCode::kInvalidRequest);
}

TEST_CASE("start request decodes argv mode and shell mode", "[exec]") {
  auto argv = DecodeExecStartRequest(Doc(R"({"argv":["echo","hi"],"timeout_sec":3})"));
  REQUIRE(argv.ok());
  CHECK(argv->EffectiveArgv() == std::vector<std::string>{"echo", "hi"});
  CHECK(argv->timeout_sec == 3);
  auto shell = DecodeExecStartRequest(Doc(R"({"command":"echo hi","shell":"/bin/bash"})"));
  REQUIRE(shell.ok());
  CHECK(shell->EffectiveArgv() == std::vector<std::string>{"/bin/bash", "-c", "echo hi"});
  auto sh = DecodeExecStartRequest(Doc(R"({"command":"true"})"));
  REQUIRE(sh.ok());
  CHECK(sh->EffectiveArgv() == std::vector<std::string>{"/bin/sh", "-c", "true"});
}

TEST_CASE("start request refuses both or neither of argv and command", "[exec]") {
  CHECK(DecodeStatus(R"({"argv":["a"],"command":"b"})").code() == ErrorCode::kInvalidRequest);
  CHECK(DecodeStatus(R"({})").code() == ErrorCode::kInvalidRequest);
  CHECK(DecodeStatus(R"({"argv":[]})").code() == ErrorCode::kInvalidRequest);
  CHECK(DecodeStatus(R"({"argv":[""]})").code() == ErrorCode::kInvalidRequest);
  CHECK(DecodeStatus(R"({"argv":["a"],"shell":"/bin/sh"})").code() == ErrorCode::kInvalidRequest);
}

TEST_CASE("start request names the field of each bad member", "[exec]") {
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"timeout_sec":-1})")) == "timeout_sec");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"timeout_sec":0})")) == "timeout_sec");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"timeout_sec":1.5})")) == "timeout_sec");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"kill_grace_sec":-1})")) == "kill_grace_sec");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"cwd":""})")) == "cwd");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a\u0000b"]})")) == "argv");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"stdin_b64":"!!"})")) == "stdin_b64");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"stdin":"x","stdin_stream":true})")) == "stdin");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"env":{"A=B":"x"}})")) == "env");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"env":{"A":1}})")) == "env");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"pty":{"rows":1}})")) == "pty");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"pty":{"rows":0,"cols":80}})")) == "pty");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"pty":{"rows":1,"cols":1,"x":1}})")) == "pty");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"pty":{"rows":1,"cols":1},"stdin":"x"})")) == "pty");
  CHECK(FieldOf(DecodeStatus(R"({"argv":["a"],"surprise":1})")) == "surprise");
}

TEST_CASE("fingerprint ignores key order, whitespace and null members", "[exec]") {
  auto a = DecodeExecStartRequest(
      Doc(R"({"argv":["x","y"],"env":{"A":"1","B":null},"cwd":"/tmp","user":null})"));
  auto b = DecodeExecStartRequest(
      Doc(R"({ "cwd" : "/tmp", "env": {"B": null, "A": "1"}, "argv": ["x", "y"] })"));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(ExecFingerprint(*a) == ExecFingerprint(*b));
}

TEST_CASE("fingerprint tells apart requests that mean different things", "[exec]") {
  auto fp = [](const char* text) {
    auto r = DecodeExecStartRequest(Doc(text));
    REQUIRE(r.ok());
    return ExecFingerprint(*r);
  };
  std::string base = fp(R"({"argv":["x","y"]})");
  CHECK(base != fp(R"({"argv":["y","x"]})"));
  CHECK(base != fp(R"({"argv":["x","y"],"timeout_sec":5})"));
  CHECK(base != fp(R"({"argv":["x","y"],"env":{"A":null}})"));
  CHECK(base != fp(R"({"command":"x y"})"));
  CHECK(fp(R"({"argv":["x"],"stdin_stream":false})") == fp(R"({"argv":["x"]})"));
}

TEST_CASE("stdin_b64 decodes to bytes and re-encodes the same way", "[exec]") {
  auto r = DecodeExecStartRequest(Doc(R"({"argv":["cat"],"stdin_b64":"AP8="})"));
  REQUIRE(r.ok());
  CHECK(*r->stdin_data == std::string("\x00\xff", 2));
  auto again = DecodeExecStartRequest(EncodeExecStartRequest(*r));
  REQUIRE(again.ok());
  CHECK(ExecFingerprint(*again) == ExecFingerprint(*r));
}

TEST_CASE("exec object and poll answer round-trip", "[exec]") {
  ExecPollResponse r;
  r.exec.id = "x";
  r.exec.running = false;
  r.exec.pid = 42;
  r.exec.exit_code = 143;
  r.exec.signal = "TERM";
  r.exec.killed_by = "kill";
  r.exec.stdout_bytes = 10;
  r.exec.stdout_retained_from = 4;
  r.stdout_slice = OutputSlice{4, 10, "abcdef", 0};
  json::Value doc = EncodeExecPollResponse(r);
  CHECK(doc.Find("stderr") == nullptr);
  CHECK(doc.Find("stdout")->Find("gap")->Find("to")->as_int() == 4);
  auto back = DecodeExecPollResponse(doc);
  REQUIRE(back.ok());
  CHECK(back->exec.exit_code == 143);
  CHECK(back->exec.signal == "TERM");
  CHECK_FALSE(back->exec.running);
  REQUIRE(back->stdout_slice);
  CHECK(back->stdout_slice->data == "abcdef");
  CHECK(back->stdout_slice->gap_from == 0);
  CHECK_FALSE(back->stderr_slice);
}

TEST_CASE("event ids carry both cursors and refuse anything else", "[exec]") {
  CHECK(FormatExecEventId(12, 0) == "12:0");
  CHECK(ParseExecEventId("12:0") == std::pair<uint64_t, uint64_t>(12, 0));
  CHECK_FALSE(ParseExecEventId("12"));
  CHECK_FALSE(ParseExecEventId("-1:0"));
  CHECK_FALSE(ParseExecEventId("1:2:3"));
  CHECK_FALSE(ParseExecEventId(":"));
  CHECK_FALSE(ParseExecEventId("99999999999999999999:0"));
}

TEST_CASE("output event data is one line of JSON with base64 bytes", "[exec]") {
  std::string out;
  AppendOutputEventData(out, 7, std::string("\n\x00\xff", 3));
  CHECK(out == R"({"offset":7,"data_b64":"CgD/"})");
  auto doc = json::Parse(GapEventData("stdout", 0, 9));
  REQUIRE(doc.ok());
  CHECK(doc->Find("to")->as_int() == 9);
}

TEST_CASE("pty requests decode, take part in the fingerprint, and resize bodies", "[exec]") {
  auto r = DecodeExecStartRequest(Doc(R"({"argv":["sh"],"pty":{"rows":40,"cols":120}})"));
  REQUIRE(r.ok());
  REQUIRE(r->pty);
  CHECK(r->pty->rows == 40);
  CHECK(r->pty->cols == 120);
  CHECK_FALSE(r->pty->term);
  auto plain = DecodeExecStartRequest(Doc(R"({"argv":["sh"]})"));
  CHECK(ExecFingerprint(*r) != ExecFingerprint(*plain));
  auto again = DecodeExecStartRequest(EncodeExecStartRequest(*r));
  REQUIRE(again.ok());
  CHECK(ExecFingerprint(*again) == ExecFingerprint(*r));
  auto resize = DecodeResizeRequest(Doc(R"({"rows":10,"cols":20})"));
  REQUIRE(resize.ok());
  CHECK(resize->cols == 20);
  CHECK_FALSE(DecodeResizeRequest(Doc(R"({"rows":10})")).ok());
}

TEST_CASE("kill request defaults and bounds", "[exec]") {
  auto empty = DecodeKillRequest(json::Value());
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->signal);
  CHECK(DecodeKillRequest(Doc(R"({"grace_sec":-1})")).status().code() ==
        ErrorCode::kInvalidRequest);
  CHECK(DecodeKillRequest(Doc(R"({"sig":"TERM"})")).status().code() == ErrorCode::kInvalidRequest);
}

TEST_CASE("restriction says whether the seccomp filter was loaded", "[exec]") {
  ExecRestriction weaker;
  weaker.user = "nobody";
  weaker.uid = 65534;
  weaker.seccomp = false;
  weaker.seccomp_why = "this kernel has no seccomp support";
  json::Value doc(EncodeExecRestriction(weaker));
  CHECK_FALSE(doc.Find("seccomp")->as_bool());
  CHECK(doc.Find("seccomp_why")->as_string() == "this kernel has no seccomp support");
  auto back = DecodeExecRestriction(&doc);
  REQUIRE(back);
  CHECK_FALSE(back->seccomp);
  CHECK(back->seccomp_why == weaker.seccomp_why);

  ExecRestriction full;
  full.seccomp_refused_syscalls = 48;
  json::Value with(EncodeExecRestriction(full));
  CHECK(with.Find("seccomp")->as_bool());
  CHECK(with.Find("seccomp_why") == nullptr);
  // A record written before the member existed always had the filter.
  json::Value legacy = Doc(R"({"uid": 65534, "seccomp_refused_syscalls": 48})");
  auto old = DecodeExecRestriction(&legacy);
  REQUIRE(old);
  CHECK(old->seccomp);
}

TEST_CASE("an exec object's egress.resolved round-trips; a request may not carry it",
          "[exec][egress]") {
  auto req = DecodeExecStartRequest(
      Doc(R"({"argv":["true"],"egress":{"mode":"allow","allow":["mirror.internal:8080"]}})"));
  REQUIRE(req.ok());
  std::string asked = ExecFingerprint(*req);
  req->egress->resolved = {{"mirror.internal", {"10.1.2.3", "2001:db8::7"}}};
  CHECK(ExecFingerprint(*req) == asked);  // the daemon's answer is not the request's identity
  ExecInfo e;
  e.id = "x";
  e.egress = req->egress;
  auto back = DecodeExecInfo(EncodeExecInfo(e));
  REQUIRE(back.ok());
  REQUIRE(back->egress);
  REQUIRE(back->egress->resolved.size() == 1);
  CHECK(back->egress->resolved[0].name == "mirror.internal");
  CHECK(back->egress->resolved[0].addresses == std::vector<std::string>{"10.1.2.3", "2001:db8::7"});
  Status sent = DecodeStatus(
      R"({"argv":["true"],"egress":{"mode":"allow","allow":["m.internal"],"resolved":{"m.internal":["10.0.0.1"]}}})");
  CHECK(sent.code() == ErrorCode::kInvalidRequest);
  CHECK(FieldOf(sent) == "egress");
}
