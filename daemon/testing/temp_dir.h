// TempDir: a fresh directory for a unit test, removed with everything in it
// afterwards. Test-only.
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace agentd::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "agentd-unit-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    // Restore permissions a test may have taken away, then remove.
    for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
    }
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

  // Makes missing parent directories.
  void Write(const std::string& rel, const std::string& content) const {
    std::filesystem::create_directories(std::filesystem::path(path_ + "/" + rel).parent_path());
    std::ofstream(path_ + "/" + rel, std::ios::binary | std::ios::trunc) << content;
  }
  std::string Read(const std::string& rel) const {
    std::ifstream in(path_ + "/" + rel, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void Mkdir(const std::string& rel) const { ::mkdir((path_ + "/" + rel).c_str(), 0755); }
  // A fixture that cannot be made is a broken test, not a passing one.
  void Symlink(const std::string& target, const std::string& rel) const {
    if (::symlink(target.c_str(), (path_ + "/" + rel).c_str()) != 0) {
      throw std::runtime_error("symlink " + rel + ": " + std::strerror(errno));
    }
  }
  bool Exists(const std::string& rel) const {
    struct stat st;
    return ::lstat((path_ + "/" + rel).c_str(), &st) == 0;
  }

 private:
  std::string path_;
};

}  // namespace agentd::testing
