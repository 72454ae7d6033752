#include <catch2/catch.hpp>

#include <vector>

#include "agentd/protocol/sse.h"

using namespace agentd;

namespace {

std::vector<SseEvent> DecodeInPieces(const std::string& stream, size_t split) {
  std::vector<SseEvent> events;
  SseDecoder d([&](SseEvent&& e) { events.push_back(std::move(e)); });
  REQUIRE(d.Feed(std::string_view(stream).substr(0, split)));
  REQUIRE(d.Feed(std::string_view(stream).substr(split)));
  return events;
}

}  // namespace

TEST_CASE("sse writer puts the id line last", "[sse]") {
  std::string out;
  AppendSseEvent(out, "stdout", R"({"offset":0})", "5:0");
  CHECK(out == "event: stdout\ndata: {\"offset\":0}\nid: 5:0\n\n");
}

TEST_CASE("sse frames decode identically when split at every byte", "[sse]") {
  std::string stream;
  AppendSseEvent(stream, "stdout", R"({"offset":0,"data_b64":"aGk="})", "2:0");
  AppendSseComment(stream, "keepalive");
  AppendSseEvent(stream, "gap", R"({"stream":"stderr","from":0,"to":9})", "2:9");
  stream += "event: exit\r\ndata: {}\r\nid: 2:9\r\n\r\n";  // CRLF line ends
  stream += "data: a\rdata: b\r\r";                        // bare CR line ends
  auto whole = DecodeInPieces(stream, stream.size());
  REQUIRE(whole.size() == 4);
  CHECK(whole[0].event == "stdout");
  CHECK(whole[0].id == "2:0");
  CHECK(whole[1].event == "gap");
  CHECK(whole[2].event == "exit");
  CHECK(whole[2].data == "{}");
  CHECK(whole[3].event == "message");
  CHECK(whole[3].data == "a\nb");
  for (size_t split = 0; split <= stream.size(); ++split) {
    auto pieces = DecodeInPieces(stream, split);
    INFO("split at " << split);
    REQUIRE(pieces.size() == whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
      CHECK(pieces[i].event == whole[i].event);
      CHECK(pieces[i].data == whole[i].data);
      CHECK(pieces[i].id == whole[i].id);
    }
  }
}

TEST_CASE("sse decoder does not dispatch an event cut before its blank line", "[sse]") {
  std::vector<SseEvent> events;
  SseDecoder d([&](SseEvent&& e) { events.push_back(std::move(e)); });
  REQUIRE(d.Feed("event: stdout\ndata: x\nid: 1:0\n"));
  CHECK(events.empty());
  REQUIRE(d.Feed("\n"));
  CHECK(events.size() == 1);
}

TEST_CASE("sse decoder refuses an endless line", "[sse]") {
  SseDecoder d([](SseEvent&&) {});
  std::string chunk(1024 * 1024, 'x');
  bool ok = true;
  for (int i = 0; i < 20 && ok; ++i) ok = d.Feed(chunk);
  CHECK_FALSE(ok);
}
