// Ignore files as git reads them (gitignore(5)): one pattern a line; blank
// lines and "#" comments skipped; trailing spaces dropped unless escaped;
// "!" re-includes; a trailing "/" matches directories only; a pattern with
// a "/" before its end is anchored to the directory of the file, one
// without matches a name at any depth below it. Within one file the last
// matching line decides; a deeper file's decision wins over a shallower
// one's (IgnoreStack). Immutable once parsed; thread-safe to read.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace agentd {

enum class IgnoreVerdict { kNone, kIgnore, kInclude };

class IgnoreRules {
 public:
  // Appends the rules of one file's `content` (later rules win).
  void Add(std::string_view content);
  bool empty() const { return rules_.empty(); }
  // The verdict of the last rule matching `path` (relative to the
  // directory the rules belong to; components joined by '/').
  IgnoreVerdict Decide(std::string_view path, bool is_dir) const;

 private:
  struct Rule {
    std::string pattern;  // anchored patterns without their leading '/'
    bool negate = false;
    bool dir_only = false;
    bool anchored = false;
  };
  std::vector<Rule> rules_;
};

// The rule sets in force at one point of a walk, shallowest first. Each
// frame knows how to turn a walk path (relative to the walk's start) into
// a path relative to its own directory.
class IgnoreStack {
 public:
  struct Frame {
    std::shared_ptr<const IgnoreRules> rules;
    // For a directory at or below the walk's start: its walk path ("" for
    // the start). For an ancestor: empty, and `lead` is the start's path
    // relative to the ancestor.
    std::string base;
    std::string lead;
  };

  void Push(Frame f) { frames_.push_back(std::move(f)); }
  void Pop() { frames_.pop_back(); }
  size_t size() const { return frames_.size(); }
  // True when `walk_path` (never "") is ignored: the deepest frame with a
  // matching rule decides.
  bool Ignored(std::string_view walk_path, bool is_dir) const;

 private:
  std::vector<Frame> frames_;
};

}  // namespace agentd
