#include "search_calls.h"

#include "agentd/protocol/percent.h"

namespace agentd::client {
namespace {

// The longest NDJSON line accepted from the daemon: its own bound on a
// line is max_bytes_per_line (at most 1 MiB) times 201 context lines plus
// escapes; a line beyond this is a broken or hostile daemon.
constexpr size_t kMaxSearchLineBytes = 512u << 20;

std::string WalkParams(const WalkQuery& q) {
  std::string out;
  for (const std::string& e : q.exclude) out += "&exclude=" + PercentEncode(e, /*keep_slash=*/true);
  if (q.hidden) out += "&hidden=1";
  if (!q.gitignore) out += "&gitignore=0";
  if (q.follow) out += "&follow=1";
  if (q.max_results) out += "&max_results=" + std::to_string(*q.max_results);
  if (q.timeout_ms) out += "&timeout_ms=" + std::to_string(*q.timeout_ms);
  return out;
}

Status Malformed(std::string what) {
  return Status::Error(ErrorCode::kProtocolError, std::move(what));
}

}  // namespace

asio::awaitable<Result<SearchResult>> SearchCall(Transport& t, std::string path,
                                                 std::string pattern, SearchOptions o) {
  HttpRequest req;
  req.target = "/v1/fs/search?path=" + PercentEncode(path, /*keep_slash=*/true) +
               "&pattern=" + PercentEncode(pattern, /*keep_slash=*/true);
  if (o.fixed) req.target += "&fixed=1";
  if (o.ignore_case) req.target += "&ignore_case=1";
  for (const std::string& g : o.glob)
    req.target += "&glob=" + PercentEncode(g, /*keep_slash=*/true);
  if (o.context) req.target += "&context=" + std::to_string(o.context);
  if (o.max_bytes) req.target += "&max_bytes=" + std::to_string(*o.max_bytes);
  if (o.max_bytes_per_line) {
    req.target += "&max_bytes_per_line=" + std::to_string(*o.max_bytes_per_line);
  }
  req.target += WalkParams(o.walk);
  // Retried until the stream starts, like a read.
  req.idempotent = true;
  Result<std::unique_ptr<ResponseStream>> stream = co_await t.Open(req);
  if (!stream.ok()) co_return stream.status();
  SearchResult out;
  bool summarized = false;
  std::string pending;
  for (;;) {
    Result<std::string_view> chunk =
        co_await (*stream)->Read(Clock::now() + t.options().request_timeout);
    if (!chunk.ok()) co_return chunk.status();
    if (chunk->empty()) break;
    pending.append(*chunk);
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      Result<json::Value> doc = json::Parse(std::string_view(pending).substr(start, nl - start));
      if (!doc.ok()) co_return Malformed("a search line is not JSON: " + doc.status().message());
      Result<SearchLine> line = DecodeSearchLine(*doc);
      if (!line.ok()) co_return line.status();
      if (SearchMatch* m = std::get_if<SearchMatch>(&*line)) {
        if (o.on_match) {
          Status s = o.on_match(*m);
          if (!s.ok()) {
            (*stream)->connection().Close();
            co_return s;
          }
        }
        out.matches.push_back(std::move(*m));
      } else {
        out.summary = std::get<SearchSummary>(*line);
        summarized = true;
      }
    }
    pending.erase(0, start);
    if (pending.size() > kMaxSearchLineBytes) {
      (*stream)->connection().Close();
      co_return Malformed("a search line is longer than " + std::to_string(kMaxSearchLineBytes) +
                          " bytes");
    }
  }
  if (!summarized || !pending.empty()) {
    co_return Malformed("the search stream ended without its summary line");
  }
  co_return out;
}

asio::awaitable<Result<GlobResponse>> GlobCall(Transport& t, std::string path, std::string pattern,
                                               WalkQuery query) {
  HttpRequest req;
  req.target = "/v1/fs/glob?path=" + PercentEncode(path, /*keep_slash=*/true) +
               "&pattern=" + PercentEncode(pattern, /*keep_slash=*/true) + WalkParams(query);
  req.idempotent = true;
  co_return DecodeAnswer<GlobResponse>(co_await t.Call(req), &DecodeGlobResponse);
}

}  // namespace agentd::client
