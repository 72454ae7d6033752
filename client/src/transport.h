// Transport: requests over a pool of keep-alive connections, with the
// retry policy of the client library.
//
// Retry policy (docs/CLIENT.md): a request whose connection could not be
// made is retried whatever it is (nothing was sent). After bytes were sent,
// only an idempotent request is retried, on a lost connection, a deadline,
// or a 500/502/503/504 answer, with the same method, target and body, up to
// ClientOptions::max_attempts with jittered exponential backoff. Non-2xx
// answers become the daemon's Status (code, message, details, HTTP status).
// Used on one executor; not thread-safe.
#pragma once

#include <asio.hpp>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agentd/client/options.h"
#include "agentd/protocol/json.h"
#include "http_connection.h"

namespace agentd::client {

// A streamed request body: returns the next chunk, empty at the end.
using BodySource = std::function<asio::awaitable<Result<std::string_view>>()>;

// A request body taken from an open regular file: its first `length`
// bytes, sent with Content-Length by sendfile(2), so they never pass
// through the client's memory. Each attempt sends from offset 0 again.
struct FileBody {
  int fd = -1;  // not owned
  uint64_t length = 0;
};

struct HttpRequest {
  std::string method = "GET";
  std::string target;
  Headers headers;
  std::string body;   // used when `source` is empty
  BodySource source;  // streamed with chunked encoding; never retried once started
  FileBody file;      // used when file.fd >= 0 (and `source` is empty)
  std::string content_type;
  bool idempotent = false;
  // Added to the per-attempt deadline (a long poll's wait).
  std::chrono::milliseconds extra_wait{0};
  // A non-2xx answer whose status and body this accepts is the call's
  // answer: returned by Call, neither retried nor made a Status (health's
  // 503 document, docs/CLIENT.md, "Health").
  std::function<bool(int status, std::string_view body)> answer_if;
};

struct HttpResponse {
  int status = 0;
  Headers headers;
  std::string body;
  const std::string* Header(std::string_view lower_name) const;
};

// A JSON answer decoded by `decode`; a transport error or a body that is
// not JSON comes back as the Status.
template <typename T>
Result<T> DecodeAnswer(const Result<HttpResponse>& r, Result<T> (*decode)(const json::Value&)) {
  if (!r.ok()) return r.status();
  Result<json::Value> doc = json::Parse(r->body);
  if (!doc.ok()) {
    return Status::Error(ErrorCode::kProtocolError,
                         "the daemon's answer is not JSON: " + doc.status().message());
  }
  return decode(*doc);
}

class Transport;

// What a Transport counts of its requests and streams, shared with the
// coroutine frames and streams that change the counts: those can outlive
// the Transport (a caller that stops its io_context destroys a suspended
// call's frame with the io_context, after the client), and then must
// touch only this. `owner` is null once the Transport is gone.
struct TransportCounts {
  Transport* owner = nullptr;
  int in_flight = 0;     // requests between WithRetries' start and end
  int open_streams = 0;  // ResponseStreams alive
};

// An answer whose body is read by the caller as it arrives (raw output,
// event streams, downloads). Returns its connection to the pool when the
// body was read to the end.
class ResponseStream {
 public:
  ResponseStream(Transport& transport, std::unique_ptr<HttpConnection> conn, ResponseHead head);
  ~ResponseStream();
  const ResponseHead& head() const { return head_; }
  // The next chunk, empty at the end; `deadline` bounds the wait for it.
  asio::awaitable<Result<std::string_view>> Read(Deadline deadline);
  // The same from a worker thread, blocking, while no coroutine uses the
  // stream (HttpConnection::ReadBodyBlocking).
  Result<std::string_view> ReadBlocking(Deadline deadline);
  // The whole rest of the body into `fd` (HttpConnection::ReadBodyToFd).
  asio::awaitable<Result<uint64_t>> ReadToFd(int fd, std::chrono::milliseconds wait,
                                             const std::function<void(uint64_t)>& progress);
  HttpConnection& connection() { return *conn_; }

 private:
  std::shared_ptr<TransportCounts> counts_;
  std::unique_ptr<HttpConnection> conn_;
  ResponseHead head_;
  bool done_ = false;
};

class Transport {
 public:
  Transport(asio::any_io_executor executor, ClientOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const ClientOptions& options() const { return options_; }
  asio::any_io_executor executor() const { return executor_; }
  void set_token(std::string token) { options_.token = std::move(token); }
  // The synchronous Client's transport: a request/answer call (no streamed
  // or file body, not an open stream) that is the only request in flight
  // and has no response stream open beside it waits for its answer in
  // poll(2) on the calling thread (HttpConnection::set_blocking_wait). Its
  // io_context then has nothing else of this client's to run meanwhile.
  void set_blocking_waits(bool on) { blocking_waits_ = on; }

  // The whole exchange; the body is bounded by `max_body` bytes.
  asio::awaitable<Result<HttpResponse>> Call(const HttpRequest& request,
                                             size_t max_body = 64u << 20);
  // Sends the request and reads the head; a 2xx (or 101) answer is
  // returned as a stream, anything else as the daemon's Status. Retried like Call until
  // the head arrives.
  asio::awaitable<Result<std::unique_ptr<ResponseStream>>> Open(const HttpRequest& request);

  // Records the protocol a health answer names (docs/CLIENT.md, "Version
  // negotiation"): this client's major is accepted from then on, another
  // one refuses every later call. No protocol member: nothing learnt.
  void NoteHealth(const json::Value& health);

  // The delay before attempt `attempt` (1-based retries), jittered.
  std::chrono::milliseconds Backoff(int attempt);
  void Recycle(std::unique_ptr<HttpConnection> conn);

 private:
  struct Attempt {
    std::unique_ptr<HttpConnection> conn;
    ResponseHead head;
  };
  // Reads what one attempt answered into the caller's result; sets
  // *retryable when the retry policy may ask again (a retryable status, an
  // answer cut short).
  template <typename T>
  using AnswerReader = std::function<asio::awaitable<Result<T>>(Attempt, Deadline, bool*)>;

  // The retry policy (see the top of this file), once for Call and Open:
  // attempts with backoff until `read_answer` succeeds or may not retry.
  template <typename T>
  asio::awaitable<Result<T>> WithRetries(const HttpRequest& request, AnswerReader<T> read_answer);
  asio::awaitable<Result<std::unique_ptr<ResponseStream>>> OpenAnswer(Attempt a, Deadline deadline,
                                                                      bool* retryable);
  asio::awaitable<Result<HttpResponse>> CallAnswer(Attempt a, Deadline deadline, size_t max_body,
                                                   const HttpRequest& request, bool* retryable);
  // One attempt: connection, request, response head. `sent` reports whether
  // any byte of the request reached the socket.
  asio::awaitable<Result<Attempt>> Exchange(const HttpRequest& request, Deadline deadline,
                                            bool* sent, bool may_block, bool check_idle,
                                            bool* reused);
  // An idle connection (checked for a close by the daemon when
  // `check_idle`; *reused then says one was taken unchecked) or a new one.
  asio::awaitable<Result<std::unique_ptr<HttpConnection>>> Acquire(Deadline deadline,
                                                                   bool check_idle, bool* reused);
  // On first use: one GET /v1/health (not retried; no readable answer
  // decides nothing). Answers protocol_mismatch for another major.
  asio::awaitable<Status> EnsureProtocol();
  std::string RequestHead(const HttpRequest& request, bool expect_continue) const;
  asio::awaitable<Status> SendBody(HttpConnection& c, const HttpRequest& request,
                                   Deadline deadline);

  asio::any_io_executor executor_;
  ClientOptions options_;
  Endpoint endpoint_;
  Status endpoint_status_;
  std::vector<std::unique_ptr<HttpConnection>> idle_;
  std::mt19937 rng_{std::random_device{}()};
  bool blocking_waits_ = false;
  std::shared_ptr<TransportCounts> counts_;
  friend class ResponseStream;
  bool protocol_ok_ = false;
  Status mismatch_;  // ok until a health named another protocol major
};

// The protocol major this client speaks (docs/PROTOCOL.md, "Compatibility").
inline constexpr int64_t kClientProtocolMajor = 1;

bool IsRetryableStatus(int http_status);
// A failure after which a whole operation (an event stream, a tree
// transfer) may start again: a lost connection, a deadline, a retryable
// status. The one predicate of the restart loops above the transport.
bool IsRetryableFailure(const Status& s);

}  // namespace agentd::client
