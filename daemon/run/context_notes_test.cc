#include "run/context_notes.h"

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

using namespace agentd;

TEST_CASE("a context's note keeps what a daemon after a crash takes it back with",
          "[context_notes]") {
  agentd::testing::TempDir d;
  std::string dir = d / "contexts";
  ContextNote note;
  note.request.id = "ctx-1";
  note.request.spec.runtime = Runtime::kPython;
  note.info.id = "ctx-1";
  note.info.runtime = "python";
  note.info.state = "running";
  note.info.runs = 3;
  note.info.created_at = "2026-12-05T08:00:00.123Z";
  note.pid_start = 77;
  note.exec = "run.4.99";
  note.nonce = "abc123";
  note.seq = 5;
  note.out_at = 120;
  note.err_at = 7;
  note.answered = {{"a", "d1"}, {"b", "d2"}};
  note.run_in_progress = true;
  note.run_id = "stuck";
  note.run_digest = "d3";
  note.run_timeout_sec = 30;
  note.run_deadline_ms = 1800000000000;
  WriteContextNote(dir, note);

  std::vector<ContextNote> read = ReadContextNotes(dir);
  REQUIRE(read.size() == 1);
  const ContextNote& back = read[0];
  CHECK(back.info.runs == 3);
  CHECK(back.pid_start == 77);
  CHECK(back.exec == "run.4.99");
  CHECK(back.nonce == "abc123");
  CHECK(back.seq == 5);
  CHECK(back.out_at == 120);
  CHECK(back.err_at == 7);
  REQUIRE(back.answered.size() == 2);
  CHECK(back.answered[1].run_id == "b");
  CHECK(back.answered[1].digest == "d2");
  CHECK(back.run_in_progress);
  CHECK(back.run_id == std::optional<std::string>("stuck"));
  CHECK(back.run_digest == "d3");
  CHECK(back.run_timeout_sec == 30);
  CHECK(back.run_deadline_ms == 1800000000000);

  // A note from before (no interpreter fields) reads back with none.
  ContextNote old;
  old.request.id = "ctx-2";
  old.request.spec.runtime = Runtime::kPython;
  old.info.id = "ctx-2";
  old.info.runtime = "python";
  old.info.state = "ready";
  old.info.created_at = "2026-12-05T08:00:00Z";
  WriteContextNote(dir, old);
  for (const ContextNote& n : ReadContextNotes(dir)) {
    if (n.info.id == "ctx-2") {
      CHECK(n.exec.empty());
      CHECK_FALSE(n.run_in_progress);
    }
  }
}
