#include "agentd/protocol/sse.h"

#include <cstring>

namespace agentd {
namespace {

// Offset of the first CR or LF at or after `from` (or the size): two memchr
// scans, not string_view::find_first_of, which tests the set per byte.
size_t LineEnd(std::string_view bytes, size_t from) {
  const char* begin = bytes.data() + from;
  size_t len = bytes.size() - from;
  const void* lf = std::memchr(begin, '\n', len);
  if (lf != nullptr) len = static_cast<size_t>(static_cast<const char*>(lf) - begin);
  const void* cr = std::memchr(begin, '\r', len);
  if (cr != nullptr) len = static_cast<size_t>(static_cast<const char*>(cr) - begin);
  return from + len;
}

}  // namespace

void AppendSseEventStart(std::string& out, std::string_view event) {
  out += "event: ";
  out += event;
  out += "\ndata: ";
}

void AppendSseEventEnd(std::string& out, std::string_view id) {
  out += "\nid: ";
  out += id;
  out += "\n\n";
}

void AppendSseEvent(std::string& out, std::string_view event, std::string_view data,
                    std::string_view id) {
  out.reserve(out.size() + event.size() + data.size() + id.size() + 24);
  AppendSseEventStart(out, event);
  out += data;
  AppendSseEventEnd(out, id);
}

void AppendSseComment(std::string& out, std::string_view text) {
  out += ": ";
  out += text;
  out += "\n\n";
}

bool SseDecoder::Feed(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    char c = bytes[i];
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') {
        ++i;
        continue;
      }
    }
    if (c == '\n' || c == '\r') {
      skip_lf_ = (c == '\r');
      Line(line_);
      line_.clear();
      ++i;
      continue;
    }
    // Copy the run of ordinary bytes up to the next line end in one go.
    size_t end = LineEnd(bytes, i);
    if (line_.size() + (end - i) > kMaxLineBytes) return false;
    line_.append(bytes.substr(i, end - i));
    i = end;
  }
  return true;
}

void SseDecoder::Line(std::string_view line) {
  if (line.empty()) {
    Dispatch();
    return;
  }
  if (line.front() == ':') return;  // comment
  std::string_view field = line;
  std::string_view value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "event") {
    event_ = value;
  } else if (field == "data") {
    if (has_data_) data_ += '\n';
    data_ += value;
    has_data_ = true;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_id_ = value;
  }
  // "retry" and unknown fields are ignored, as the standard says.
}

void SseDecoder::Dispatch() {
  if (has_data_) {
    SseEvent ev;
    ev.event = event_.empty() ? "message" : event_;
    ev.data = std::move(data_);
    ev.id = last_id_;
    sink_(std::move(ev));
  }
  data_.clear();
  has_data_ = false;
  event_.clear();
}

}  // namespace agentd
