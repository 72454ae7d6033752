#include "fs/lexical_path.h"

namespace agentd {
namespace {

Status UnsafePath(std::string_view path, std::string reason) {
  return Status::Error(ErrorCode::kUnsafePath, "path " + std::string(path) + " " + reason)
      .With("path", std::string(path))
      .With("reason", std::move(reason));
}

}  // namespace

PathPolicy::PathPolicy(std::string_view root) : root_parts_(PathComponents(root)) {
  // The root is given by the operator; a ".." in it is resolved lexically.
  std::vector<std::string> clean;
  for (std::string& p : root_parts_) {
    if (p == "..") {
      if (!clean.empty()) clean.pop_back();
    } else {
      clean.push_back(std::move(p));
    }
  }
  root_parts_ = std::move(clean);
  root_ = "/";
  for (size_t i = 0; i < root_parts_.size(); ++i) {
    if (i > 0) root_ += '/';
    root_ += root_parts_[i];
  }
}

Result<RelPath> PathPolicy::Check(std::string_view client_path) const {
  if (client_path.empty() || client_path.front() != '/') {
    return Status::InvalidRequest("path must be absolute")
        .With("field", "path")
        .With("path", std::string(client_path));
  }
  if (client_path.find('\0') != std::string_view::npos) {
    return Status::InvalidRequest("path must not contain NUL bytes").With("field", "path");
  }
  std::vector<std::string> parts = PathComponents(client_path);
  if (parts.size() < root_parts_.size()) {
    return UnsafePath(client_path, "is outside the root " + root_);
  }
  for (size_t i = 0; i < root_parts_.size(); ++i) {
    if (parts[i] != root_parts_[i]) return UnsafePath(client_path, "is outside the root " + root_);
  }
  RelPath rel;
  rel.display = std::string(client_path);
  int depth = 0;
  for (size_t i = root_parts_.size(); i < parts.size(); ++i) {
    if (parts[i] == "..") {
      if (--depth < 0) return UnsafePath(client_path, "climbs above the root " + root_);
    } else {
      ++depth;
    }
    rel.parts.push_back(std::move(parts[i]));
  }
  return rel;
}

std::string PathPolicy::Display(const RelPath& rel) const {
  std::string out = root_;
  for (const std::string& p : rel.parts) {
    if (out.back() != '/') out += '/';
    out += p;
  }
  return out;
}

}  // namespace agentd
