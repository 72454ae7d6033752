// Limits (docs/PROTOCOL.md, "Limits").
#include "agentd/protocol/limits.h"

namespace agentd {
namespace {

template <typename T>
void Take(std::optional<T>& out, const std::optional<T>& mine, const std::optional<T>& fallback) {
  out = mine ? mine : fallback;
}

std::optional<int64_t> IntMember(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (v && v->is_int()) return v->as_int();
  return std::nullopt;
}

LimitHit Hit(std::string name, int64_t value, std::string unit) {
  return LimitHit{std::move(name), value, std::move(unit)};
}

}  // namespace

ExecLimits ExecLimits::Over(const ExecLimits& defaults) const {
  ExecLimits out;
  Take(out.memory_mb, memory_mb, defaults.memory_mb);
  Take(out.pids, pids, defaults.pids);
  Take(out.cpu_sec, cpu_sec, defaults.cpu_sec);
  Take(out.file_size_mb, file_size_mb, defaults.file_size_mb);
  Take(out.output_bytes, output_bytes, defaults.output_bytes);
  Take(out.kill_on_output, kill_on_output, defaults.kill_on_output);
  Take(out.cpus, cpus, defaults.cpus);
  Take(out.disk_bytes, disk_bytes, defaults.disk_bytes);
  Take(out.disk_path, disk_path, defaults.disk_path);
  return out;
}

ExecLimits ReadExecLimits(ObjectReader& r) {
  ExecLimits l;
  l.memory_mb = r.Int("memory_mb", 1, kMaxMemoryMb);
  l.pids = r.Int("pids", 1, kMaxPids);
  l.cpu_sec = r.Int("cpu_sec", 1, kMaxCpuSec);
  l.file_size_mb = r.Int("file_size_mb", 1, kMaxFileSizeMb);
  l.output_bytes = r.Int("output_bytes", kMinOutputBytes, kMaxOutputBytes);
  l.kill_on_output = r.Bool("kill_on_output");
  l.cpus = r.Number("cpus", kMinCpus, kMaxCpus);
  l.disk_bytes = r.Int("disk_bytes", kMinDiskBytes, kMaxDiskBytes);
  l.disk_path = r.String("disk_path");
  if (l.kill_on_output.value_or(false) && !l.output_bytes) {
    r.Fail("kill_on_output", "field \"kill_on_output\" needs \"output_bytes\"");
  }
  if (l.disk_path) {
    const std::string& p = *l.disk_path;
    bool dotdot = p == ".." || p.starts_with("../") || p.ends_with("/..") ||
                  p.find("/../") != std::string::npos;
    if (!l.disk_bytes) {
      r.Fail("disk_path", "field \"disk_path\" needs \"disk_bytes\"");
    } else if (p.empty() || p[0] != '/' || p.size() > kMaxDiskPathBytes ||
               p.find('\0') != std::string::npos || dotdot || p == "/") {
      r.Fail("disk_path", "field \"disk_path\" must be an absolute path other than / of at most " +
                              std::to_string(kMaxDiskPathBytes) + " bytes, without NUL or ..");
    }
  }
  return l;
}

void WriteExecLimits(json::Object& o, const ExecLimits& l) {
  if (l.memory_mb) o.Set("memory_mb", *l.memory_mb);
  if (l.pids) o.Set("pids", *l.pids);
  if (l.cpu_sec) o.Set("cpu_sec", *l.cpu_sec);
  if (l.file_size_mb) o.Set("file_size_mb", *l.file_size_mb);
  if (l.output_bytes) o.Set("output_bytes", *l.output_bytes);
  if (l.kill_on_output) o.Set("kill_on_output", *l.kill_on_output);
  if (l.cpus) o.Set("cpus", *l.cpus);
  if (l.disk_bytes) o.Set("disk_bytes", *l.disk_bytes);
  if (l.disk_path) o.Set("disk_path", *l.disk_path);
}

ExecLimits ParseExecLimits(const json::Value& doc) {
  ExecLimits l;
  l.memory_mb = IntMember(doc, "memory_mb");
  l.pids = IntMember(doc, "pids");
  l.cpu_sec = IntMember(doc, "cpu_sec");
  l.file_size_mb = IntMember(doc, "file_size_mb");
  l.output_bytes = IntMember(doc, "output_bytes");
  if (const json::Value* v = doc.Find("kill_on_output"); v && v->is_bool()) {
    l.kill_on_output = v->as_bool();
  }
  if (const json::Value* v = doc.Find("cpus"); v && v->is_number()) l.cpus = v->as_double();
  l.disk_bytes = IntMember(doc, "disk_bytes");
  if (const json::Value* v = doc.Find("disk_path"); v && v->is_string())
    l.disk_path = v->as_string();
  return l;
}

LimitHit TimeoutHit(int64_t timeout_sec) { return Hit("timeout", timeout_sec, "s"); }
LimitHit MemoryHit(int64_t memory_mb) { return Hit("memory", memory_mb, "MiB"); }
LimitHit PidsHit(int64_t pids) { return Hit("pids", pids, "processes"); }
LimitHit CpuHit(int64_t cpu_sec) { return Hit("cpu", cpu_sec, "s"); }
LimitHit FileSizeHit(int64_t file_size_mb) { return Hit("file_size", file_size_mb, "MiB"); }
LimitHit OutputHit(int64_t output_bytes) { return Hit("output", output_bytes, "bytes"); }
LimitHit DiskHit(int64_t disk_bytes) { return Hit("disk", disk_bytes, "bytes"); }

json::Value EncodeLimitHit(const LimitHit& hit) {
  json::Object o;
  o.Set("name", hit.name);
  o.Set("value", hit.value);
  o.Set("unit", hit.unit);
  return o;
}

std::optional<LimitHit> DecodeLimitHit(const json::Value* doc) {
  if (!doc || !doc->is_object()) return std::nullopt;
  const json::Value* name = doc->Find("name");
  const json::Value* value = doc->Find("value");
  const json::Value* unit = doc->Find("unit");
  if (!name || !name->is_string() || !value || !value->is_int()) return std::nullopt;
  return LimitHit{name->as_string(), value->as_int(),
                  unit && unit->is_string() ? unit->as_string() : ""};
}

std::string DescribeLimit(const LimitHit& hit) {
  std::string v = std::to_string(hit.value);
  if (hit.name == "timeout") return "wall-clock limit " + v + "s";
  if (hit.name == "memory") return "memory limit " + v + " MiB";
  if (hit.name == "pids") return "process limit " + v;
  if (hit.name == "cpu") return "CPU time limit " + v + "s";
  if (hit.name == "file_size") return "file size limit " + v + " MiB";
  if (hit.name == "output") return "output limit " + v + " bytes";
  return hit.name + " limit " + v + (hit.unit.empty() ? "" : " " + hit.unit);
}

}  // namespace agentd
