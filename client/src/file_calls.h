// The file calls of AsyncClient, as free coroutines over the transport.
#pragma once

#include <asio.hpp>
#include <string>

#include "agentd/client/files.h"
#include "transport.h"

namespace agentd::client {

// `etag`, when given, receives the answer's ETag header (if any).
asio::awaitable<Result<uint64_t>> ReadFileCall(Transport& t, std::string path, ReadOptions options,
                                               ByteSink sink,
                                               std::optional<std::string>* etag = nullptr);
// The same into the descriptor `fd` (HttpConnection::ReadBodyToFd).
asio::awaitable<Result<uint64_t>> ReadFileToFdCall(Transport& t, std::string path,
                                                   ReadOptions options, int fd,
                                                   ByteCounter progress);
asio::awaitable<Result<FileStat>> WriteFileCall(Transport& t, std::string path,
                                                std::string contents, WriteOptions options);
asio::awaitable<Result<FileStat>> WriteFileFromCall(Transport& t, std::string path,
                                                    ByteSource source, WriteOptions options);
asio::awaitable<Result<FileStat>> WriteFileFromFdCall(Transport& t, std::string path, int fd,
                                                      uint64_t size, WriteOptions options);
asio::awaitable<Result<FileStat>> StatCall(Transport& t, std::string path, bool follow);
asio::awaitable<Result<ListResponse>> ListCall(Transport& t, std::string path);
asio::awaitable<Result<FileStat>> MakeDirCall(Transport& t, MkdirRequest request);
asio::awaitable<Result<FileStat>> RenameCall(Transport& t, RenameRequest request,
                                             Preconditions guard);
asio::awaitable<Result<DeleteResponse>> RemoveCall(Transport& t, std::string path, bool recursive,
                                                   std::optional<std::string> if_match);
asio::awaitable<Result<EditResponse>> EditCall(Transport& t, EditRequest request);
asio::awaitable<Result<std::string>> RealpathCall(Transport& t, std::string path);

}  // namespace agentd::client
