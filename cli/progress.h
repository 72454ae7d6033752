// A one-line progress bar on stderr, shown only when stderr is a terminal
// and never in --json mode; redrawn at most ten times a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "output.h"

namespace agentd::cli {

class Progress {
 public:
  Progress(const Output& out, std::string label, uint64_t total);
  ~Progress();
  void Add(uint64_t bytes);
  void Done();

 private:
  void Draw(bool force);

  bool enabled_;
  std::string label_;
  uint64_t total_;
  uint64_t done_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace agentd::cli
