// The only file that includes llhttp.
#include "server/http_parser.h"

#include <llhttp.h>

#include <algorithm>
#include <cctype>

namespace agentd {

const std::string* RequestHead::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

struct RequestParser::Impl {
  llhttp_t parser;
  llhttp_settings_t settings;
  RequestParser* owner;
  size_t max_header_bytes;
  size_t max_header_count;
  size_t header_bytes = 0;
  std::string field;
  std::string value;
  Progress* progress = nullptr;
  Status user_error;  // why a callback refused the request

  static Impl& Of(llhttp_t* p) { return *static_cast<Impl*>(p->data); }

  int CountHeaderBytes(size_t n) {
    header_bytes += n;
    if (header_bytes > max_header_bytes) {
      user_error =
          Status::Error(ErrorCode::kHeadersTooLarge,
                        "request headers exceed " + std::to_string(max_header_bytes) + " bytes")
              .With("limit", max_header_bytes);
      return -1;
    }
    return 0;
  }

  static int OnMessageBegin(llhttp_t* p) {
    Impl& self = Of(p);
    self.owner->head_ = RequestHead{};
    self.owner->in_message_ = true;
    self.header_bytes = 0;
    self.field.clear();
    self.value.clear();
    return 0;
  }
  static int OnUrl(llhttp_t* p, const char* at, size_t n) {
    Impl& self = Of(p);
    self.owner->head_.target.append(at, n);
    return self.CountHeaderBytes(n);
  }
  static int OnHeaderField(llhttp_t* p, const char* at, size_t n) {
    Impl& self = Of(p);
    self.field.append(at, n);
    return self.CountHeaderBytes(n);
  }
  static int OnHeaderValue(llhttp_t* p, const char* at, size_t n) {
    Impl& self = Of(p);
    self.value.append(at, n);
    return self.CountHeaderBytes(n);
  }
  static int OnHeaderValueComplete(llhttp_t* p) {
    Impl& self = Of(p);
    RequestHead& head = self.owner->head_;
    if (head.headers.size() >= self.max_header_count) {
      self.user_error = Status::Error(ErrorCode::kHeadersTooLarge,
                                      "request has more than " +
                                          std::to_string(self.max_header_count) + " header lines")
                            .With("limit_count", self.max_header_count);
      return -1;
    }
    std::transform(self.field.begin(), self.field.end(), self.field.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    head.headers.emplace_back(std::move(self.field), std::move(self.value));
    self.field.clear();
    self.value.clear();
    return self.CountHeaderBytes(4);  // ": " and CRLF
  }
  static int OnHeadersComplete(llhttp_t* p) {
    Impl& self = Of(p);
    RequestHead& head = self.owner->head_;
    head.method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
    head.http_major = p->http_major;
    head.http_minor = p->http_minor;
    head.keep_alive = llhttp_should_keep_alive(p) != 0;
    head.upgrade = p->upgrade != 0;
    head.chunked = (p->flags & F_CHUNKED) != 0;
    if (p->flags & F_CONTENT_LENGTH) head.content_length = p->content_length;
    self.progress->head_complete = true;
    return 0;
  }
  static int OnBody(llhttp_t* p, const char* at, size_t n) {
    Of(p).progress->body.emplace_back(at, n);
    return 0;
  }
  static int OnMessageComplete(llhttp_t* p) {
    Impl& self = Of(p);
    self.progress->message_complete = true;
    self.owner->in_message_ = false;
    return HPE_PAUSED;  // one request at a time: stop before the next one
  }
};

RequestParser::RequestParser(size_t max_header_bytes, size_t max_header_count)
    : impl_(std::make_unique<Impl>()) {
  Impl& i = *impl_;
  i.owner = this;
  i.max_header_bytes = max_header_bytes;
  i.max_header_count = max_header_count;
  llhttp_settings_init(&i.settings);
  i.settings.on_message_begin = &Impl::OnMessageBegin;
  i.settings.on_url = &Impl::OnUrl;
  i.settings.on_header_field = &Impl::OnHeaderField;
  i.settings.on_header_value = &Impl::OnHeaderValue;
  i.settings.on_header_value_complete = &Impl::OnHeaderValueComplete;
  i.settings.on_headers_complete = &Impl::OnHeadersComplete;
  i.settings.on_body = &Impl::OnBody;
  i.settings.on_message_complete = &Impl::OnMessageComplete;
  llhttp_init(&i.parser, HTTP_REQUEST, &i.settings);
  i.parser.data = &i;
}

RequestParser::~RequestParser() = default;

void RequestParser::NextMessage() {
  if (llhttp_get_errno(&impl_->parser) == HPE_PAUSED) llhttp_resume(&impl_->parser);
}

std::optional<uint64_t> RequestParser::BodyLeft() const {
  if (!in_message_ || head_.chunked || !head_.content_length) return std::nullopt;
  // llhttp counts a Content-Length body down as it consumes it.
  return impl_->parser.content_length;
}

Result<RequestParser::Progress> RequestParser::Feed(std::string_view data) {
  Progress progress;
  impl_->progress = &progress;
  llhttp_errno_t err = llhttp_execute(&impl_->parser, data.data(), data.size());
  impl_->progress = nullptr;
  switch (err) {
    case HPE_OK:
      progress.consumed = data.size();
      return progress;
    case HPE_PAUSED:
    case HPE_PAUSED_UPGRADE:
      progress.consumed = static_cast<size_t>(llhttp_get_error_pos(&impl_->parser) - data.data());
      return progress;
    default:
      break;
  }
  if (!impl_->user_error.ok()) return impl_->user_error;
  const char* reason = llhttp_get_error_reason(&impl_->parser);
  return Status::InvalidRequest(std::string("malformed HTTP request: ") +
                                (reason ? reason : llhttp_errno_name(err)))
      .With("parser_error", llhttp_errno_name(err));
}

}  // namespace agentd
