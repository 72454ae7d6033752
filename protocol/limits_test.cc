#include <catch2/catch.hpp>

#include "agentd/protocol/exec.h"
#include "agentd/protocol/limits.h"
#include "json_doc_for_test.h"

using namespace agentd;

TEST_CASE("limit members decode beside the start request's other members", "[limits]") {
  auto r = DecodeExecStartRequest(
      Doc(R"({"command":"true","memory_mb":256,"pids":64,"cpu_sec":10,"file_size_mb":1,)"
          R"("output_bytes":65536,"kill_on_output":true,"cpus":1.5})"));
  REQUIRE(r.ok());
  CHECK(r->limits.memory_mb == 256);
  CHECK(r->limits.pids == 64);
  CHECK(r->limits.cpu_sec == 10);
  CHECK(r->limits.file_size_mb == 1);
  CHECK(r->limits.output_bytes == 65536);
  CHECK(r->limits.kill_on_output == true);
  CHECK(r->limits.cpus == 1.5);
}

TEST_CASE("limit members out of range name their field", "[limits]") {
  for (const char* text :
       {R"({"command":"true","memory_mb":0})", R"({"command":"true","pids":-1})",
        R"({"command":"true","output_bytes":10})", R"({"command":"true","cpus":0})",
        R"({"command":"true","kill_on_output":true})", R"({"command":"true","disk_bytes":1024})",
        R"({"command":"true","disk_path":"/tmp"})",
        R"({"command":"true","disk_bytes":1048576,"disk_path":"tmp"})",
        R"({"command":"true","disk_bytes":1048576,"disk_path":"/"})",
        R"({"command":"true","disk_bytes":1048576,"disk_path":"/a/../etc"})"}) {
    Status s = DecodeExecStartRequest(Doc(text)).status();
    CHECK(s.code() == ErrorCode::kInvalidRequest);
    CHECK(s.details().Find("field") != nullptr);
  }
}

TEST_CASE("a scratch disk is its size and where it is mounted, and says so when filled",
          "[limits]") {
  auto r = DecodeExecStartRequest(
      Doc(R"({"command":"true","disk_bytes":1048576,"disk_path":"/scratch"})"));
  REQUIRE(r.ok());
  CHECK(r->limits.disk_bytes == 1048576);
  CHECK(r->limits.disk_path == "/scratch");
  json::Object o;
  WriteExecLimits(o, r->limits);
  ExecLimits back = ParseExecLimits(json::Value(o));
  CHECK(back.disk_bytes == 1048576);
  CHECK(back.disk_path == "/scratch");
  CHECK(DescribeLimit(DiskHit(1048576)) == "disk limit 1048576 bytes");
}

TEST_CASE("limits change the request's fingerprint", "[limits]") {
  auto a = DecodeExecStartRequest(Doc(R"({"command":"true"})"));
  auto b = DecodeExecStartRequest(Doc(R"({"command":"true","memory_mb":64})"));
  REQUIRE((a.ok() && b.ok()));
  CHECK(ExecFingerprint(*a) != ExecFingerprint(*b));
}

TEST_CASE("request limits win over the daemon's defaults", "[limits]") {
  ExecLimits mine;
  mine.memory_mb = 64;
  ExecLimits defaults;
  defaults.memory_mb = 512;
  defaults.pids = 100;
  ExecLimits eff = mine.Over(defaults);
  CHECK(eff.memory_mb == 64);
  CHECK(eff.pids == 100);
  CHECK_FALSE(eff.cpu_sec.has_value());
}

TEST_CASE("a limit hit describes itself with its value", "[limits]") {
  CHECK(DescribeLimit(TimeoutHit(30)) == "wall-clock limit 30s");
  CHECK(DescribeLimit(MemoryHit(256)) == "memory limit 256 MiB");
  CHECK(DescribeLimit(PidsHit(64)) == "process limit 64");
  CHECK(DescribeLimit(CpuHit(10)) == "CPU time limit 10s");
  CHECK(DescribeLimit(FileSizeHit(1)) == "file size limit 1 MiB");
  json::Value v = EncodeLimitHit(MemoryHit(256));
  auto back = DecodeLimitHit(&v);
  REQUIRE(back);
  CHECK(back->name == "memory");
  CHECK(back->value == 256);
  CHECK(back->unit == "MiB");
}

TEST_CASE("the exec object carries the limit and the limits in force", "[limits]") {
  ExecInfo e;
  e.id = "x";
  e.killed_by = "pids";
  e.limit = PidsHit(32);
  e.limit_timeout_sec = 30;
  e.limits.pids = 32;
  auto back = DecodeExecInfo(EncodeExecInfo(e));
  REQUIRE(back.ok());
  REQUIRE(back->limit);
  CHECK(back->limit->name == "pids");
  CHECK(back->limit_timeout_sec == 30);
  CHECK(back->limits.pids == 32);
}

TEST_CASE("code mode: runtime and code go together, one mode only", "[limits][run]") {
  auto ok = DecodeExecStartRequest(Doc(R"j({"runtime":"python","code":"print(1)"})j"));
  REQUIRE(ok.ok());
  CHECK(ok->EffectiveArgv() == std::vector<std::string>{"python3", "-c", "print(1)"});
  CHECK(DecodeExecStartRequest(Doc(R"({"runtime":"python"})")).status().code() ==
        ErrorCode::kInvalidRequest);
  CHECK(DecodeExecStartRequest(Doc(R"({"runtime":"perl","code":"1"})")).status().code() ==
        ErrorCode::kInvalidRequest);
  CHECK(DecodeExecStartRequest(Doc(R"({"runtime":"shell","code":"1","command":"x"})"))
            .status()
            .code() == ErrorCode::kInvalidRequest);
  auto ts = DecodeExecStartRequest(Doc(R"({"runtime":"ts","code":"1"})"));
  REQUIRE(ts.ok());
  CHECK(ts->EffectiveArgv() == std::vector<std::string>{"bun", "-e", "1"});
}
