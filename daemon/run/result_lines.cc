#include "run/result_lines.h"

#include "agentd/protocol/run.h"

namespace agentd {
namespace {

constexpr size_t kTailBytes = kRunOutputBytes - kRunHeadBytes;

}  // namespace

ResultLines::ResultLines(std::string marker, uint64_t skipped)
    : marker_(std::move(marker)), skipped_(skipped) {}

void ResultLines::Emit(std::string_view bytes) {
  emitted_ += bytes.size();
  if (skipped_ == 0 && head_.size() < kRunHeadBytes) {
    size_t n = std::min(bytes.size(), kRunHeadBytes - head_.size());
    head_.append(bytes.substr(0, n));
  }
  // The window keeps up to kRunOutputBytes so that a stream that turns out
  // short enough is answered whole from it.
  tail_.append(bytes);
  if (tail_.size() > 2 * kRunOutputBytes) tail_.erase(0, tail_.size() - kRunOutputBytes);
}

void ResultLines::EndResultLine() {
  found_ = true;
  if (result_bytes_ > kRunResultLineBytes) {
    result_.reset();
    error_ = "the result line is " + std::to_string(result_bytes_) + " bytes, more than " +
             std::to_string(kRunResultLineBytes);
  } else {
    std::string_view value = std::string_view(pending_).substr(marker_.size());
    if (!value.empty() && value.back() == '\r') value.remove_suffix(1);
    Result<json::Value> doc = json::Parse(value);
    if (doc.ok()) {
      result_ = std::move(*doc);
      error_.reset();
    } else {
      result_.reset();
      error_ = "the result line is not JSON: " + doc.status().message();
    }
  }
  pending_.clear();
  result_bytes_ = 0;
  state_ = State::kLineStart;
}

void ResultLines::Feed(std::string_view bytes) {
  while (!bytes.empty()) {
    switch (state_) {
      case State::kLineStart: {
        size_t want = marker_.size() - pending_.size();
        size_t nl = bytes.substr(0, want).find('\n');
        if (nl != std::string_view::npos) {
          // A line shorter than the marker: output.
          pending_.append(bytes.substr(0, nl + 1));
          Emit(pending_);
          pending_.clear();
          bytes.remove_prefix(nl + 1);
          break;
        }
        size_t n = std::min(want, bytes.size());
        pending_.append(bytes.substr(0, n));
        bytes.remove_prefix(n);
        if (pending_.size() < marker_.size()) break;  // wait for more
        if (pending_ == marker_) {
          state_ = State::kResult;
          result_bytes_ = pending_.size();
        } else {
          Emit(pending_);
          pending_.clear();
          state_ = State::kPassing;
        }
        break;
      }
      case State::kPassing: {
        size_t nl = bytes.find('\n');
        size_t n = nl == std::string_view::npos ? bytes.size() : nl + 1;
        Emit(bytes.substr(0, n));
        bytes.remove_prefix(n);
        if (nl != std::string_view::npos) state_ = State::kLineStart;
        break;
      }
      case State::kResult: {
        size_t nl = bytes.find('\n');
        size_t n = nl == std::string_view::npos ? bytes.size() : nl;
        result_bytes_ += n;
        if (pending_.size() <= kRunResultLineBytes) {
          pending_.append(bytes.substr(0, std::min(n, kRunResultLineBytes + 1 - pending_.size())));
        }
        bytes.remove_prefix(n);
        if (nl != std::string_view::npos) {
          bytes.remove_prefix(1);  // the newline goes with the line
          EndResultLine();
        }
        break;
      }
    }
  }
}

void ResultLines::Finish() {
  if (state_ == State::kResult) {
    EndResultLine();
  } else if (state_ == State::kLineStart && !pending_.empty()) {
    Emit(pending_);
    pending_.clear();
  }
}

std::string ResultLines::Text(bool* cut) const {
  if (skipped_ == 0 && emitted_ <= kRunOutputBytes) {
    return tail_.substr(tail_.size() - emitted_);
  }
  *cut = true;
  size_t tail_want = skipped_ > 0 ? kRunOutputBytes : kTailBytes;
  std::string_view t = Utf8Tail(tail_, tail_want);
  uint64_t total = skipped_ + emitted_;
  if (skipped_ > 0) return OmittedMarker(total - t.size()) + std::string(t);
  std::string_view h = Utf8Head(head_, kRunHeadBytes);
  return std::string(h) + OmittedMarker(total - h.size() - t.size()) + std::string(t);
}

}  // namespace agentd
