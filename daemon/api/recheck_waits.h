// The waits whose condition has no event source the daemon can subscribe
// to, so they re-check it every kRecheckInterval until it holds, the
// deadline passes or the client leaves (docs/PROTOCOL.md, "Wait for a
// port", "Wait for a path"):
// - a TCP port starting to listen: Linux tells no one when a socket
//   listens (inotify does not work on /proc/net, and sock_diag only
//   broadcasts destroyed sockets), so /proc/net/tcp{,6} is read again;
// - a path appearing or going away: the path's parents may not exist yet
//   and may be created, replaced or be symlinks resolved inside the fs
//   root, so an inotify watch would have to follow a changing chain of
//   directories; a confined stat on the blocking pool is the same check
//   every fs route makes, and is cheap.
// Each re-check costs one procfs read or one stat; the number of waits is
// bounded (api/wait_slot.h), so the cost is too. A condition is seen at
// most kRecheckInterval late. Used only on the io thread.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>

#include "api/api_context.h"
#include "api/fs_service.h"
#include "server/request.h"
#include "server/response.h"

namespace agentd {

inline constexpr std::chrono::milliseconds kRecheckInterval{25};

// GET /v1/ports?wait_for=PORT&wait_ms=M: the port list once PORT listens
// or at the deadline, with "wait_for" and "listening".
asio::awaitable<void> AnswerPortWait(ApiContext& ctx, Request& req, Response& res, uint16_t port,
                                     uint64_t wait_ms);

// GET /v1/fs/stat?path=P&until=exists|gone&wait_ms=M.
asio::awaitable<void> AnswerPathWait(ApiContext& ctx, FsService& fs, Request& req, Response& res,
                                     const RelPath& rel, bool follow, bool until_gone,
                                     uint64_t wait_ms);

}  // namespace agentd
