// DownloadDir against a daemon that serves hostile archives: the client
// must refuse them and write nothing, inside or outside the destination.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "agentd/client/client.h"
#include "fake_daemon.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::FakeDaemon;
using agentd::testing::TarResponse;
namespace fs = std::filesystem;

namespace {

// A tar of raw entries: {name, type, link target or content}; type is
// 'f' (file), 'd' (directory), 'l' (symlink) or 'h' (hard link).
struct Member {
  std::string name;
  char type;
  std::string data;
};
std::string RawTar(const std::vector<Member>& members) {
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
    archive_entry_set_perm(e, m.type == 'd' ? 0700 : 0644);
    if (m.type == 'f') {
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_size(e, static_cast<la_int64_t>(m.data.size()));
    } else if (m.type == 'd') {
      archive_entry_set_filetype(e, AE_IFDIR);
    } else if (m.type == 'l') {
      archive_entry_set_filetype(e, AE_IFLNK);
      archive_entry_set_symlink(e, m.data.c_str());
    } else {
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_hardlink(e, m.data.c_str());
    }
    archive_write_header(a, e);
    if (m.type == 'f') archive_write_data(a, m.data.data(), m.data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

// Regular files (mode 0644) after an optional symlink.
std::string TarOf(const std::vector<std::pair<std::string, std::string>>& files,
                  const std::string& symlink_name = "", const std::string& symlink_target = "") {
  std::vector<Member> members;
  if (!symlink_name.empty()) members.push_back({symlink_name, 'l', symlink_target});
  for (const auto& [name, content] : files) members.push_back({name, 'f', content});
  return RawTar(members);
}

ClientOptions Fast(const std::string& url) {
  ClientOptions o;
  o.url = url;
  o.token = "t";
  o.max_attempts = 1;
  return o;
}

}  // namespace

TEST_CASE("DownloadDir refuses a daemon's archive that escapes with ..",
          "[client][trees][security]") {
  std::string parent = fs::temp_directory_path() / "agentd-dl-dotdot";
  fs::remove_all(parent);
  fs::create_directories(parent + "/dest");
  FakeDaemon daemon(TarResponse(TarOf({{"fine.txt", "ok"}, {"../escaped.txt", "evil"}})));
  Client c(Fast(daemon.url()));
  auto r = c.DownloadDir("/work", parent + "/dest");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kUnsafePath);
  CHECK(fs::is_empty(parent + "/dest"));
  CHECK_FALSE(fs::exists(parent + "/escaped.txt"));
}

TEST_CASE("DownloadDir refuses a daemon's archive that writes through a symlink",
          "[client][trees][security]") {
  std::string parent = fs::temp_directory_path() / "agentd-dl-symlink";
  fs::remove_all(parent);
  fs::create_directories(parent + "/dest");
  fs::create_directories(parent + "/outside");
  FakeDaemon daemon(TarResponse(TarOf({{"out/planted.txt", "evil"}}, "out", parent + "/outside")));
  Client c(Fast(daemon.url()));
  auto r = c.DownloadDir("/work", parent + "/dest");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kUnsafePath);
  CHECK(fs::is_empty(parent + "/outside"));
  CHECK(fs::is_empty(parent + "/dest"));
}

TEST_CASE("DownloadDir refuses every other way through a symlink", "[client][trees][security]") {
  std::string parent = fs::temp_directory_path() / "agentd-dl-symlink-ways";
  fs::remove_all(parent);
  fs::create_directories(parent + "/outside");
  ::chmod((parent + "/outside").c_str(), 0755);
  std::string outside = parent + "/outside";
  std::vector<std::vector<Member>> attacks = {
      // a hard link to a symlink is a symlink
      {{"l", 'l', outside}, {"h", 'h', "l"}, {"h/planted", 'f', "evil"}},
      // a hard link whose target passes through a symlink
      {{"l", 'l', outside}, {"x", 'f', "x"}, {"h", 'h', "l/target"}},
      // the same name spelled with "." and empty components
      {{"l", 'l', outside}, {"./l//./planted", 'f', "evil"}},
  };
  for (const auto& members : attacks) {
    fs::remove_all(parent + "/dest");
    fs::create_directories(parent + "/dest");
    FakeDaemon daemon(TarResponse(RawTar(members)));
    Client c(Fast(daemon.url()));
    auto r = c.DownloadDir("/work", parent + "/dest");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kUnsafePath);
    CHECK(fs::is_empty(outside));
    CHECK((fs::status(outside).permissions() & fs::perms::all) ==
          (fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
           fs::perms::others_read | fs::perms::others_exec));
    CHECK(fs::is_empty(parent + "/dest"));
  }
  // A directory member over an earlier symlink replaces the symlink, as a
  // later member does in tar (the daemon's rule, agentd/trees/): what it
  // pointed to is neither entered nor chmod'ed.
  fs::remove_all(parent + "/dest");
  fs::create_directories(parent + "/dest");
  FakeDaemon daemon(TarResponse(RawTar({{"l", 'l', outside}, {"l", 'd', ""}})));
  Client c(Fast(daemon.url()));
  REQUIRE(c.DownloadDir("/work", parent + "/dest").ok());
  CHECK(fs::is_directory(fs::symlink_status(parent + "/dest/l")));
  CHECK(fs::is_empty(outside));
  CHECK((fs::status(outside).permissions() & fs::perms::all) ==
        (fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
         fs::perms::others_read | fs::perms::others_exec));
}

TEST_CASE("DownloadDir keeps symlinks and links that stay inside the tree", "[client][trees]") {
  std::string dest = fs::temp_directory_path() / "agentd-dl-links-inside";
  fs::remove_all(dest);
  FakeDaemon daemon(TarResponse(RawTar({{"d", 'd', ""},
                                        {"d/f", 'f', "data"},
                                        {"l", 'l', "d/f"},
                                        {"h", 'h', "d/f"},
                                        {"l", 'f', "replaced"}})));
  Client c(Fast(daemon.url()));
  auto r = c.DownloadDir("/work", dest);
  REQUIRE(r.ok());
  CHECK(fs::is_regular_file(fs::symlink_status(dest + "/l")));  // the file replaced the link
  CHECK(fs::hard_link_count(dest + "/d/f") == 2);
}

TEST_CASE("DownloadDir extracts a well-formed archive", "[client][trees]") {
  std::string dest = fs::temp_directory_path() / "agentd-dl-good";
  fs::remove_all(dest);
  FakeDaemon daemon(TarResponse(TarOf({{"dir/a.txt", "alpha"}, {"b.txt", "beta"}})));
  Client c(Fast(daemon.url()));
  auto r = c.DownloadDir("/work", dest);
  REQUIRE(r.ok());
  CHECK(r->entries == 2);
  std::ifstream in(dest + "/dir/a.txt");
  std::string content((std::istreambuf_iterator<char>(in)), {});
  CHECK(content == "alpha");
}
