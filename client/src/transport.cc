#include "transport.h"

#include <asio/experimental/as_tuple.hpp>
#include <charconv>
#include <optional>
#include <type_traits>

namespace agentd::client {
namespace {

constexpr size_t kMaxErrorBody = 1 << 20;
constexpr size_t kMaxHealthBody = 1 << 20;
// Bodies above this wait for "100 Continue" (see Exchange).
constexpr size_t kExpectContinueBytes = 1 << 20;
// How long to wait for "100 Continue" before sending the body anyway.
constexpr std::chrono::milliseconds kContinueWait{3000};

asio::awaitable<void> Sleep(asio::any_io_executor ex, std::chrono::milliseconds d) {
  asio::steady_timer t(ex, d);
  auto [ec] = co_await t.async_wait(asio::experimental::as_tuple(asio::use_awaitable));
  (void)ec;
}

// The major of a health `protocol`: 1, or a "1" / "1.2" string.
std::optional<int64_t> ProtocolMajor(const json::Value& v) {
  if (v.is_int()) return v.as_int();
  if (!v.is_string()) return std::nullopt;
  const std::string& text = v.as_string();
  int64_t major = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), major);
  if (ec != std::errc() || end == text.data() ||
      (end != text.data() + text.size() && *end != '.')) {
    return std::nullopt;
  }
  return major;
}

}  // namespace

bool IsRetryableStatus(int s) { return s == 500 || s == 502 || s == 503 || s == 504; }

bool IsRetryableFailure(const Status& s) {
  return s.code() == ErrorCode::kTransport || s.code() == ErrorCode::kDeadlineExceeded ||
         IsRetryableStatus(s.http_status());
}

const std::string* HttpResponse::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

ResponseStream::ResponseStream(Transport& transport, std::unique_ptr<HttpConnection> conn,
                               ResponseHead head)
    : counts_(transport.counts_), conn_(std::move(conn)), head_(std::move(head)) {
  conn_->set_blocking_wait(false);  // read by its caller, maybe beside other work
  ++counts_->open_streams;
}

ResponseStream::~ResponseStream() {
  --counts_->open_streams;
  if (done_ && conn_ && counts_->owner) counts_->owner->Recycle(std::move(conn_));
}

asio::awaitable<Result<std::string_view>> ResponseStream::Read(Deadline deadline) {
  Result<std::string_view> chunk = co_await conn_->ReadBody(deadline);
  if (chunk.ok() && chunk->empty()) done_ = true;
  co_return chunk;
}

Result<std::string_view> ResponseStream::ReadBlocking(Deadline deadline) {
  Result<std::string_view> chunk = conn_->ReadBodyBlocking(deadline);
  if (chunk.ok() && chunk->empty()) done_ = true;
  return chunk;
}

asio::awaitable<Result<uint64_t>> ResponseStream::ReadToFd(
    int fd, std::chrono::milliseconds wait, const std::function<void(uint64_t)>& progress) {
  Result<uint64_t> n = co_await conn_->ReadBodyToFd(fd, wait, progress);
  if (n.ok()) done_ = true;
  co_return n;
}

Transport::Transport(asio::any_io_executor executor, ClientOptions options)
    : executor_(std::move(executor)),
      options_(std::move(options)),
      counts_(std::make_shared<TransportCounts>()) {
  counts_->owner = this;
  Result<Endpoint> e = ParseUrl(options_.url);
  if (e.ok()) {
    endpoint_ = std::move(*e);
  } else {
    endpoint_status_ = e.status();
  }
}

Transport::~Transport() { counts_->owner = nullptr; }

std::chrono::milliseconds Transport::Backoff(int attempt) {
  auto base = options_.backoff_initial.count();
  for (int i = 1; i < attempt && base < options_.backoff_max.count(); ++i) base *= 2;
  base = std::min<long long>(base, options_.backoff_max.count());
  // Full jitter in [base/2, base]: spreads a fleet's retries apart.
  std::uniform_int_distribution<long long> jitter(base / 2, std::max<long long>(base, 1));
  return std::chrono::milliseconds(jitter(rng_));
}

void Transport::Recycle(std::unique_ptr<HttpConnection> conn) {
  if (conn && conn->reusable() && idle_.size() < options_.max_idle_connections) {
    idle_.push_back(std::move(conn));
  }
}

asio::awaitable<Result<std::unique_ptr<HttpConnection>>> Transport::Acquire(Deadline deadline,
                                                                            bool check_idle,
                                                                            bool* reused) {
  *reused = false;
  while (!idle_.empty()) {
    std::unique_ptr<HttpConnection> conn = std::move(idle_.back());
    idle_.pop_back();
    if (!conn->open()) continue;
    // Unchecked, a close by the daemon shows on the exchange. (Exchange
    // sets the connection's blocking wait for its own request.)
    *reused = !check_idle;
    if (!check_idle || !conn->PeerClosed()) co_return conn;
  }
  auto conn = std::make_unique<HttpConnection>(executor_);
  Status s = co_await conn->Connect(endpoint_,
                                    std::min(deadline, Clock::now() + options_.connect_timeout));
  if (!s.ok()) co_return s;
  co_return conn;
}

std::string Transport::RequestHead(const HttpRequest& request, bool expect_continue) const {
  std::string head = request.method + " " + request.target +
                     " HTTP/1.1\r\nHost: " + endpoint_.HostHeader() +
                     "\r\nUser-Agent: agentd-client/1\r\n";
  if (!options_.token.empty()) head += "Authorization: Bearer " + options_.token + "\r\n";
  if (!request.content_type.empty()) head += "Content-Type: " + request.content_type + "\r\n";
  if (request.source) {
    head += "Transfer-Encoding: chunked\r\n";
  } else if (request.file.fd >= 0) {
    head += "Content-Length: " + std::to_string(request.file.length) + "\r\n";
  } else if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    head += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  }
  if (expect_continue) head += "Expect: 100-continue\r\n";
  for (const auto& [name, value] : request.headers) head += name + ": " + value + "\r\n";
  head += "\r\n";
  return head;
}

asio::awaitable<Status> Transport::SendBody(HttpConnection& c, const HttpRequest& request,
                                            Deadline deadline) {
  if (request.file.fd >= 0)
    co_return co_await c.SendFile(request.file.fd, request.file.length, deadline);
  if (!request.source) co_return co_await c.Write(std::string_view(request.body), deadline);
  for (;;) {
    Result<std::string_view> chunk = co_await request.source();
    if (!chunk.ok()) {
      c.Close();
      co_return chunk.status();
    }
    char size_line[24];
    auto [end, ec] = std::to_chars(size_line, size_line + 16, chunk->size(), 16);
    *end++ = '\r';
    *end++ = '\n';
    std::vector<asio::const_buffer> buffers{
        asio::buffer(size_line, static_cast<size_t>(end - size_line)), asio::buffer(*chunk),
        asio::buffer("\r\n", 2)};
    Status s = co_await c.Write(std::move(buffers), deadline);
    if (!s.ok()) co_return s;
    if (chunk->empty()) co_return Status::Ok();
  }
}

asio::awaitable<Result<Transport::Attempt>> Transport::Exchange(const HttpRequest& request,
                                                                Deadline deadline, bool* sent,
                                                                bool may_block, bool check_idle,
                                                                bool* reused) {
  *sent = false;
  Result<std::unique_ptr<HttpConnection>> conn = co_await Acquire(deadline, check_idle, reused);
  if (!conn.ok()) co_return conn.status();
  HttpConnection& c = **conn;
  c.set_blocking_wait(may_block && blocking_waits_ && counts_->in_flight == 1 &&
                      counts_->open_streams == 0 && !request.source && request.file.fd < 0);
  // A large or streamed body waits for "100 Continue", so a refusal the
  // daemon makes from the head alone (507 for a size beyond free space,
  // 413, 401) arrives before any of it is sent, and is not lost to a
  // connection the daemon closes while the body is still in flight.
  bool expect = request.source || request.body.size() > kExpectContinueBytes ||
                (request.file.fd >= 0 && request.file.length > kExpectContinueBytes);
  std::string head = RequestHead(request, expect);
  *sent = true;
  if (!expect && request.file.fd >= 0) {
    Status s = co_await c.Write(head, deadline);
    if (s.ok()) s = co_await SendBody(c, request, deadline);
    if (!s.ok()) co_return s;
  } else if (!expect) {
    std::vector<asio::const_buffer> buffers{asio::buffer(head), asio::buffer(request.body)};
    Status s = co_await c.Write(std::move(buffers), deadline);
    if (!s.ok()) co_return s;
  } else {
    Status s = co_await c.Write(head, deadline);
    if (!s.ok()) co_return s;
    Deadline wait = std::min(deadline, Clock::now() + kContinueWait);
    Result<ResponseHead> interim = co_await c.ReadHead(false, wait, /*keep_on_timeout=*/true);
    bool proceed = false;
    if (interim.ok() && interim->status == 100) {
      proceed = true;
    } else if (interim.ok()) {
      c.DiscardAfterUse();  // answered without the body: do not reuse
      co_return Attempt{std::move(*conn), std::move(*interim)};
    } else if (interim.status().code() == ErrorCode::kDeadlineExceeded) {
      proceed = true;  // a server that ignores Expect: send anyway, as RFC 9110 says
    } else {
      co_return interim.status();
    }
    if (proceed) {
      s = co_await SendBody(c, request, deadline);
      if (!s.ok()) co_return s;
    }
  }
  Result<ResponseHead> response = co_await c.ReadHead(request.method == "HEAD", deadline);
  if (!response.ok()) co_return response.status();
  co_return Attempt{std::move(*conn), std::move(*response)};
}

void Transport::NoteHealth(const json::Value& health) {
  const json::Value* protocol = health.Find("protocol");
  std::optional<int64_t> major = protocol ? ProtocolMajor(*protocol) : std::nullopt;
  if (!major) return;
  if (*major == kClientProtocolMajor) {
    protocol_ok_ = true;
    mismatch_ = Status::Ok();
    return;
  }
  const json::Value* version = health.Find("version");
  std::string daemon_version = version && version->is_string() ? version->as_string() : "";
  std::string named = protocol->is_int() ? std::to_string(*major) : protocol->as_string();
  mismatch_ =
      Status::Error(ErrorCode::kProtocolMismatch,
                    "the daemon at " + options_.url + " speaks protocol " + named +
                        (daemon_version.empty() ? "" : " (agentd " + daemon_version + ")") +
                        "; this client speaks protocol " + std::to_string(kClientProtocolMajor))
          .With("daemon_protocol", *protocol)
          .With("client_protocol", kClientProtocolMajor)
          .With("daemon_version", daemon_version);
}

asio::awaitable<Status> Transport::EnsureProtocol() {
  if (protocol_ok_ || !mismatch_.ok()) co_return mismatch_;
  HttpRequest req;
  req.target = "/v1/health";
  Deadline deadline = Clock::now() + options_.request_timeout;
  bool sent = false;
  bool reused = false;
  Result<Attempt> a = co_await Exchange(req, deadline, &sent, /*may_block=*/true,
                                        /*check_idle=*/true, &reused);
  if (!a.ok()) co_return Status::Ok();  // no answer: the call itself retries and reports
  Result<std::string> body = co_await a->conn->ReadBodyAll(kMaxHealthBody, deadline);
  if (!body.ok()) co_return Status::Ok();
  Recycle(std::move(a->conn));
  Result<json::Value> doc = json::Parse(*body);
  if (doc.ok() && doc->is_object()) NoteHealth(*doc);
  co_return mismatch_;
}

template <typename T>
asio::awaitable<Result<T>> Transport::WithRetries(const HttpRequest& request,
                                                  AnswerReader<T> read_answer) {
  if (!endpoint_status_.ok()) co_return endpoint_status_;
  struct InFlight {
    std::shared_ptr<TransportCounts> counts;  // the frame may outlive the Transport
    explicit InFlight(std::shared_ptr<TransportCounts> c) : counts(std::move(c)) {
      ++counts->in_flight;
    }
    ~InFlight() { --counts->in_flight; }
  } in_flight(counts_);
  // A whole answer read by Call may wait in poll(2); an opened stream not.
  constexpr bool kMayBlock = std::is_same_v<T, HttpResponse>;
  if (!protocol_ok_ && !request.target.starts_with("/v1/health")) {
    Status s = co_await EnsureProtocol();
    if (!s.ok()) co_return s;
  }
  // An idle connection is checked for a close by the daemon (a peek)
  // before it carries a request that must not be sent twice. A request
  // that may (idempotent, its body in memory or a file) goes out on it
  // unchecked: a connection the daemon closed meanwhile fails the exchange
  // before any answer (EOF, ECONNRESET, EPIPE), and the request is sent
  // again at once on a checked or new connection, without counting an
  // attempt (the daemon cannot have answered it: nothing came back).
  bool resendable = request.idempotent && !request.source;
  bool check_idle = !resendable;
  for (int attempt = 1;; ++attempt) {
    if (attempt > 1) co_await Sleep(executor_, Backoff(attempt - 1));
    Deadline deadline = Clock::now() + options_.request_timeout + request.extra_wait;
    bool sent = false;
    bool reused = false;
    Result<Attempt> a = co_await Exchange(request, deadline, &sent, kMayBlock, check_idle, &reused);
    if (!a.ok() && reused && a.status().code() == ErrorCode::kTransport) {
      check_idle = true;  // the other idle connections may be gone as well
      a = co_await Exchange(request, deadline, &sent, kMayBlock, check_idle, &reused);
    }
    // A streamed body cannot be sent again once any of it went out.
    bool may_retry = attempt < options_.max_attempts && !(request.source && sent);
    if (!a.ok()) {
      // A local file that is shorter than declared (io_error) would be
      // again: only the connection's faults are retried.
      bool local = a.status().code() == ErrorCode::kIoError;
      if (may_retry && !local && (!sent || request.idempotent)) continue;
      co_return a.status();
    }
    bool retryable = false;
    Result<T> answer = co_await read_answer(std::move(*a), deadline, &retryable);
    if (answer.ok() || !(may_retry && request.idempotent && retryable)) co_return answer;
  }
}

asio::awaitable<Result<std::unique_ptr<ResponseStream>>> Transport::OpenAnswer(Attempt a,
                                                                               Deadline deadline,
                                                                               bool* retryable) {
  int status = a.head.status;
  // 101: the connection now carries another protocol (a tunnel).
  if ((status >= 200 && status < 300) || status == 101) {
    co_return std::make_unique<ResponseStream>(*this, std::move(a.conn), std::move(a.head));
  }
  // An error answer: read its (bounded) JSON body into a Status.
  Result<std::string> body = co_await a.conn->ReadBodyAll(kMaxErrorBody, deadline);
  Recycle(std::move(a.conn));
  *retryable = IsRetryableStatus(status);
  co_return StatusFromErrorBody(status, body.ok() ? *body : std::string());
}

asio::awaitable<Result<HttpResponse>> Transport::CallAnswer(Attempt a, Deadline deadline,
                                                            size_t max_body,
                                                            const HttpRequest& request,
                                                            bool* retryable) {
  int status = a.head.status;
  bool success = status >= 200 && status < 300;
  Result<std::string> body =
      co_await a.conn->ReadBodyAll(success ? max_body : kMaxErrorBody, deadline);
  if (!body.ok()) {
    *retryable = true;  // the answer was cut short: ask again (when idempotent)
    co_return body.status();
  }
  HttpResponse response{status, std::move(a.head.headers), std::move(*body)};
  Recycle(std::move(a.conn));
  if (success || (request.answer_if && request.answer_if(status, response.body))) {
    co_return response;
  }
  *retryable = IsRetryableStatus(status);
  co_return StatusFromErrorBody(status, response.body);
}

asio::awaitable<Result<std::unique_ptr<ResponseStream>>> Transport::Open(
    const HttpRequest& request) {
  co_return co_await WithRetries<std::unique_ptr<ResponseStream>>(
      request, [this](Attempt a, Deadline deadline, bool* retryable) {
        return OpenAnswer(std::move(a), deadline, retryable);
      });
}

asio::awaitable<Result<HttpResponse>> Transport::Call(const HttpRequest& request, size_t max_body) {
  co_return co_await WithRetries<HttpResponse>(
      request, [this, max_body, &request](Attempt a, Deadline deadline, bool* retryable) {
        return CallAnswer(std::move(a), deadline, max_body, request, retryable);
      });
}

}  // namespace agentd::client
