// Tar extraction into a confined temporary root: any bytes as an upload
// (plain, gzip or zstd: the reader detects them). Nothing may appear
// outside the target, and a refused archive must leave the target empty.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "agentd/trees/tar_extract.h"
#include "agentd/trees/unique_fd.h"

namespace {

namespace fs = std::filesystem;

class OnceSource : public agentd::ByteSource {
 public:
  explicit OnceSource(std::string_view data) : data_(data) {}
  agentd::Result<std::string_view> Read() override {
    std::string_view out = data_.substr(0, 4096);
    data_.remove_prefix(out.size());
    return out;
  }

 private:
  std::string_view data_;
};

void RemoveAll(const std::string& path) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
  }
  ::chmod(path.c_str(), 0700);
  fs::remove_all(path, ec);
}

size_t Count(const std::string& dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::directory_iterator(dir, ec); it != fs::directory_iterator();
       it.increment(ec)) {
    ++n;
  }
  return n;
}

const std::string& Base() {
  // On the heap: the exit handler runs after static strings are destroyed.
  static const std::string* base = [] {
    std::string tmpl = (fs::temp_directory_path() / "agentd-fuzz-tar-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    ::mkdir((tmpl + "/outside").c_str(), 0755);
    std::atexit([] { RemoveAll(Base()); });
    return new std::string(tmpl);
  }();
  return *base;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string target = Base() + "/target";
  if (::mkdir(target.c_str(), 0755) != 0) std::abort();
  agentd::UniqueFd dir(::open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  agentd::ExtractOptions opts;
  opts.caps.max_entries = 256;
  opts.caps.max_entry_bytes = 1 << 20;
  opts.caps.max_total_bytes = 4 << 20;
  OnceSource source(std::string_view(reinterpret_cast<const char*>(data), size));
  agentd::Result<agentd::TarUploadResponse> result =
      agentd::ExtractTar(source, dir.get(), "/target", opts);
  if (!result.ok() && Count(target) != 0) std::abort();                     // all or nothing
  if (Count(Base()) != 2 || Count(Base() + "/outside") != 0) std::abort();  // confined
  RemoveAll(target);
  return 0;
}
