#include "progress.h"

#include <cstdio>

namespace agentd::cli {

Progress::Progress(const Output& out, std::string label, uint64_t total)
    : enabled_(out.stderr_is_tty() && !out.json()), label_(std::move(label)), total_(total) {}

Progress::~Progress() { Done(); }

void Progress::Add(uint64_t bytes) {
  done_ += bytes;
  Draw(false);
}

void Progress::Done() {
  if (finished_) return;
  finished_ = true;
  if (!enabled_) return;
  Draw(true);
  std::fputc('\n', stderr);
}

void Progress::Draw(bool force) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr int kWidth = 30;
  int filled = total_ ? static_cast<int>(kWidth * std::min(done_, total_) / total_) : kWidth;
  std::string bar = "[" + std::string(filled, '#') + std::string(kWidth - filled, ' ') + "]";
  std::string line = "\r" + label_ + " " + bar + " " + Output::HumanSize(done_);
  if (total_) line += " / " + Output::HumanSize(total_);
  line += "   ";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace agentd::cli
