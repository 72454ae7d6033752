#include "agentd/trees/tar_extract.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "agentd/trees/dir_entries.h"
#include "agentd/trees/disk_space.h"
#include "agentd/trees/posix_error.h"
#include "agentd/trees/rel_path.h"
#include "agentd/trees/tar_reader.h"

namespace agentd {
namespace {

Status OverCap(std::string_view cap, uint64_t limit, uint64_t reached, const std::string& member) {
  return Status::Error(ErrorCode::kArchiveTooLarge, "the archive exceeds its " + std::string(cap) +
                                                        " cap of " + std::to_string(limit) +
                                                        " at member \"" + member + "\"")
      .With("cap", std::string(cap))
      .With("limit", limit)
      .With("value", reached)
      .With("member", member);
}

Status RefuseKind(const TarMember& m, std::string reason) {
  return Status::Error(ErrorCode::kUnsafePath, "archive member \"" + m.name + "\" " + reason)
      .With("member", m.name)
      .With("reason", std::move(reason));
}

// Writes one block of member data at its offset.
Status WriteAt(int fd, uint64_t offset, std::string_view data, int space_fd, uint64_t needed,
               const std::string& member) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOSPC || errno == EDQUOT) {
        return std::move(NoSpaceWhileWriting(space_fd, needed, member).With("member", member));
      }
      return std::move(PosixError(errno, "cannot write", member).With("member", member));
    }
    offset += static_cast<uint64_t>(n);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

namespace {

Result<TarUploadResponse> Extract(ByteSource& source, int target, const std::string& display,
                                  const ExtractOptions& opts, uint64_t* declared_out) {
  uint64_t& declared = *declared_out;
  Result<uint64_t> available = AvailableBytes(target, display);
  if (!available.ok()) return available.status();
  Result<StageTree> stage = StageTree::Create(target, display, opts.stage);
  if (!stage.ok()) return stage.status();
  TarReader reader(source);
  TarUploadResponse out;
  TarMember m;
  for (;;) {
    Result<bool> more = reader.Next(&m);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (++out.entries > opts.caps.max_entries) {
      return OverCap("entries", opts.caps.max_entries, out.entries, m.name);
    }
    Result<RelPath> rel = CheckMemberName(m.name);
    if (!rel.ok()) return rel.status();
    // Refused at the header, before anything deep is made: the walks that
    // commit and later remove the tree hold a descriptor per level.
    if (rel->parts.size() > static_cast<size_t>(kMaxTreeDepth)) {
      return OverCap("depth", kMaxTreeDepth, rel->parts.size(), m.name);
    }
    switch (m.kind) {
      case TarMember::Kind::kCharDevice:
      case TarMember::Kind::kBlockDevice:
        return RefuseKind(m, "is a device node");
      case TarMember::Kind::kFifo:
        return RefuseKind(m, "is a FIFO");
      case TarMember::Kind::kSocket:
        return RefuseKind(m, "is a socket");
      case TarMember::Kind::kDir:
        if (!rel->is_root()) AGENTD_RETURN_IF_ERROR(stage->AddDir(*rel, m.mode, m.mtime));
        continue;
      case TarMember::Kind::kSymlink:
        if (rel->is_root()) return RefuseKind(m, "would replace the target directory");
        AGENTD_RETURN_IF_ERROR(stage->AddSymlink(*rel, m.link, m.mtime));
        continue;
      case TarMember::Kind::kHardlink: {
        if (rel->is_root()) return RefuseKind(m, "would replace the target directory");
        Result<RelPath> to = CheckMemberName(m.link);
        if (!to.ok()) return RefuseKind(m, "is a hard link to an unsafe name \"" + m.link + "\"");
        AGENTD_RETURN_IF_ERROR(stage->AddHardlink(*rel, *to));
        continue;
      }
      case TarMember::Kind::kFile:
        break;
    }
    if (rel->is_root()) return RefuseKind(m, "would replace the target directory");
    if (m.size > opts.caps.max_entry_bytes) {
      return OverCap("entry_bytes", opts.caps.max_entry_bytes, m.size, m.name);
    }
    declared += m.size;
    if (declared > opts.caps.max_total_bytes) {
      return OverCap("total_bytes", opts.caps.max_total_bytes, declared, m.name);
    }
    if (declared > *available) {
      return std::move(InsufficientStorage(declared, *available, display).With("member", m.name));
    }
    Result<UniqueFd> fd = stage->BeginFile(*rel);
    if (!fd.ok()) return fd.status();
    uint64_t data_end = 0;
    AGENTD_RETURN_IF_ERROR(reader.ReadData([&](uint64_t offset, std::string_view data) {
      data_end = std::max(data_end, offset + data.size());
      return WriteAt(fd->get(), offset, data, target, declared, m.name);
    }));
    AGENTD_RETURN_IF_ERROR(stage->FinishFile(fd->get(), *rel, m.size, data_end, m.mode, m.mtime));
    out.bytes += m.size;
  }
  AGENTD_RETURN_IF_ERROR(stage->Commit());
  return out;
}

}  // namespace

Result<TarUploadResponse> ExtractTar(ByteSource& source, int target, const std::string& display,
                                     const ExtractOptions& opts) {
  uint64_t declared = 0;
  Result<TarUploadResponse> out = Extract(source, target, display, opts, &declared);
  if (out.ok()) return out;
  // Out of inodes, or of blocks for metadata: report it with real numbers.
  return WithSpaceNumbers(std::move(out).take_status(), target, declared);
}

}  // namespace agentd
