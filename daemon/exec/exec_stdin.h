// Stdin of an exec (docs/PROTOCOL.md, "Stdin"): whole input written in the
// background, or streamed input taken request by request at explicit
// offsets, so a retried write never duplicates a byte. Used only on the io
// thread.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"
#include "exec/exec_record.h"

namespace agentd {

// Whole stdin for an exec's holder (proc/exec_holder.h), which passes it
// on from this memfd (close-on-exec, at offset 0) and so outlives the daemon.
Result<UniqueFd> WholeStdinFile(std::string_view data);

// Writes `data` to the child's stdin as it reads, then closes it. Stops
// early when the child can read no more (its stdin closed, or it exited).
asio::awaitable<void> WriteWholeStdin(std::shared_ptr<ExecRecord> rec, std::string data);

// One streamed stdin request. Begin() waits while another request writes to
// the same exec (writes are serialized), then checks the offset. Write()
// skips the body bytes the process already has and writes the rest;
// Finish() closes stdin on eof and reports the exec's stdin offset.
class StdinWrite {
 public:
  static asio::awaitable<Result<std::unique_ptr<StdinWrite>>> Begin(
      std::shared_ptr<ExecRecord> rec, uint64_t offset, std::chrono::milliseconds stall_limit);
  ~StdinWrite();
  StdinWrite(const StdinWrite&) = delete;
  StdinWrite& operator=(const StdinWrite&) = delete;

  asio::awaitable<Status> Write(std::string_view chunk);
  // The exec's stdin offset after this request.
  uint64_t Finish(bool eof);

 private:
  StdinWrite(std::shared_ptr<ExecRecord> rec, uint64_t offset, std::chrono::milliseconds stall);
  asio::awaitable<bool> WaitWritable();

  std::shared_ptr<ExecRecord> rec_;
  uint64_t cursor_;  // stdin offset of the next body byte
  std::chrono::milliseconds stall_limit_;
  bool stalled_ = false;  // the process took no input for stall_limit_
};

}  // namespace agentd
