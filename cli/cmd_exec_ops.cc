// Commands on existing execs: poll, logs, wait, ack, kill, ps, stdin.
#include <fcntl.h>
#include <unistd.h>

#include <charconv>

#include "agentd/protocol/base64.h"
#include "commands.h"
#include "exec_format.h"
#include "exit_codes.h"

namespace agentd::cli {
namespace {

std::optional<uint64_t> Number(const ParsedArgs& args, std::string_view flag, bool* bad) {
  std::optional<std::string> text = args.Get(flag);
  if (!text) return std::nullopt;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc() || end != text->data() + text->size()) *bad = true;
  return n;
}

std::string Id(const Context& ctx) { return ctx.args().positional.at(0); }

}  // namespace

int CmdPoll(Context& ctx) {
  bool bad = false;
  client::PollOptions o;
  o.stdout_from = Number(ctx.args(), "stdout-from", &bad);
  o.stderr_from = Number(ctx.args(), "stderr-from", &bad);
  o.max_bytes = Number(ctx.args(), "max-bytes", &bad);
  if (auto w = Number(ctx.args(), "wait-ms", &bad)) o.wait = std::chrono::milliseconds(*w);
  if (bad)
    return ctx.out().UsageError(
        "--stdout-from, --stderr-from, --max-bytes and --wait-ms take whole numbers");
  Result<ExecPollResponse> r = ctx.client().PollExec(Id(ctx), o);
  if (!r.ok()) return ctx.out().Fail(r.status());
  std::string human = DescribeExec(r->exec);
  if (r->stdout_slice)
    human += "--- stdout [" + std::to_string(r->stdout_slice->from) + ", " +
             std::to_string(r->stdout_slice->next) + ")\n" + r->stdout_slice->data;
  if (r->stderr_slice)
    human += "--- stderr [" + std::to_string(r->stderr_slice->from) + ", " +
             std::to_string(r->stderr_slice->next) + ")\n" + r->stderr_slice->data;
  return ctx.out().Succeed(EncodeExecPollResponse(*r), human);
}

int CmdLogs(Context& ctx) {
  bool bad = false;
  client::StreamCursors from{Number(ctx.args(), "stdout-from", &bad).value_or(0),
                             Number(ctx.args(), "stderr-from", &bad).value_or(0)};
  if (bad) return ctx.out().UsageError("--stdout-from and --stderr-from take whole numbers");
  bool json = ctx.out().json();
  std::string out_text, err_text;
  client::StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) {
    json ? void(out_text.append(b)) : WriteAllTo(STDOUT_FILENO, b);
  };
  cb.on_stderr = [&](uint64_t, std::string_view b) {
    json ? void(err_text.append(b)) : WriteAllTo(STDERR_FILENO, b);
  };
  cb.on_gap = [&](std::string_view stream, uint64_t f, uint64_t t) {
    if (!json) {
      std::string note = "agentctl: " + std::to_string(t - f) + " bytes of " + std::string(stream) +
                         " are no longer retained (gap " + std::to_string(f) + "-" +
                         std::to_string(t) + ")\n";
      WriteAllTo(STDERR_FILENO, note);
    }
  };
  client::StreamCursors end = from;
  if (ctx.args().Has("follow")) {
    cb.on_cursors = [&](const client::StreamCursors& c) { end = c; };
    Result<ExecInfo> r = ctx.client().Stream(Id(ctx), from, cb);
    if (!r.ok()) return ctx.out().Fail(r.status());
  } else {
    // What is there now, in bounded polls, without waiting for more.
    for (;;) {
      client::PollOptions o;
      o.stdout_from = end.stdout_next;
      o.stderr_from = end.stderr_next;
      Result<ExecPollResponse> r = ctx.client().PollExec(Id(ctx), o);
      if (!r.ok()) return ctx.out().Fail(r.status());
      for (const auto* slice : {&r->stdout_slice, &r->stderr_slice}) {
        if (!*slice) continue;
        bool is_out = slice == &r->stdout_slice;
        if ((*slice)->gap_from && cb.on_gap)
          cb.on_gap(is_out ? "stdout" : "stderr", *(*slice)->gap_from, (*slice)->from);
        (is_out ? cb.on_stdout : cb.on_stderr)((*slice)->from, (*slice)->data);
      }
      bool more =
          r->stdout_slice->next > end.stdout_next || r->stderr_slice->next > end.stderr_next;
      end = {r->stdout_slice->next, r->stderr_slice->next};
      if (!more) break;
    }
  }
  json::Object result;
  result.Set("stdout", out_text);
  result.Set("stderr", err_text);
  result.Set("stdout_next", end.stdout_next);
  result.Set("stderr_next", end.stderr_next);
  return ctx.out().Succeed(result, "");
}

int CmdWait(Context& ctx) {
  bool bad = false;
  uint64_t seconds = Number(ctx.args(), "for", &bad).value_or(86400);
  if (bad) return ctx.out().UsageError("--for takes whole seconds");
  if (IsConditionWait(ctx)) return CmdWaitCondition(ctx, std::chrono::seconds(seconds));
  if (ctx.args().positional.size() != 1) {
    return ctx.out().UsageError("wait takes an exec ID, or port N, path P or output ID PATTERN");
  }
  Result<ExecInfo> r = ctx.client().WaitExec(Id(ctx), std::chrono::seconds(seconds));
  if (!r.ok()) return ctx.out().Fail(r.status());
  ctx.out().Succeed(EncodeExecInfo(*r), ctx.out().json() ? "" : DescribeExec(*r));
  return RemoteExitStatus(*r);
}

int CmdAck(Context& ctx) {
  Result<ExecInfo> r = ctx.client().AckExec(Id(ctx));
  if (!r.ok()) return ctx.out().Fail(r.status());
  return ctx.out().Succeed(EncodeExecInfo(*r), "acked " + r->id);
}

int CmdEgress(Context& ctx) {
  Result<EgressReport> r = ctx.client().ExecEgress(Id(ctx));
  if (!r.ok()) return ctx.out().Fail(r.status());
  std::string text;
  if (!r->accounting && r->incomplete) {
    text = r->id + ": egress counts lost since " + r->incomplete->since + ": " +
           r->incomplete->why + "\n";
  } else if (!r->accounting) {
    text = r->id + ": no egress accounting (it ran without an egress policy)\n";
  } else {
    if (r->incomplete) {
      text = "incomplete: not counted since " + r->incomplete->since + ": " + r->incomplete->why +
             "\n";
    }
    text += r->id + ": " + std::to_string(r->attempts) + " attempts, " +
            std::to_string(r->allowed) + " allowed, " + std::to_string(r->refused) + " refused" +
            (r->overflow ? ", " + std::to_string(r->overflow) + " past the table's bound" : "") +
            "\n";
    if (r->policy && !r->policy->resolved.empty()) {
      text += "resolved at start: " + DescribeResolved(*r->policy) + "\n";
    }
    std::vector<std::vector<std::string>> rows = {
        {"VERDICT", "PROTO", "DESTINATION", "COUNT", "FIRST", "LAST"}};
    for (const EgressDestination& d : r->destinations) {
      std::string dest = d.address.empty()    ? "(socket)"
                         : d.family == "ipv6" ? "[" + d.address + "]:" + std::to_string(d.port)
                                              : d.address + ":" + std::to_string(d.port);
      rows.push_back({d.verdict, d.protocol, dest, std::to_string(d.count), d.first_at, d.last_at});
    }
    if (!r->destinations.empty()) text += Output::Table(rows);
  }
  return ctx.out().Succeed(EncodeEgressReport(*r), text);
}

int CmdKill(Context& ctx) {
  bool bad = false;
  KillRequest k;
  k.signal = ctx.args().Get("signal");
  if (auto g = Number(ctx.args(), "grace", &bad)) k.grace_sec = static_cast<int64_t>(*g);
  if (bad) return ctx.out().UsageError("--grace takes whole seconds");
  Result<ExecInfo> r = ctx.client().KillExec(Id(ctx), k);
  if (!r.ok()) return ctx.out().Fail(r.status());
  return ctx.out().Succeed(EncodeExecInfo(*r), DescribeExec(*r));
}

int CmdPs(Context& ctx) {
  Result<std::vector<ExecInfo>> r = ctx.client().ListExecs();
  if (!r.ok()) return ctx.out().Fail(r.status());
  std::vector<std::vector<std::string>> rows = {
      {"ID", "STATE", "PID", "EXIT", "DURATION", "STDOUT", "STDERR", "ACKED"}};
  for (const ExecInfo& e : *r) {
    rows.push_back({e.id, e.running ? "running" : "exited", std::to_string(e.pid),
                    e.exit_code ? std::to_string(*e.exit_code) : "-",
                    std::to_string(e.duration_ms) + " ms", Output::HumanSize(e.stdout_bytes),
                    Output::HumanSize(e.stderr_bytes), e.acked ? "yes" : "no"});
  }
  return ctx.out().Succeed(EncodeExecList(*r), Output::Table(rows));
}

int CmdStdin(Context& ctx) {
  bool bad = false;
  uint64_t offset = Number(ctx.args(), "offset", &bad).value_or(0);
  if (bad) return ctx.out().UsageError("--offset takes a whole number");
  std::string source = ctx.args().positional.size() > 1 ? ctx.args().positional[1] : "-";
  int fd = source == "-" ? STDIN_FILENO : ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ctx.out().UsageError("cannot read " + source);
  std::string data;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) data.append(buf, static_cast<size_t>(n));
  Result<uint64_t> next =
      ctx.client().WriteStdin(Id(ctx), offset, std::move(data), ctx.args().Has("eof"));
  if (!next.ok()) return ctx.out().Fail(next.status());
  json::Object result;
  result.Set("next", *next);
  return ctx.out().Succeed(result, "stdin offset now " + std::to_string(*next));
}

}  // namespace agentd::cli
