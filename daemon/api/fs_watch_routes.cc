// GET /v1/fs/watch?path=DIR&recursive=0|1 (docs/PROTOCOL.md, "Watch"):
// Server-Sent Events, one per change under DIR, from a TreeWatcher.
//
// The starting walk (which may visit many directories) runs on the
// blocking pool; after that the stream waits for the inotify descriptor on
// the io thread. Streams are bounded per daemon (--max-watches) and in
// directories per stream (--watch-max-dirs). A reconnect starts a new
// watch: file system events cannot be replayed, so ids only order the
// events of one stream, and a client that reconnects rescans. An upgrade
// in place does not end a stream: it is handed over whole (the socket, the
// inotify descriptor and the bytes not yet sent), so nothing is lost.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <poll.h>

#include <asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "agentd/protocol/base64.h"
#include "agentd/protocol/sse.h"
#include "agentd/trees/posix_error.h"
#include "api/exec_api.h"
#include "api/fs_route_util.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "fs/tree_watcher.h"
#include "server/connection.h"
#include "server/exact_io.h"
#include "server/handed_streams.h"

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

// A watch stream's socket side. The events go out as chunks written with
// server/exact_io.h, so `out` is always exactly the bytes formatted and not
// yet taken by the kernel: an upgrade in place hands the stream over with
// them (server/handed_streams.h) and the client reads on, unaware.
struct WatchOutput {
  Socket& socket;
  std::chrono::milliseconds write_limit;  // a stalled reader is cut, as on any response
  std::string out;
  uint64_t next_id = 1;
};

// What the peer did, without reading its bytes (as Connection does).
bool PeerClosed(Socket& s) {
  pollfd p{s.native_handle(), POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

bool PeerSentBytes(Socket& s) {
  pollfd p{s.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

void AppendChunk(std::string& out, std::string_view bytes) {
  char size[20];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  out.append(size, static_cast<size_t>(n));
  out.append(bytes);
  out.append("\r\n");
}

// Waits until `fd` is readable, the client's socket has something to say
// (normally: it closed, which frees the stream's slot at once), or
// `deadline` passes.
asio::awaitable<void> WaitReadable(asio::posix::stream_descriptor& fd, Socket& client,
                                   bool watch_client, Clock::time_point deadline) {
  asio::steady_timer timer(fd.get_executor(), deadline);
  auto cancel = [&fd](const asio::error_code& ec) {
    if (!ec) fd.cancel();
  };
  timer.async_wait(cancel);
  if (watch_client) client.async_wait(Socket::wait_read, cancel);
  co_await fd.async_wait(asio::posix::descriptor_base::wait_read, kUseNothrow);
  timer.cancel();
  if (watch_client) {
    asio::error_code ignored;
    client.cancel(ignored);
  }
}

// Streams the watcher's events until the watched directory is gone (true:
// the caller ends the body) or the client is (false).
asio::awaitable<bool> Stream(TreeWatcher& watcher, const std::string& top, WatchOutput& o) {
  // The descriptor is watched through a duplicate that Asio owns.
  asio::posix::stream_descriptor readable(co_await asio::this_coro::executor,
                                          ::fcntl(watcher.fd(), F_DUPFD_CLOEXEC, 0));
  std::vector<WatchEvent> events;
  std::string buf;
  bool watch_client = true;
  auto last_write = Clock::now();
  for (;;) {
    events.clear();
    Status drained = watcher.Drain(events);
    if (!drained.ok()) co_return false;
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
    buf.clear();
    for (const WatchEvent& ev : events) AppendEvent(buf, ev, o.next_id++);
    if (buf.empty() && Clock::now() - last_write >= kWatchKeepalive) {
      AppendSseComment(buf, "keepalive");
    }
    if (!buf.empty()) AppendChunk(o.out, buf);
    if (!o.out.empty()) {
      asio::error_code wrote = co_await FlushExact(o.socket, o.out, o.write_limit);
      if (wrote) co_return false;
      last_write = Clock::now();
    }
    if (gone) co_return true;
    if (PeerClosed(o.socket)) co_return false;
    // A client that sends bytes on an event stream (it should not) is
    // then only checked at the keepalive, never spun on.
    if (watch_client && PeerSentBytes(o.socket)) watch_client = false;
    auto deadline =
        watcher.has_pending() ? Clock::now() + kMovePairing : last_write + kWatchKeepalive;
    co_await WaitReadable(readable, o.socket, watch_client, deadline);
  }
}

// The stream as the next binary takes it (AdoptWatch); null when the
// client's socket already closed.
json::Value DescribeWatch(const TreeWatcher& watcher, const std::string& top, const WatchOutput& o,
                          std::vector<int>& fds) {
  if (!o.socket.is_open()) return json::Value();
  int fd = o.socket.native_handle();
  fds.push_back(fd);
  size_t first = fds.size();
  json::Value saved = watcher.Save(fds);
  json::Array listed;
  listed.emplace_back(fd);
  for (size_t i = first; i < fds.size(); ++i) listed.emplace_back(fds[i]);
  return json::Object()
      .Set("kind", "watch")
      .Set("fds", std::move(listed))
      .Set("client_fd", fd)
      .Set("top", top)
      .Set("next_id", o.next_id)
      .Set("out_b64", Base64Encode(o.out))
      .Set("watcher", std::move(saved));
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
  if (!res.chunked()) {  // HEAD: the head is the whole answer
    co_await res.End();
    co_return;
  }
  // The watch is in place before the first byte reaches the client: a
  // change made after it saw the answer's head is always reported.
  WatchOutput o{req.connection().socket(), r.ctx.config.limits.io_timeout, {}, 1};
  bool ended = false;
  {
    HandedStreams::Entry entry = r.ctx.streams.Add(
        [&](std::vector<int>& fds) { return DescribeWatch(*watcher, top, o, fds); },
        [&o] {
          asio::error_code ignored;
          o.socket.close(ignored);
        });
    ended = co_await Stream(*watcher, top, o);
  }
  // The terminating chunk goes through the response, so the connection
  // serves the next request as after any complete answer.
  if (ended) co_await res.End();
}

// A watch stream the previous binary served (an upgrade in place): its
// socket, its watcher and the bytes it had formatted and not yet sent.
struct AdoptedWatch {
  AdoptedWatch(asio::io_context& io, std::shared_ptr<int64_t> active, TreeWatcher w)
      : socket(io), slot(std::move(active)), watcher(std::move(w)) {}
  Socket socket;
  WatchSlot slot;
  TreeWatcher watcher;
  std::string top;
  std::optional<WatchOutput> output;
  HandedStreams::Entry entry;
};

// `w` lives in the coroutine's frame until the stream ends. No HTTP
// connection was handed over with it, so the socket closes after the
// terminating chunk.
asio::awaitable<void> StreamAdopted(std::shared_ptr<AdoptedWatch> w) {
  bool ended = co_await Stream(w->watcher, w->top, *w->output);
  if (ended) {
    w->output->out.append("0\r\n\r\n");
    asio::error_code flushed =
        co_await FlushExact(w->socket, w->output->out, w->output->write_limit);
    (void)flushed;  // the socket closes either way
  }
  asio::error_code ignored;
  w->socket.shutdown(asio::socket_base::shutdown_both, ignored);
  w->socket.close(ignored);
}

Status AdoptWatch(asio::io_context& io, WatchRoute r, std::shared_ptr<int64_t> active,
                  const json::Value& e) {
  const json::Value* client = e.Find("client_fd");
  const json::Value* top = e.Find("top");
  const json::Value* next_id = e.Find("next_id");
  const json::Value* out = e.Find("out_b64");
  const json::Value* saved = e.Find("watcher");
  std::optional<std::string> bytes;
  if (out && out->is_string()) bytes = Base64Decode(out->as_string());
  if (!client || !client->is_int() || client->as_int() < 3 || client->as_int() > INT32_MAX ||
      !top || !top->is_string() || !next_id || !next_id->is_int() || next_id->as_int() < 1 ||
      !bytes || !saved) {
    return Status::InvalidRequest("a handed-over watch stream is malformed");
  }
  int fd = static_cast<int>(client->as_int());
  std::optional<StreamProtocol> protocol = InheritedSocketProtocol(fd);
  if (!protocol)
    return PosixError(errno, "a handed-over watch stream's descriptor is not a socket");
  Result<TreeWatcher> watcher = TreeWatcher::Restore(r.fs.root(), *saved);
  if (!watcher.ok()) return watcher.status();
  // The watcher owns the inotify descriptor now; the socket follows.
  auto w = std::make_shared<AdoptedWatch>(io, std::move(active), std::move(*watcher));
  asio::error_code ec;
  w->socket.assign(*protocol, fd, ec);
  if (ec) {
    ::close(fd);
    return Status::Ok();  // the stream ended; its watcher closes with `w`
  }
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  w->top = top->as_string();
  w->output.emplace(WatchOutput{w->socket, r.ctx.config.limits.io_timeout, std::move(*bytes),
                                static_cast<uint64_t>(next_id->as_int())});
  AdoptedWatch* raw = w.get();
  w->entry = r.ctx.streams.Add(
      [raw](std::vector<int>& fds) {
        return DescribeWatch(raw->watcher, raw->top, *raw->output, fds);
      },
      [raw] {
        asio::error_code ignored;
        raw->socket.close(ignored);
      });
  asio::co_spawn(io, StreamAdopted(std::move(w)), asio::detached);
  return Status::Ok();
}

}  // namespace

void RegisterFsWatchRoutes(Router& router, ApiContext& ctx, FsService& fs, asio::io_context& io) {
  auto active = std::make_shared<int64_t>(0);
  ctx.streams.SetAdopter("watch", [&io, route = WatchRoute{ctx, fs}, active](const json::Value& e) {
    return AdoptWatch(io, route, active, e);
  });
  router.Add("GET", "/v1/fs/watch",
             [route = WatchRoute{ctx, fs}, active](Request& req, Response& res) {
               return Watch(route, active, req, res);
             });
}

}  // namespace agentd
