#include "agentd/trees/rel_path.h"

namespace agentd {

std::vector<std::string> PathComponents(std::string_view path) {
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
  rel.parts = PathComponents(name);
  rel.display = std::string(name);
  if (rel.has_dotdot()) return refuse("has a \"..\" component");
  return rel;
}

}  // namespace agentd
