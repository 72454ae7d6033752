// Checks of tree upload and download (docs/PROTOCOL.md, "Trees"): fidelity
// of every entry kind both ways, and each hostile archive refused with
// nothing written inside or outside the target.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "checks.h"

namespace agentd::conformance {
namespace {

namespace fs = std::filesystem;

struct LocalDir {
  std::string path;
  LocalDir() {
    std::string tmpl = (fs::temp_directory_path() / "agentd-conformance-local-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~LocalDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// type, mode, content or link target, and mtime of every entry below root.
std::map<std::string, std::string> Describe(const std::string& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    struct stat st;
    if (lstat(it->path().c_str(), &st) != 0) continue;
    std::string facts;
    if (S_ISLNK(st.st_mode)) {
      facts = "link " + fs::read_symlink(it->path()).string();
    } else if (S_ISDIR(st.st_mode)) {
      facts = "dir " + FormatMode(st.st_mode & 07777);
    } else {
      std::ifstream in(it->path(), std::ios::binary);
      std::string data((std::istreambuf_iterator<char>(in)), {});
      facts = "file " + FormatMode(st.st_mode & 07777) + " " + std::to_string(st.st_mtime) + " " +
              std::to_string(std::hash<std::string>{}(data)) +
              " nlink=" + std::to_string(st.st_nlink);
    }
    out[it->path().lexically_relative(root).string()] = facts;
  }
  return out;
}

void BuildEveryKind(const std::string& root) {
  fs::create_directories(root + "/src/empty");
  std::ofstream(root + "/src/run.sh") << "#!/bin/sh\necho run\n";
  chmod((root + "/src/run.sh").c_str(), 0755);
  std::ofstream(root + "/src/data.bin", std::ios::binary) << std::string("\0\1\2\3", 4);
  chmod((root + "/src/data.bin").c_str(), 0600);
  std::ofstream(root + "/name with spaces \xc3\xa9.txt") << "odd";
  fs::create_hard_link(root + "/src/run.sh", root + "/src/hardlink.sh");
  fs::create_symlink("src/run.sh", root + "/relative-link");
  fs::create_symlink("/etc/hostname", root + "/absolute-link");
  fs::create_symlink("nowhere/at/all", root + "/dangling-link");
  chmod((root + "/src/empty").c_str(), 02755);
  timespec times[2] = {{1500000000, 0}, {1500000000, 0}};
  utimensat(AT_FDCWD, (root + "/src/data.bin").c_str(), times, AT_SYMLINK_NOFOLLOW);
}

void TreeRoundTripKeepsEveryEntryKind(CheckContext& ctx) {
  LocalDir src, back;
  BuildEveryKind(src.path);
  std::string remote = ctx.Scratch("tree");
  for (client::TarCompression c : {client::TarCompression::kNone, client::TarCompression::kGzip,
                                   client::TarCompression::kZstd}) {
    std::string r = remote + "-" + std::to_string(static_cast<int>(c));
    MkdirRequest mk;
    mk.path = r;
    ExpectOk(ctx.client().MakeDir(mk), "mkdir");
    ExpectOk(ctx.client().UploadDir(src.path, r, c), "upload");
    std::string local = back.path + "/" + std::to_string(static_cast<int>(c));
    ExpectOk(ctx.client().DownloadDir(r, local, c), "download");
    auto want = Describe(src.path);
    auto got = Describe(local);
    for (const auto& [name, facts] : want) {
      auto it = got.find(name);
      Expect(it != got.end(), "\"" + name + "\" survived the round trip");
      Expect(it->second == facts, "\"" + name + "\" kept type, mode, content, link and mtime: " +
                                      facts + " vs " + it->second);
    }
    Expect(got.size() == want.size(), "no extra entries appeared");
  }
}

// An archive built in memory from (name, type, symlink target, hardlink target).
struct Member {
  Member(std::string n, mode_t t = AE_IFREG, std::string s = "", std::string h = "")
      : name(std::move(n)), type(t), symlink(std::move(s)), hardlink(std::move(h)) {}
  std::string name;
  mode_t type;
  std::string symlink;
  std::string hardlink;
};

std::string Archive(const std::vector<Member>& members) {
  std::string out;
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_open(
      a, &out, nullptr,
      [](archive*, void* data, const void* buf, size_t n) -> la_ssize_t {
        static_cast<std::string*>(data)->append(static_cast<const char*>(buf), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr);
  for (const Member& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, 0644);
    bool data = m.type == AE_IFREG && m.hardlink.empty();
    archive_entry_set_size(e, data ? 4 : 0);
    if (!m.symlink.empty()) archive_entry_set_symlink(e, m.symlink.c_str());
    if (!m.hardlink.empty()) archive_entry_set_hardlink(e, m.hardlink.c_str());
    archive_write_header(a, e);
    if (data) archive_write_data(a, "evil", 4);
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

std::string PutTar(CheckContext& ctx, const std::string& dir, const std::string& body) {
  return ctx.RawExchange(
      "PUT /v1/fs/tar?path=" + dir + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
          ctx.options().token + "\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\nConnection: close\r\n\r\n" + body,
      std::chrono::seconds(10));
}

void HostileArchivesAreRefusedWithNothingWritten(CheckContext& ctx) {
  std::string base = ctx.Scratch("hostile");
  std::string outside = base + "/outside";
  std::string target = base + "/target";
  for (const std::string& d : {outside, target}) {
    MkdirRequest mk;
    mk.path = d;
    mk.parents = true;
    ExpectOk(ctx.client().MakeDir(mk), "mkdir " + d);
  }
  ExpectOk(ctx.client().WriteFile(target + "/existing", "keep"), "seed the target");
  struct Attack {
    std::string name;
    std::vector<Member> members;
  };
  std::vector<Attack> attacks = {
      {"dotdot escape", {{"fine.txt"}, {"../outside/escaped.txt"}}},
      {"absolute member name", {{outside + "/absolute.txt"}}},
      {"write through an archive symlink", {{"link", AE_IFLNK, outside}, {"link/through.txt"}}},
      {"hard link outside", {{"hl", AE_IFREG, "", "../outside/x"}}},
      {"FIFO", {{"fifo", AE_IFIFO}}},
      {"character device", {{"dev", AE_IFCHR}}},
  };
  for (const Attack& attack : attacks) {
    std::string raw = PutTar(ctx, target, Archive(attack.members));
    Expect(raw.rfind("HTTP/1.1 400", 0) == 0 && raw.find("\"unsafe_path\"") != std::string::npos,
           attack.name + " is 400 unsafe_path");
    Expect(raw.find("\"member\"") != std::string::npos,
           attack.name + ": the refusal names the member");
    ListResponse in = ExpectOk(ctx.client().ListDir(target), "list target");
    Expect(in.entries.size() == 1, attack.name + ": nothing was written inside the target");
    ListResponse out = ExpectOk(ctx.client().ListDir(outside), "list outside");
    Expect(out.entries.empty(), attack.name + ": nothing was written outside the target");
  }
}

void MalformedArchiveIsInvalidArchive(CheckContext& ctx) {
  std::string target = ctx.Scratch("malformed");
  MkdirRequest mk;
  mk.path = target;
  ExpectOk(ctx.client().MakeDir(mk), "mkdir");
  std::string tar = Archive({{"a.txt"}, {"b.txt"}});
  std::string raw = PutTar(ctx, target, tar.substr(0, 1100));  // cut inside the second member
  Expect(raw.rfind("HTTP/1.1 400", 0) == 0 && raw.find("\"invalid_archive\"") != std::string::npos,
         "a truncated archive is 400 invalid_archive");
  Expect(ExpectOk(ctx.client().ListDir(target), "list").entries.empty(), "and writes nothing");
}

}  // namespace

void AddTreeChecks(std::vector<Check>& checks) {
  checks.push_back({"trees", "a round trip keeps every entry kind, in every compression",
                    TreeRoundTripKeepsEveryEntryKind});
  checks.push_back({"trees",
                    "each hostile archive is refused with nothing written inside or outside",
                    HostileArchivesAreRefusedWithNothingWritten});
  checks.push_back({"trees", "a truncated archive is invalid_archive and writes nothing",
                    MalformedArchiveIsInvalidArchive});
}

}  // namespace agentd::conformance
