// The only cli file that includes llhttp.
#include "mcp_http_request.h"

#include <llhttp.h>

#include <algorithm>
#include <cctype>

namespace agentd::cli::mcp {
namespace {
constexpr size_t kMaxHeadBytes = 64 * 1024;
}  // namespace

const std::string* HttpRequest::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

struct RequestParser::Impl {
  llhttp_t parser;
  llhttp_settings_t settings;
  size_t max_body = 0;
  size_t head_bytes = 0;
  bool complete = false;
  bool too_large = false;
  std::string field, value;
  HttpRequest request;

  static Impl& Of(llhttp_t* p) { return *static_cast<Impl*>(p->data); }
  int Count(size_t n) {
    head_bytes += n;
    return head_bytes > kMaxHeadBytes ? -1 : 0;
  }
  static int OnUrl(llhttp_t* p, const char* at, size_t n) {
    Of(p).request.target.append(at, n);
    return Of(p).Count(n);
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
    self.request.headers.emplace_back(std::move(self.field), std::move(self.value));
    self.field.clear();
    self.value.clear();
    return 0;
  }
  static int OnHeadersComplete(llhttp_t* p) {
    Impl& self = Of(p);
    self.request.method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
    self.request.keep_alive = llhttp_should_keep_alive(p) != 0;
    return 0;
  }
  static int OnBody(llhttp_t* p, const char* at, size_t n) {
    Impl& self = Of(p);
    if (self.request.body.size() + n > self.max_body) {
      self.too_large = true;
      return -1;
    }
    self.request.body.append(at, n);
    return 0;
  }
  static int OnMessageComplete(llhttp_t* p) {
    Of(p).complete = true;
    return HPE_PAUSED;
  }
  void Reset() {
    llhttp_init(&parser, HTTP_REQUEST, &settings);
    parser.data = this;
    head_bytes = 0;
    complete = false;
    field.clear();
    value.clear();
    request = HttpRequest{};
  }
};

RequestParser::RequestParser(size_t max_body) : impl_(std::make_unique<Impl>()) {
  impl_->max_body = max_body;
  llhttp_settings_init(&impl_->settings);
  impl_->settings.on_url = &Impl::OnUrl;
  impl_->settings.on_header_field = &Impl::OnHeaderField;
  impl_->settings.on_header_value = &Impl::OnHeaderValue;
  impl_->settings.on_header_value_complete = &Impl::OnHeaderValueComplete;
  impl_->settings.on_headers_complete = &Impl::OnHeadersComplete;
  impl_->settings.on_body = &Impl::OnBody;
  impl_->settings.on_message_complete = &Impl::OnMessageComplete;
  impl_->Reset();
}

RequestParser::~RequestParser() = default;

Result<size_t> RequestParser::Feed(std::string_view data) {
  llhttp_errno_t err = llhttp_execute(&impl_->parser, data.data(), data.size());
  if (err == HPE_OK) return data.size();
  if (err == HPE_PAUSED)
    return static_cast<size_t>(llhttp_get_error_pos(&impl_->parser) - data.data());
  if (impl_->too_large) {
    return Status::Error(ErrorCode::kPayloadTooLarge,
                         "a request body is at most " + std::to_string(impl_->max_body) + " bytes");
  }
  const char* reason = llhttp_get_error_reason(&impl_->parser);
  return Status::InvalidRequest(std::string("malformed HTTP request: ") +
                                (reason ? reason : llhttp_errno_name(err)));
}

bool RequestParser::complete() const { return impl_->complete; }

HttpRequest RequestParser::Take() {
  HttpRequest r = std::move(impl_->request);
  impl_->Reset();
  return r;
}

}  // namespace agentd::cli::mcp
