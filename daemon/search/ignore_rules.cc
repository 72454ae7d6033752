#include "search/ignore_rules.h"

#include "search/wildmatch.h"

namespace agentd {
namespace {

// Drops trailing spaces that are not escaped with a backslash.
std::string_view TrimTrailingSpaces(std::string_view line) {
  while (!line.empty() && line.back() == ' ') {
    size_t backslashes = 0;
    for (size_t k = line.size() - 1; k > 0 && line[k - 1] == '\\'; --k) ++backslashes;
    if (backslashes % 2 == 1) break;  // "\ " keeps its space
    line.remove_suffix(1);
  }
  return line;
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

void IgnoreRules::Add(std::string_view content) {
  size_t pos = 0;
  while (pos < content.size()) {
    size_t nl = content.find('\n', pos);
    std::string_view line = content.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? content.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = TrimTrailingSpaces(line);
    if (line.empty() || line[0] == '#') continue;
    Rule r;
    if (line[0] == '!') {
      r.negate = true;
      line.remove_prefix(1);
    } else if (line.starts_with("\\!") || line.starts_with("\\#")) {
      line.remove_prefix(1);
    }
    if (!line.empty() && line.back() == '/') {
      r.dir_only = true;
      line.remove_suffix(1);
    }
    if (line.empty()) continue;
    r.anchored = line.find('/') != std::string_view::npos;
    if (line[0] == '/') line.remove_prefix(1);
    if (line.empty()) continue;
    r.pattern = std::string(line);
    rules_.push_back(std::move(r));
  }
}

IgnoreVerdict IgnoreRules::Decide(std::string_view path, bool is_dir) const {
  for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) {
    if (it->dir_only && !is_dir) continue;
    bool hit = it->anchored ? WildMatch(it->pattern, path) : WildMatch(it->pattern, Basename(path));
    if (hit) return it->negate ? IgnoreVerdict::kInclude : IgnoreVerdict::kIgnore;
  }
  return IgnoreVerdict::kNone;
}

bool IgnoreStack::Ignored(std::string_view walk_path, bool is_dir) const {
  std::string joined;
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
    std::string_view rel;
    if (!it->lead.empty()) {
      joined = it->lead + "/" + std::string(walk_path);
      rel = joined;
    } else if (it->base.empty()) {
      rel = walk_path;
    } else {
      // Frames are pushed only for directories on the path being walked,
      // so walk_path starts with base + "/".
      rel = walk_path.substr(it->base.size() + 1);
    }
    IgnoreVerdict v = it->rules->Decide(rel, is_dir);
    if (v != IgnoreVerdict::kNone) return v == IgnoreVerdict::kIgnore;
  }
  return false;
}

}  // namespace agentd
