// The only client file that includes llhttp.
#include "http_response_parser.h"

#include <llhttp.h>

#include <algorithm>
#include <cctype>

namespace agentd::client {

const std::string* ResponseHead::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

namespace {
// Bounds what a misbehaving daemon can make the client hold for one head.
constexpr size_t kMaxHeadBytes = 64 * 1024;
}  // namespace

struct ResponseParser::Impl {
  llhttp_t parser;
  llhttp_settings_t settings;
  ResponseParser* owner = nullptr;
  bool head_request = false;
  size_t head_bytes = 0;
  std::string field, value;
  Progress* progress = nullptr;

  static Impl& Of(llhttp_t* p) { return *static_cast<Impl*>(p->data); }
  int Count(size_t n) {
    head_bytes += n;
    return head_bytes > kMaxHeadBytes ? -1 : 0;
  }
  static int OnHeaderField(llhttp_t* p, const char* at, size_t n) {
    Of(p).field.append(at, n);
    return Of(p).Count(n);
  }
  static int OnHeaderValue(llhttp_t* p, const char* at, size_t n) {
    Of(p).value.append(at, n);
    return Of(p).Count(n);
  }
  static int OnHeaderValueComplete(llhttp_t* p) {
    Impl& self = Of(p);
    std::transform(self.field.begin(), self.field.end(), self.field.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    self.owner->head_.headers.emplace_back(std::move(self.field), std::move(self.value));
    self.field.clear();
    self.value.clear();
    return 0;
  }
  static int OnHeadersComplete(llhttp_t* p) {
    Impl& self = Of(p);
    ResponseHead& head = self.owner->head_;
    head.status = p->status_code;
    head.keep_alive = llhttp_should_keep_alive(p) != 0;
    if (p->flags & F_CONTENT_LENGTH) head.content_length = p->content_length;
    self.progress->head_complete = true;
    if (p->status_code == 101) return 2;  // no body; the connection is upgraded
    return self.head_request ? 1 : 0;
  }
  static int OnBody(llhttp_t* p, const char* at, size_t n) {
    Of(p).progress->body.emplace_back(at, n);
    return 0;
  }
  static int OnMessageComplete(llhttp_t* p) {
    Of(p).progress->message_complete = true;
    return HPE_PAUSED;
  }
};

ResponseParser::ResponseParser() : impl_(std::make_unique<Impl>()) {
  impl_->owner = this;
  llhttp_settings_init(&impl_->settings);
  impl_->settings.on_header_field = &Impl::OnHeaderField;
  impl_->settings.on_header_value = &Impl::OnHeaderValue;
  impl_->settings.on_header_value_complete = &Impl::OnHeaderValueComplete;
  impl_->settings.on_headers_complete = &Impl::OnHeadersComplete;
  impl_->settings.on_body = &Impl::OnBody;
  impl_->settings.on_message_complete = &Impl::OnMessageComplete;
  Reset(false);
}

ResponseParser::~ResponseParser() = default;

void ResponseParser::Reset(bool head_request) {
  llhttp_init(&impl_->parser, HTTP_RESPONSE, &impl_->settings);
  impl_->parser.data = impl_.get();
  impl_->head_request = head_request;
  impl_->head_bytes = 0;
  impl_->field.clear();
  impl_->value.clear();
  head_ = ResponseHead{};
}

Result<ResponseParser::Progress> ResponseParser::Feed(std::string_view data) {
  Progress progress;
  impl_->progress = &progress;
  llhttp_errno_t err = llhttp_execute(&impl_->parser, data.data(), data.size());
  impl_->progress = nullptr;
  if (err == HPE_OK) {
    progress.consumed = data.size();
    return progress;
  }
  if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
    progress.consumed = static_cast<size_t>(llhttp_get_error_pos(&impl_->parser) - data.data());
    progress.upgraded = err == HPE_PAUSED_UPGRADE;
    if (progress.upgraded) progress.message_complete = true;
    return progress;
  }
  const char* reason = llhttp_get_error_reason(&impl_->parser);
  return Status::Error(ErrorCode::kProtocolError, std::string("malformed HTTP response: ") +
                                                      (reason ? reason : llhttp_errno_name(err)));
}

Result<ResponseParser::Progress> ResponseParser::Finish() {
  Progress progress;
  impl_->progress = &progress;
  llhttp_errno_t err = llhttp_finish(&impl_->parser);
  impl_->progress = nullptr;
  if (err == HPE_OK || err == HPE_PAUSED) return progress;
  return Status::Error(ErrorCode::kTransport, "the daemon closed the connection mid-response");
}

}  // namespace agentd::client
