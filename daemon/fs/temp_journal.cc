#include "fs/temp_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>
#include <vector>

#include "agentd/trees/dir_entries.h"
#include "agentd/trees/unique_fd.h"
#include "log/log.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

std::string& JournalDir() {
  static std::string dir;  // set once by Enable(), before any transfer
  return dir;
}

bool IsOurTemporary(std::string_view name) {
  return (name.starts_with(".agentd-tmp-") || name.starts_with(".agentd-stage-")) &&
         name.find('/') == std::string_view::npos;
}

// Removes the temporary an entry names; true when the entry can go.
void Sweep(const std::string& entry, int* removed) {
  Result<std::string> text = ReadFileToString(entry, 8192);
  if (text.ok()) {
    size_t slash = text->rfind('/');
    if (slash != std::string::npos && IsOurTemporary(text->substr(slash + 1)) &&
        RemoveTreeAtPath(*text).ok()) {
      ++*removed;
      Log(LogLevel::kInfo, "removed a temporary left by a previous run",
          json::Object().Set("path", *text));
    }
  }
  ::unlink(entry.c_str());
}

}  // namespace

TempJournal::Entry& TempJournal::Entry::operator=(Entry&& other) noexcept {
  if (this != &other) {
    Forget();
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

void TempJournal::Entry::Forget() {
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

int TempJournal::Enable(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return 0;
  int removed = 0;
  std::vector<std::string> entries;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      if (IsOurTemporary(e->d_name)) entries.push_back(dir + "/" + e->d_name);
    }
    ::closedir(d);
  }
  for (const std::string& entry : entries) Sweep(entry, &removed);
  JournalDir() = dir;
  return removed;
}

void TempJournal::Disable() { JournalDir().clear(); }

TempJournal::Entry TempJournal::Record(int dirfd, const std::string& name) {
  return Entry(RecordPath(dirfd, name));
}

std::string TempJournal::RecordPath(int dirfd, const std::string& name) {
  if (JournalDir().empty()) return {};
  char where[4096];
  std::string link = "/proc/self/fd/" + std::to_string(dirfd);
  ssize_t n = ::readlink(link.c_str(), where, sizeof(where) - 1);
  if (n <= 0 || where[0] != '/') return {};
  std::string target(where, static_cast<size_t>(n));
  if (target.back() != '/') target += '/';
  target += name;
  std::string entry = JournalDir() + "/" + name;
  UniqueFd fd(::open(entry.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd ||
      ::write(fd.get(), target.data(), target.size()) != static_cast<ssize_t>(target.size())) {
    ::unlink(entry.c_str());
    return {};
  }
  return entry;
}

}  // namespace agentd
