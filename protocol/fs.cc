#include "agentd/protocol/fs.h"

#include <charconv>

#include "agentd/protocol/object_reader.h"
#include "agentd/protocol/time_format.h"

namespace agentd {
namespace {

Status Malformed(std::string_view what) {
  return Status::Error(ErrorCode::kProtocolError, std::string(what));
}

std::optional<uint64_t> ParseDecimal(std::string_view text) {
  uint64_t n = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

std::optional<uint64_t> UnsignedMember(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (!v || !v->is_int() || v->as_int() < 0) return std::nullopt;
  return static_cast<uint64_t>(v->as_int());
}

std::optional<std::string> StringMember(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (!v || !v->is_string()) return std::nullopt;
  return v->as_string();
}

// Decodes an optional "mode" member given as an octal string.
void ReadMode(ObjectReader& r, std::string_view key, uint32_t* mode) {
  std::optional<std::string> text = r.String(key);
  if (!text) return;
  Result<uint32_t> parsed = ParseMode(*text, key);
  if (!parsed.ok()) {
    r.Fail(key, parsed.status().message());
    return;
  }
  *mode = *parsed;
}

}  // namespace

std::string_view FileTypeName(FileStat::Type type) {
  switch (type) {
    case FileStat::Type::kFile:
      return "file";
    case FileStat::Type::kDir:
      return "dir";
    case FileStat::Type::kSymlink:
      return "symlink";
    case FileStat::Type::kOther:
      break;
  }
  return "other";
}

json::Value EncodeFileStat(const FileStat& st) {
  json::Object o;
  o.Set("path", st.path);
  o.Set("type", std::string(FileTypeName(st.type)));
  o.Set("size", st.size);
  o.Set("mode", FormatMode(st.mode));
  o.Set("uid", st.uid);
  o.Set("gid", st.gid);
  o.Set("mtime", FormatRfc3339(st.mtime));
  o.Set("target", st.target ? json::Value(*st.target) : json::Value(nullptr));
  if (st.etag) o.Set("etag", *st.etag);
  return o;
}

Result<FileStat> DecodeFileStat(const json::Value& doc) {
  FileStat st;
  std::optional<std::string> path = StringMember(doc, "path");
  std::optional<std::string> type = StringMember(doc, "type");
  std::optional<std::string> mode = StringMember(doc, "mode");
  std::optional<std::string> mtime = StringMember(doc, "mtime");
  std::optional<uint64_t> size = UnsignedMember(doc, "size");
  std::optional<uint64_t> uid = UnsignedMember(doc, "uid");
  std::optional<uint64_t> gid = UnsignedMember(doc, "gid");
  if (!path || !type || !mode || !mtime || !size || !uid || !gid) {
    return Malformed("stat object lacks a member");
  }
  st.path = std::move(*path);
  for (FileStat::Type t : {FileStat::Type::kFile, FileStat::Type::kDir, FileStat::Type::kSymlink,
                           FileStat::Type::kOther}) {
    if (*type == FileTypeName(t)) st.type = t;
  }
  Result<uint32_t> bits = ParseMode(*mode, "mode");
  std::optional<std::chrono::system_clock::time_point> when = ParseRfc3339(*mtime);
  if (!bits.ok() || !when) return Malformed("stat object has a malformed mode or mtime");
  st.mode = *bits;
  st.mtime = *when;
  st.size = *size;
  st.uid = static_cast<uint32_t>(*uid);
  st.gid = static_cast<uint32_t>(*gid);
  st.target = StringMember(doc, "target");
  st.etag = StringMember(doc, "etag");
  return st;
}

json::Value EncodeListResponse(const ListResponse& list) {
  json::Array entries;
  entries.reserve(list.entries.size());
  for (const FileStat& st : list.entries) entries.push_back(EncodeFileStat(st));
  json::Object o;
  o.Set("entries", std::move(entries));
  return o;
}

Result<ListResponse> DecodeListResponse(const json::Value& doc) {
  const json::Value* entries = doc.Find("entries");
  if (!entries || !entries->is_array()) return Malformed("list answer lacks \"entries\"");
  ListResponse out;
  for (const json::Value& e : entries->as_array()) {
    Result<FileStat> st = DecodeFileStat(e);
    if (!st.ok()) return st.status();
    out.entries.push_back(std::move(*st));
  }
  return out;
}

Result<MkdirRequest> DecodeMkdirRequest(const json::Value& doc) {
  ObjectReader r(doc);
  MkdirRequest req;
  std::optional<std::string> path = r.String("path");
  r.Require("path", path.has_value());
  ReadMode(r, "mode", &req.mode);
  req.parents = r.Bool("parents").value_or(false);
  req.user = r.String("user");
  req.group = r.String("group");
  AGENTD_RETURN_IF_ERROR(r.Finish());
  req.path = std::move(*path);
  return req;
}

json::Value EncodeMkdirRequest(const MkdirRequest& req) {
  json::Object o;
  o.Set("path", req.path);
  o.Set("mode", FormatMode(req.mode));
  o.Set("parents", req.parents);
  if (req.user) o.Set("user", *req.user);
  if (req.group) o.Set("group", *req.group);
  return o;
}

Result<RenameRequest> DecodeRenameRequest(const json::Value& doc) {
  ObjectReader r(doc);
  RenameRequest req;
  std::optional<std::string> from = r.String("from");
  std::optional<std::string> to = r.String("to");
  r.Require("from", from.has_value());
  r.Require("to", to.has_value());
  req.overwrite = r.Bool("overwrite").value_or(true);
  AGENTD_RETURN_IF_ERROR(r.Finish());
  req.from = std::move(*from);
  req.to = std::move(*to);
  return req;
}

json::Value EncodeRenameRequest(const RenameRequest& req) {
  json::Object o;
  o.Set("from", req.from);
  o.Set("to", req.to);
  o.Set("overwrite", req.overwrite);
  return o;
}

json::Value EncodeDeleteResponse(const DeleteResponse& r) {
  json::Object o;
  o.Set("path", r.path);
  o.Set("removed", r.removed);
  return o;
}

Result<DeleteResponse> DecodeDeleteResponse(const json::Value& doc) {
  std::optional<std::string> path = StringMember(doc, "path");
  std::optional<uint64_t> removed = UnsignedMember(doc, "removed");
  if (!path || !removed) return Malformed("delete answer lacks \"path\" or \"removed\"");
  return DeleteResponse{std::move(*path), *removed};
}

json::Value EncodeRealpathResponse(const RealpathResponse& r) {
  json::Object o;
  o.Set("path", r.path);
  return o;
}

Result<RealpathResponse> DecodeRealpathResponse(const json::Value& doc) {
  std::optional<std::string> path = StringMember(doc, "path");
  if (!path) return Malformed("realpath answer lacks \"path\"");
  return RealpathResponse{std::move(*path)};
}

json::Value EncodeTarUploadResponse(const TarUploadResponse& r) {
  json::Object o;
  o.Set("entries", r.entries);
  o.Set("bytes", r.bytes);
  return o;
}

Result<TarUploadResponse> DecodeTarUploadResponse(const json::Value& doc) {
  std::optional<uint64_t> entries = UnsignedMember(doc, "entries");
  std::optional<uint64_t> bytes = UnsignedMember(doc, "bytes");
  if (!entries || !bytes) return Malformed("tar answer lacks \"entries\" or \"bytes\"");
  return TarUploadResponse{*entries, *bytes};
}

Result<uint32_t> ParseMode(std::string_view text, std::string_view field) {
  uint32_t mode = 0;
  bool ok = !text.empty() && text.size() <= 5;
  for (char c : text) {
    if (c < '0' || c > '7') ok = false;
    mode = mode * 8 + static_cast<uint32_t>(c - '0');
  }
  if (!ok || mode > 07777) {
    return Status::InvalidRequest("\"" + std::string(field) +
                                  "\" must be an octal mode from 0000 to 7777, such as \"0644\"")
        .With("field", std::string(field));
  }
  return mode;
}

std::string FormatMode(uint32_t mode) {
  char buf[8];
  auto digit = [](uint32_t d) { return static_cast<char>('0' + d); };
  buf[0] = digit((mode >> 9) & 7);
  buf[1] = digit((mode >> 6) & 7);
  buf[2] = digit((mode >> 3) & 7);
  buf[3] = digit(mode & 7);
  return std::string(buf, 4);
}

Result<LineRange> ParseLineRange(const std::string* start, const std::string* end) {
  auto invalid = [](std::string message) {
    return Status::Error(ErrorCode::kInvalidRange, std::move(message));
  };
  LineRange range;
  if (start) {
    std::optional<uint64_t> n = ParseDecimal(*start);
    if (!n || *n < 1) {
      return invalid("start_line must be an integer of at least 1").With("start_line", *start);
    }
    range.start = *n;
  }
  if (end) {
    std::optional<uint64_t> n = ParseDecimal(*end);
    if (!n || *n < range.start) {
      return invalid("end_line must be an integer no smaller than start_line")
          .With("start_line", range.start)
          .With("end_line", *end);
    }
    range.end = *n;
  }
  return range;
}

ByteRange ParseByteRange(std::string_view header, uint64_t size) {
  ByteRange none;
  constexpr std::string_view kPrefix = "bytes=";
  if (!header.starts_with(kPrefix)) return none;
  std::string_view spec = header.substr(kPrefix.size());
  while (!spec.empty() && spec.front() == ' ') spec.remove_prefix(1);
  while (!spec.empty() && spec.back() == ' ') spec.remove_suffix(1);
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos || spec.find(',') != std::string_view::npos) return none;
  std::string_view first_text = spec.substr(0, dash);
  std::string_view last_text = spec.substr(dash + 1);
  ByteRange out;
  if (first_text.empty()) {  // suffix form: the last N bytes
    std::optional<uint64_t> n = ParseDecimal(last_text);
    if (!n) return none;
    if (*n == 0 || size == 0) {
      out.kind = ByteRange::Kind::kUnsatisfiable;
      return out;
    }
    out.first = *n >= size ? 0 : size - *n;
    out.last = size - 1;
    out.kind = ByteRange::Kind::kSatisfiable;
    return out;
  }
  std::optional<uint64_t> first = ParseDecimal(first_text);
  std::optional<uint64_t> last =
      last_text.empty() ? std::optional<uint64_t>(UINT64_MAX) : ParseDecimal(last_text);
  if (!first || !last || *last < *first) return none;
  if (*first >= size) {
    out.kind = ByteRange::Kind::kUnsatisfiable;
    return out;
  }
  out.first = *first;
  out.last = std::min(*last, size - 1);
  out.kind = ByteRange::Kind::kSatisfiable;
  return out;
}

}  // namespace agentd
