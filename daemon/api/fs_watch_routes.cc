// GET /v1/fs/watch?path=DIR&recursive=0|1 (docs/PROTOCOL.md, "Watch"):
// Server-Sent Events, one per change under DIR, from a TreeWatcher.
//
// The starting walk (which may visit many directories) runs on the
// blocking pool; after that the stream waits for the inotify descriptor on
// the io thread. Streams are bounded per daemon (--max-watches) and in
// directories per stream (--watch-max-dirs). A reconnect starts a new
// watch: file system events cannot be replayed, so ids only order the
// events of one stream, and a client that reconnects rescans.
#include <poll.h>

#include <asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <memory>

#include "agentd/protocol/sse.h"
#include "api/exec_api.h"
#include "api/fs_route_util.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "fs/tree_watcher.h"
#include "server/connection.h"

namespace agentd {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kWatchKeepalive = std::chrono::seconds(15);
// A move-out waits this long for its move-in before it counts as removed.
constexpr auto kMovePairing = std::chrono::milliseconds(20);

struct WatchRoute {
  ApiContext& ctx;
  FsService& fs;
};

// Holds one of the daemon's watch slots for as long as a stream lives. It
// shares the count: a stream still open when the daemon stops is destroyed
// with the io_context, after the router that registered the route.
class WatchSlot {
 public:
  explicit WatchSlot(std::shared_ptr<int64_t> active) : active_(std::move(active)) { ++*active_; }
  ~WatchSlot() { --*active_; }
  WatchSlot(const WatchSlot&) = delete;
  WatchSlot& operator=(const WatchSlot&) = delete;

 private:
  std::shared_ptr<int64_t> active_;
};

void AppendEvent(std::string& out, const WatchEvent& ev, uint64_t id) {
  json::Object data;
  if (ev.kind == "overflow") {
    data.Set("reason", ev.reason);
  } else {
    data.Set("path", ev.path).Set("type", ev.type);
    if (ev.kind == "renamed") data.Set("from", ev.from);
  }
  AppendSseEvent(out, ev.kind, json::Serialize(data), std::to_string(id));
}

// Waits until `fd` is readable, the client's socket has something to say
// (normally: it closed, which frees the stream's slot at once), or
// `deadline` passes.
asio::awaitable<void> WaitReadable(asio::posix::stream_descriptor& fd, Request& client,
                                   bool watch_client, Clock::time_point deadline) {
  asio::steady_timer timer(fd.get_executor(), deadline);
  auto cancel = [&fd](const asio::error_code& ec) {
    if (!ec) fd.cancel();
  };
  timer.async_wait(cancel);
  if (watch_client) client.WaitPeerReadable(cancel);
  co_await fd.async_wait(asio::posix::descriptor_base::wait_read, kUseNothrow);
  timer.cancel();
  if (watch_client) client.CancelPeerWait();
}

asio::awaitable<void> Stream(TreeWatcher& watcher, const std::string& top, Request& req,
                             Response& res) {
  // The descriptor is watched through a duplicate that Asio owns.
  asio::posix::stream_descriptor readable(co_await asio::this_coro::executor,
                                          ::fcntl(watcher.fd(), F_DUPFD_CLOEXEC, 0));
  std::vector<WatchEvent> events;
  std::string buf;
  uint64_t next_id = 1;
  bool watch_client = true;
  auto last_write = Clock::now();
  for (;;) {
    events.clear();
    Status drained = watcher.Drain(events);
    if (!drained.ok()) co_return;
    if (watcher.has_pending() && Clock::now() - last_write >= kMovePairing) {
      watcher.FlushPending(events);
    }
    bool gone = !watcher.alive();
    if (gone) {
      watcher.FlushPending(events);
      WatchEvent removed;
      removed.kind = "removed";
      removed.path = top;
      removed.type = "dir";
      events.push_back(std::move(removed));
    }
    for (const WatchEvent& ev : events) AppendEvent(buf, ev, next_id++);
    if (buf.empty() && Clock::now() - last_write >= kWatchKeepalive) {
      AppendSseComment(buf, "keepalive");
    }
    if (!buf.empty()) {
      Status wrote = co_await res.Write(buf);
      if (!wrote.ok()) co_return;
      buf.clear();
      last_write = Clock::now();
    }
    if (gone) {
      co_await res.End();
      co_return;
    }
    if (req.PeerClosed()) co_return;
    // A client that sends bytes on an event stream (it should not) is
    // then only checked at the keepalive, never spun on.
    if (watch_client && req.PeerSentBytes()) watch_client = false;
    auto deadline =
        watcher.has_pending() ? Clock::now() + kMovePairing : last_write + kWatchKeepalive;
    co_await WaitReadable(readable, req, watch_client, deadline);
  }
}

asio::awaitable<void> Watch(WatchRoute r, std::shared_ptr<int64_t> active, Request& req,
                            Response& res) {
  QueryReader q(req.query());
  const std::string* path = q.Required("path");
  Result<RelPath> rel = CheckPath(r.fs, path);
  bool recursive = q.Bool("recursive", false);
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  if (s.ok() && *active >= r.ctx.config.max_watches) {
    s = Status::Error(ErrorCode::kTooManyWatches,
                      "the daemon already serves " + std::to_string(*active) + " watch streams")
            .With("limit", r.ctx.config.max_watches);
  }
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  WatchSlot slot(active);
  std::string top = r.fs.policy().Display(*rel);
  size_t max_dirs = static_cast<size_t>(r.ctx.config.watch_max_dirs);
  auto start = [&]() { return TreeWatcher::Start(r.fs.root(), *rel, top, recursive, max_dirs); };
  Result<TreeWatcher> watcher = co_await RunBlocking(r.ctx.blocking, std::move(start));
  if (!watcher.ok()) {
    co_await res.SendError(watcher.status());
    co_return;
  }
  Headers headers{{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  Status began = co_await res.Begin(200, "text/event-stream", std::nullopt, headers);
  if (!began.ok()) co_return;
  // The watch is in place before the first byte reaches the client: a
  // change made after it saw the answer's head is always reported.
  co_await Stream(*watcher, top, req, res);
}

}  // namespace

void RegisterFsWatchRoutes(Router& router, ApiContext& ctx, FsService& fs) {
  auto active = std::make_shared<int64_t>(0);
  router.Add("GET", "/v1/fs/watch",
             [route = WatchRoute{ctx, fs}, active](Request& req, Response& res) {
               return Watch(route, active, req, res);
             });
}

}  // namespace agentd
