#include "agentd/protocol/fs.h"

#include <catch2/catch.hpp>

#include "json_doc_for_test.h"

using namespace agentd;

TEST_CASE("stat object round-trips with a four-digit octal mode", "[fs]") {
  FileStat st;
  st.path = "/work/run.sh";
  st.type = FileStat::Type::kSymlink;
  st.size = 12;
  st.mode = 04755;
  st.uid = 1000;
  st.gid = 100;
  st.mtime = std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000123));
  st.target = "../bin/run";
  json::Value doc = EncodeFileStat(st);
  CHECK(doc.Find("mode")->as_string() == "4755");
  CHECK(doc.Find("type")->as_string() == "symlink");
  auto back = DecodeFileStat(doc);
  REQUIRE(back.ok());
  CHECK(back->path == st.path);
  CHECK(back->type == st.type);
  CHECK(back->mode == st.mode);
  CHECK(back->mtime == st.mtime);
  CHECK(back->target == st.target);
}

TEST_CASE("stat object of a non-symlink carries a null target", "[fs]") {
  FileStat st;
  st.type = FileStat::Type::kFile;
  st.mode = 0644;
  json::Value doc = EncodeFileStat(st);
  REQUIRE(doc.Find("target") != nullptr);
  CHECK(doc.Find("target")->is_null());
  CHECK(doc.Find("mode")->as_string() == "0644");
}

TEST_CASE("modes parse as octal and refuse anything else", "[fs]") {
  CHECK(*ParseMode("0644", "mode") == 0644);
  CHECK(*ParseMode("755", "mode") == 0755);
  CHECK(*ParseMode("7777", "mode") == 07777);
  CHECK(*ParseMode("0", "mode") == 0);
  for (const char* bad : {"", "0x1ff", "8", "17777", "-1", "0644 ", "rwx"}) {
    INFO(bad);
    auto r = ParseMode(bad, "mode");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kInvalidRequest);
    CHECK(r.status().details().Find("field")->as_string() == "mode");
  }
  CHECK(FormatMode(01777) == "1777");
}

TEST_CASE("mkdir request decodes defaults and refuses unknown fields", "[fs]") {
  auto req = DecodeMkdirRequest(Doc(R"({"path":"/a/b"})"));
  REQUIRE(req.ok());
  CHECK(req->mode == 0755);
  CHECK_FALSE(req->parents);
  req = DecodeMkdirRequest(Doc(R"({"path":"/a","mode":"0700","parents":true,"user":"1000"})"));
  REQUIRE(req.ok());
  CHECK(req->mode == 0700);
  CHECK(req->parents);
  CHECK(req->user == "1000");
  CHECK(DecodeMkdirRequest(Doc(R"({"path":"/a","mode":493})")).status().code() ==
        ErrorCode::kInvalidRequest);
  CHECK(DecodeMkdirRequest(Doc(R"({"path":"/a","mode":"999"})")).status().code() ==
        ErrorCode::kInvalidRequest);
  CHECK(DecodeMkdirRequest(Doc(R"({"path":"/a","parent":true})")).status().code() ==
        ErrorCode::kInvalidRequest);
  CHECK(DecodeMkdirRequest(Doc(R"({"mode":"0755"})")).status().code() ==
        ErrorCode::kInvalidRequest);
  auto back = DecodeMkdirRequest(EncodeMkdirRequest(*req));
  REQUIRE(back.ok());
  CHECK(back->mode == 0700);
}

TEST_CASE("rename request needs both paths and overwrites by default", "[fs]") {
  auto req = DecodeRenameRequest(Doc(R"({"from":"/a","to":"/b"})"));
  REQUIRE(req.ok());
  CHECK(req->overwrite);
  CHECK(DecodeRenameRequest(Doc(R"({"from":"/a"})")).status().code() == ErrorCode::kInvalidRequest);
  req = DecodeRenameRequest(Doc(R"({"from":"/a","to":"/b","overwrite":false})"));
  REQUIRE(req.ok());
  CHECK_FALSE(req->overwrite);
}

TEST_CASE("line ranges follow the contract", "[fs]") {
  std::string one = "1", three = "3", zero = "0", two = "2", junk = "x";
  auto r = ParseLineRange(nullptr, nullptr);
  REQUIRE(r.ok());
  CHECK(r->start == 1);
  CHECK_FALSE(r->end.has_value());
  r = ParseLineRange(&two, &three);
  REQUIRE(r.ok());
  CHECK(r->start == 2);
  CHECK(r->end == 3u);
  r = ParseLineRange(&three, &three);  // a single line
  CHECK(r.ok());
  CHECK(ParseLineRange(&zero, nullptr).status().code() == ErrorCode::kInvalidRange);
  CHECK(ParseLineRange(&three, &two).status().code() == ErrorCode::kInvalidRange);
  CHECK(ParseLineRange(nullptr, &zero).status().code() == ErrorCode::kInvalidRange);
  CHECK(ParseLineRange(&junk, nullptr).status().code() == ErrorCode::kInvalidRange);
  r = ParseLineRange(nullptr, &one);
  REQUIRE(r.ok());
  CHECK(r->end == 1u);
}

TEST_CASE("byte ranges: forms, clamping, unsatisfiable and ignored headers", "[fs]") {
  auto r = ParseByteRange("bytes=0-9", 100);
  CHECK(r.kind == ByteRange::Kind::kSatisfiable);
  CHECK((r.first == 0 && r.last == 9));
  r = ParseByteRange("bytes=90-", 100);
  CHECK((r.first == 90 && r.last == 99));
  r = ParseByteRange("bytes=50-500", 100);
  CHECK((r.first == 50 && r.last == 99));
  r = ParseByteRange("bytes=-10", 100);
  CHECK((r.first == 90 && r.last == 99));
  r = ParseByteRange("bytes=-1000", 100);
  CHECK((r.first == 0 && r.last == 99));
  CHECK(ParseByteRange("bytes=100-", 100).kind == ByteRange::Kind::kUnsatisfiable);
  CHECK(ParseByteRange("bytes=-0", 100).kind == ByteRange::Kind::kUnsatisfiable);
  CHECK(ParseByteRange("bytes=0-0", 0).kind == ByteRange::Kind::kUnsatisfiable);
  CHECK(ParseByteRange("bytes=0-1,5-6", 100).kind == ByteRange::Kind::kNone);
  CHECK(ParseByteRange("bytes=9-2", 100).kind == ByteRange::Kind::kNone);
  CHECK(ParseByteRange("items=0-1", 100).kind == ByteRange::Kind::kNone);
  CHECK(ParseByteRange("bytes=a-b", 100).kind == ByteRange::Kind::kNone);
}

TEST_CASE("tar, delete and realpath answers round-trip", "[fs]") {
  auto tar = DecodeTarUploadResponse(EncodeTarUploadResponse({7, 4096}));
  REQUIRE(tar.ok());
  CHECK((tar->entries == 7 && tar->bytes == 4096));
  auto del = DecodeDeleteResponse(EncodeDeleteResponse({"/x", 3}));
  REQUIRE(del.ok());
  CHECK(del->removed == 3);
  auto real = DecodeRealpathResponse(EncodeRealpathResponse({"/a/b"}));
  REQUIRE(real.ok());
  CHECK(real->path == "/a/b");
  ListResponse list;
  list.entries.resize(2);
  list.entries[1].path = "/b";
  auto back = DecodeListResponse(EncodeListResponse(list));
  REQUIRE(back.ok());
  CHECK(back->entries.size() == 2);
  CHECK(back->entries[1].path == "/b");
}
