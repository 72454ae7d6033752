// The exec calls of AsyncClient, as free coroutines over the transport.
#pragma once

#include <asio.hpp>
#include <string>
#include <vector>

#include "agentd/client/exec.h"
#include "transport.h"

namespace agentd::client {

asio::awaitable<Result<ExecInfo>> StartExecCall(Transport& t, std::string id,
                                                ExecStartRequest request);
asio::awaitable<Result<ExecPollResponse>> PollExecCall(Transport& t, std::string id,
                                                       PollOptions options);
// PUT /v1/execs/{id} with Poll's query (docs/PROTOCOL.md, "Start and
// wait"): the start's answer is the poll's.
asio::awaitable<Result<ExecPollResponse>> StartAndPollCall(Transport& t, std::string id,
                                                           ExecStartRequest request,
                                                           PollOptions options);
asio::awaitable<Result<ExecInfo>> WaitExecCall(Transport& t, std::string id,
                                               std::chrono::milliseconds timeout);
asio::awaitable<Result<ExecPollResponse>> WaitForOutputCall(Transport& t, std::string id,
                                                            std::string pattern,
                                                            WaitForOutputOptions options);
asio::awaitable<Result<ExecInfo>> KillExecCall(Transport& t, std::string id, KillRequest request);
asio::awaitable<Result<ExecInfo>> ResizeExecCall(Transport& t, std::string id, int rows, int cols);
asio::awaitable<Result<ExecInfo>> AckExecCall(Transport& t, std::string id);
asio::awaitable<Result<EgressReport>> ExecEgressCall(Transport& t, std::string id);
asio::awaitable<Result<std::vector<ExecInfo>>> ListExecsCall(Transport& t);
asio::awaitable<Result<uint64_t>> WriteStdinCall(Transport& t, std::string id, uint64_t offset,
                                                 std::string bytes, bool eof);
asio::awaitable<Result<ExecInfo>> StreamExecCall(Transport& t, std::string id,
                                                 StreamCursors cursors, StreamCallbacks callbacks);
// GET /v1/execs/{id}/stdout|stderr without follow: the retained bytes from
// `start`, at most `max_bytes` (more is protocol_error).
asio::awaitable<Result<OutputChunk>> ReadOutputCall(Transport& t, std::string id,
                                                    std::string stream, uint64_t start,
                                                    size_t max_bytes);
asio::awaitable<Result<RunResult>> RunCall(Transport& t, ExecStartRequest request,
                                           RunOptions options);

}  // namespace agentd::client
