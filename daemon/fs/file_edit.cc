#include "fs/file_edit.h"

#include <unistd.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "fs/atomic_file.h"
#include "fs/file_read.h"
#include "fs/text_edit.h"
#include "fs/unified_diff.h"

namespace agentd {
namespace {

Status TooLarge(uint64_t size, const std::string& display) {
  return std::move(
      Status::Error(ErrorCode::kPayloadTooLarge, display + " is " + std::to_string(size) +
                                                     " bytes; edits take files of at most " +
                                                     std::to_string(kMaxEditFileBytes) + " bytes")
          .With("path", display)
          .With("size", size)
          .With("limit", kMaxEditFileBytes));
}

// The whole file, read to its end (it may have grown since fstat).
Result<std::string> ReadAll(int fd, const std::string& display) {
  std::string text;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError(errno, "cannot read", display);
    }
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxEditFileBytes) return TooLarge(text.size(), display);
  }
}

Status Failed(std::string message, const std::string& display, const std::string& etag) {
  return std::move(Status::Error(ErrorCode::kPreconditionFailed, std::move(message))
                       .With("path", display)
                       .With("exists", true)
                       .With("etag", etag));
}

}  // namespace

Result<EditResponse> EditFile(const ConfinedRoot& root, const RelPath& rel, const EditRequest& req,
                              const Precondition& pre, FileTags& tags) {
  Result<ReadableFile> file = OpenForRead(root, rel);
  if (!file.ok()) return file.status();
  if (file->pseudo) {
    return Status::Error(ErrorCode::kUnsafePath, rel.display + " is not a regular file on disk")
        .With("path", rel.display)
        .With("reason", "is on a pseudo file system");
  }
  uint64_t size = static_cast<uint64_t>(file->st.st_size);
  if (size > kMaxEditFileBytes) return TooLarge(size, rel.display);
  Result<std::string> before = ReadAll(file->fd.get(), rel.display);
  if (!before.ok()) return before.status();
  std::string read_tag = FileTags::OfBytes(*before);
  if (pre.if_none_match) {
    return Failed(rel.display + " exists (If-None-Match: * creates only)", rel.display, read_tag);
  }
  if (!pre.if_match.empty() && !IfMatchAccepts(pre, read_tag)) {
    return Failed(rel.display + " changed: its ETag is now " + read_tag, rel.display, read_tag);
  }
  Result<std::string> after = ApplyEdits(*before, req.edits, req.line_edits);
  if (!after.ok()) {
    Status mismatch = after.status();
    return std::move(mismatch.With("path", rel.display));
  }
  WriteOptions opts;
  opts.precondition.if_match = {read_tag.substr(1, read_tag.size() - 2)};
  opts.tags = &tags;
  opts.expected_size = after->size();
  Result<AtomicFile> out = AtomicFile::Create(root, rel, opts);
  if (!out.ok()) return out.status();
  AGENTD_RETURN_IF_ERROR(out->Write(*after));
  Result<FileStat> written = out->Commit(FileTags::OfBytes(*after));
  if (!written.ok()) return written.status();
  EditResponse answer;
  answer.path = rel.display;
  answer.etag = written->etag.value_or("");
  answer.size = written->size;
  answer.diff = UnifiedDiff(*before, *after, rel.display);
  return answer;
}

}  // namespace agentd
