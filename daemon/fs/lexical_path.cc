#include "fs/lexical_path.h"

namespace agentd {
namespace {

// Splits on '/', dropping empty and "." components.
std::vector<std::string> Split(std::string_view path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t end = path.find('/', i);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(i, end - i);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    i = end + 1;
  }
  return parts;
}

Status UnsafePath(std::string_view path, std::string reason) {
  return Status::Error(ErrorCode::kUnsafePath, "path " + std::string(path) + " " + reason)
      .With("path", std::string(path))
      .With("reason", std::move(reason));
}

}  // namespace

std::string RelPath::Joined() const {
  if (parts.empty()) return ".";
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += '/';
    out += p;
  }
  return out;
}

const std::string& RelPath::leaf() const {
  static const std::string kEmpty;
  return parts.empty() ? kEmpty : parts.back();
}

RelPath RelPath::Parent() const {
  RelPath out = *this;
  if (!out.parts.empty()) out.parts.pop_back();
  while (out.display.size() > 1 && out.display.back() == '/') out.display.pop_back();
  size_t slash = out.display.rfind('/');
  if (slash == std::string::npos) {
    out.display = ".";
  } else {
    out.display.resize(slash == 0 ? 1 : slash);
  }
  return out;
}

RelPath RelPath::Child(std::string name) const {
  RelPath out = *this;
  if (!out.display.empty() && out.display.back() != '/') out.display += '/';
  out.display += name;
  out.parts.push_back(std::move(name));
  return out;
}

bool RelPath::has_dotdot() const {
  for (const std::string& p : parts) {
    if (p == "..") return true;
  }
  return false;
}

PathPolicy::PathPolicy(std::string_view root) : root_parts_(Split(root)) {
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
  std::vector<std::string> parts = Split(client_path);
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

Result<RelPath> CheckMemberName(std::string_view name) {
  auto refuse = [&](std::string reason) {
    return Status::Error(ErrorCode::kUnsafePath,
                         "archive member \"" + std::string(name) + "\" " + reason)
        .With("member", std::string(name))
        .With("reason", std::move(reason));
  };
  if (name.empty()) return refuse("has an empty name");
  if (name.find('\0') != std::string_view::npos) return refuse("contains a NUL byte");
  if (name.front() == '/') return refuse("has an absolute name");
  RelPath rel;
  rel.parts = Split(name);
  rel.display = std::string(name);
  if (rel.has_dotdot()) return refuse("has a \"..\" component");
  return rel;
}

}  // namespace agentd
