// Socket reads and writes whose progress is exact at every moment between
// two handlers, for the streams an upgrade in place hands over
// (server/handed_streams.h).
//
// Asio's own async_read_some/async_write move bytes inside its reactor and
// queue the completion: at the execve a completion still in the queue
// would hide bytes already taken from one socket, or already given to the
// other. Here Asio only reports readiness (async_wait); the bytes move in
// non-blocking system calls made by the caller's coroutine, so what was
// read and not yet written is always exactly what the caller's buffer
// holds.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <string>
#include <utility>

#include "server/socket.h"

namespace agentd {

// Writes all of `pending`, erasing each byte once the kernel took it; with
// a nonzero `limit`, fails with timed_out when the socket stays full that
// long.
asio::awaitable<asio::error_code> FlushExact(Socket& sock, std::string& pending,
                                             std::chrono::milliseconds limit = {});

// Appends what `sock` has (at most `max` bytes) to `into`, waiting until
// it has something: the count, 0 at the end of the stream.
asio::awaitable<std::pair<asio::error_code, size_t>> ReadExact(Socket& sock, std::string& into,
                                                               size_t max);

}  // namespace agentd
