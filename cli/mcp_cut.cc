#include "mcp_cut.h"

#include <utility>
#include <vector>

#include "agentd/protocol/run.h"

namespace agentd::cli::mcp {
namespace {

// Room kept for the "cut" record itself.
constexpr size_t kCutRecordBytes = 512;

struct Largest {
  json::Value* node = nullptr;
  std::string path;
  size_t bytes = 0;
};

void FindLargest(json::Value& v, const std::string& path, Largest* best) {
  if (v.is_string() || v.is_array()) {
    size_t bytes = json::Serialize(v).size();
    if (bytes > best->bytes) *best = Largest{&v, path, bytes};
  }
  if (v.is_array()) {
    json::Array& a = v.as_array();
    for (size_t i = 0; i < a.size(); ++i)
      FindLargest(a[i], path + "[" + std::to_string(i) + "]", best);
  } else if (v.is_object()) {
    std::vector<std::string> keys;
    for (const json::Member& m : v.as_object().members()) keys.push_back(m.key);
    for (const std::string& k : keys)
      FindLargest(*v.as_object().Find(k), path.empty() ? k : path + "." + k, best);
  }
}

// Shrinks one string or array by at least `excess` serialized bytes;
// answers the record of the cut.
json::Object Shrink(json::Value& node, size_t excess) {
  json::Object record;
  if (node.is_string()) {
    const std::string& s = node.as_string();
    size_t want = s.size() > excess + 64 ? s.size() - excess - 64 : 0;
    std::string kept(Utf8Head(s, want));
    record.Set("bytes", s.size()).Set("kept_bytes", kept.size());
    node = kept + OmittedMarker(s.size() - kept.size());
    return record;
  }
  json::Array& a = node.as_array();
  size_t items = a.size();
  size_t removed = 0;
  while (!a.empty() && removed < excess) {
    removed += json::Serialize(a.back()).size() + 1;
    a.pop_back();
  }
  record.Set("items", items).Set("kept_items", a.size());
  return record;
}

}  // namespace

std::string CutText(std::string text, size_t max) {
  if (text.size() <= max) return text;
  std::string marker = "\n[cut: " + std::to_string(text.size()) +
                       " bytes, the first %s shown; the bound is --max-result-bytes " +
                       std::to_string(max) + "]\n";
  size_t keep = max > marker.size() + 16 ? max - marker.size() - 16 : 0;
  std::string out(Utf8Head(text, keep));
  std::string shown = std::to_string(out.size());
  marker.replace(marker.find("%s"), 2, shown);
  return out + marker;
}

void CutStructured(json::Object& doc, size_t max) {
  size_t target = max > kCutRecordBytes * 2 ? max - kCutRecordBytes : max / 2;
  json::Object fields;
  json::Value root(std::move(doc));
  for (int round = 0; round < 32; ++round) {
    size_t size = json::Serialize(root).size();
    if (size <= target) break;
    Largest best;
    FindLargest(root, "", &best);
    if (!best.node || best.bytes < 64) break;
    fields.Set(best.path, Shrink(*best.node, size - target));
  }
  doc = std::move(root.as_object());
  if (fields.empty()) return;
  // A tool's own record of a cut (read_file's next line) is kept.
  json::Object cut;
  if (const json::Value* own = doc.Find("cut"); own && own->is_object()) cut = own->as_object();
  cut.Set("max_result_bytes", max).Set("fields", std::move(fields));
  doc.Set("cut", std::move(cut));
  if (json::Serialize(doc).size() > max) {
    // Too many small members to cut one by one: keep only the record.
    json::Object only;
    only.Set("cut", json::Object()
                        .Set("max_result_bytes", max)
                        .Set("message", "the structured result did not fit; see the text content"));
    doc = std::move(only);
  }
}

void HeadTail::Add(std::string_view bytes) {
  total_ += bytes.size();
  if (head_.size() < half_) {
    size_t n = std::min(half_ - head_.size(), bytes.size());
    head_.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  tail_.append(bytes);
  // Trim in batches so a chatty stream costs amortized O(1) per byte.
  if (tail_.size() > 2 * half_ + 4096) tail_.erase(0, tail_.size() - half_);
}

std::string HeadTail::Text() const {
  std::string_view tail = tail_;
  if (tail.size() > half_) tail = tail.substr(tail.size() - half_);
  uint64_t omitted = total_ - head_.size() - tail.size();
  if (omitted == 0) return head_ + std::string(tail);
  return std::string(Utf8Head(head_, head_.size())) + OmittedMarker(omitted) +
         std::string(Utf8Tail(tail, tail.size()));
}

}  // namespace agentd::cli::mcp
