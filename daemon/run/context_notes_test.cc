#include "run/context_notes.h"

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

using namespace agentd;

// Named, not anonymous: the unit tests are built in unity batches, where
// every file's anonymous namespace is one.
namespace context_notes_test {

// A note with every field set, as a crash (a run in progress, a run an
// earlier crash cut) and an upgrade (an answer kept) would leave it.
ContextNote FullNote() {
  ContextNote note;
  note.request.id = "ctx-1";
  note.request.spec.runtime = Runtime::kPython;
  note.request.spec.cwd = "/work";
  note.info.id = "ctx-1";
  note.info.runtime = "python";
  note.info.state = "running";
  note.info.cwd = "/work";
  note.info.pid = 4242;
  note.info.runs = 3;
  note.info.created_at = "2026-12-05T11:00:00.123Z";
  note.pid_start = 987654321;
  note.run_in_progress = true;
  note.run_id = "now";
  note.run_digest = "d-now";
  note.run_timeout_sec = 30;
  note.run_deadline_ms = 1796468400000;
  note.exec = "ctx-ctx-1-1";
  note.nonce = "00ff00ff00ff00ff00ff00ff";
  note.seq = 7;
  note.out_at = 1000;
  note.err_at = 20;
  ContextNote::Answered kept;
  kept.run_id = "kept";
  kept.digest = "d-kept";
  kept.answer = json::Value(json::Object().Set("exit_code", 0).Set("stdout", "hi\n"));
  ContextNote::Answered cut;
  cut.run_id = "cut";
  cut.digest = "d-cut";
  cut.lost = LostRun{true, -2};
  ContextNote::Answered unsent;
  unsent.run_id = "unsent";
  unsent.digest = "d-unsent";
  unsent.lost = LostRun{false, std::nullopt};
  ContextNote::Answered before;
  before.run_id = "before";
  before.digest = "d-before";
  note.answered = {kept, cut, unsent, before};
  return note;
}

std::string NoteText(const ContextNote& note) { return json::Serialize(EncodeContextNote(note)); }

std::optional<ContextNote> NoteFromText(const std::string& text) {
  Result<json::Value> doc = json::Parse(text);
  if (!doc.ok()) return std::nullopt;
  return DecodeContextNote(*doc);
}

}  // namespace context_notes_test

using context_notes_test::FullNote;
using context_notes_test::NoteFromText;
using context_notes_test::NoteText;

TEST_CASE("a context note reads back as written, with its kept answers and lost runs") {
  ContextNote note = FullNote();
  std::optional<ContextNote> back = NoteFromText(NoteText(note));
  REQUIRE(back);
  CHECK(NoteText(*back) == NoteText(note));
  CHECK(back->request.id == "ctx-1");
  CHECK(back->info.pid == 4242);
  CHECK(back->pid_start == 987654321);
  CHECK(back->run_in_progress);
  CHECK(back->run_id == std::optional<std::string>("now"));
  CHECK(back->run_deadline_ms == 1796468400000);
  CHECK(back->seq == 7);
  CHECK(back->out_at == 1000);
  REQUIRE(back->answered.size() == 4);
  CHECK(back->answered[0].answer == note.answered[0].answer);
  CHECK_FALSE(back->answered[0].lost);
  REQUIRE(back->answered[1].lost);
  CHECK(back->answered[1].lost->ran);
  CHECK(back->answered[1].lost->exit_code == std::optional<int64_t>(-2));
  REQUIRE(back->answered[2].lost);
  CHECK_FALSE(back->answered[2].lost->ran);
  CHECK_FALSE(back->answered[2].lost->exit_code);
  CHECK_FALSE(back->answered[3].answer);
  CHECK_FALSE(back->answered[3].lost);
}

TEST_CASE("an idle context note has no run in progress after the round trip") {
  ContextNote note = FullNote();
  note.run_in_progress = false;
  note.run_id.reset();
  std::optional<ContextNote> back = NoteFromText(NoteText(note));
  REQUIRE(back);
  CHECK_FALSE(back->run_in_progress);
  CHECK_FALSE(back->run_id);
  CHECK(NoteText(*back) == NoteText(note));
}

TEST_CASE("a context note cut short anywhere is refused, never half read") {
  std::string text = NoteText(FullNote());
  for (size_t n = 0; n < text.size(); ++n) {
    INFO("cut at " << n << " of " << text.size());
    CHECK_FALSE(NoteFromText(text.substr(0, n)));
  }
}

TEST_CASE("a context note whose request and info disagree or are missing is refused") {
  ContextNote other = FullNote();
  other.info.id = "ctx-2";
  CHECK_FALSE(NoteFromText(NoteText(other)));
  json::Object no_info = EncodeContextNote(FullNote());
  no_info.Erase("info");
  CHECK_FALSE(DecodeContextNote(json::Value(no_info)));
  json::Object no_state = EncodeContextNote(FullNote());
  no_state.Find("info")->as_object().Erase("state");
  CHECK_FALSE(DecodeContextNote(json::Value(no_state)));
  CHECK_FALSE(DecodeContextNote(json::Value(json::Array{json::Value(1)})));
  CHECK_FALSE(DecodeContextNote(json::Value("note")));
}

TEST_CASE("reading the notes keeps the whole ones and removes the cut and the misnamed") {
  testing::TempDir dir;
  ContextNote whole = FullNote();
  WriteContextNote(dir.path(), whole);
  std::string text = NoteText(whole);
  dir.Write("cut.json", text.substr(0, text.size() / 2));
  dir.Write("other.json", text);  // ctx-1's note under another id's name
  std::vector<ContextNote> read = ReadContextNotes(dir.path());
  REQUIRE(read.size() == 1);
  CHECK(NoteText(read[0]) == text);
  CHECK(dir.Exists("ctx-1.json"));
  CHECK_FALSE(dir.Exists("cut.json"));
  CHECK_FALSE(dir.Exists("other.json"));
}
