// The file calls of AsyncClient, as free coroutines over the transport.
#pragma once

#include <asio.hpp>
#include <string>

#include "agentd/client/files.h"
#include "transport.h"

namespace agentd::client {

asio::awaitable<Result<uint64_t>> ReadFileCall(Transport& t, std::string path, ReadOptions options,
                                               ByteSink sink);
asio::awaitable<Result<FileStat>> WriteFileCall(Transport& t, std::string path,
                                                std::string contents, WriteOptions options);
asio::awaitable<Result<FileStat>> WriteFileFromCall(Transport& t, std::string path,
                                                    ByteSource source, WriteOptions options);
asio::awaitable<Result<FileStat>> StatCall(Transport& t, std::string path, bool follow);
asio::awaitable<Result<ListResponse>> ListCall(Transport& t, std::string path);
asio::awaitable<Result<FileStat>> MakeDirCall(Transport& t, MkdirRequest request);
asio::awaitable<Result<FileStat>> RenameCall(Transport& t, RenameRequest request);
asio::awaitable<Result<DeleteResponse>> RemoveCall(Transport& t, std::string path, bool recursive);
asio::awaitable<Result<std::string>> RealpathCall(Transport& t, std::string path);
asio::awaitable<Result<EditResponse>> EditFileCall(Transport& t, EditRequest request);

}  // namespace agentd::client
