// Tree upload and download over the daemon's tar routes, joining a
// libarchive worker thread (tree_archive.h) to the request through a pipe:
// the pipe bounds the bytes in flight, so memory stays flat for any tree.
#pragma once

#include <asio.hpp>
#include <string>

#include "agentd/client/trees.h"
#include "transport.h"

namespace agentd::client {

// PUT /v1/fs/tar?path=remote with a tar of local's contents. Retried (the
// archive is rebuilt) like any idempotent call: extracting the same tree
// twice leaves the same result.
asio::awaitable<Result<TreeStats>> UploadTree(Transport& transport, std::string local,
                                              std::string remote, TarCompression compression);
// GET /v1/fs/tar?path=remote extracted under local (confined, staged).
asio::awaitable<Result<TreeStats>> DownloadTree(Transport& transport, std::string remote,
                                                std::string local, TarCompression compression);

}  // namespace agentd::client
