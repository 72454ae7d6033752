#include "server/handed_streams.h"

#include <unistd.h>

#include "log/log.h"

namespace agentd {

struct HandedStreams::Entry::Table {
  struct Stream {
    Describe describe;
    Close close;
  };
  std::map<uint64_t, Stream> streams;  // by id: handed over in start order
  uint64_t next_id = 1;
};

HandedStreams::Entry::Entry(Entry&& other) noexcept
    : table_(std::move(other.table_)), id_(other.id_) {
  other.id_ = 0;
}

HandedStreams::Entry& HandedStreams::Entry::operator=(Entry&& other) noexcept {
  if (this != &other) {
    if (table_) table_->streams.erase(id_);
    table_ = std::move(other.table_);
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
}

HandedStreams::Entry::~Entry() {
  if (table_) table_->streams.erase(id_);
}

HandedStreams::HandedStreams() : table_(std::make_shared<Entry::Table>()) {}

HandedStreams::Entry HandedStreams::Add(Describe describe, Close close) {
  uint64_t id = table_->next_id++;
  table_->streams[id] = Entry::Table::Stream{std::move(describe), std::move(close)};
  return Entry(table_, id);
}

void HandedStreams::SetAdopter(std::string kind, Adopter adopt) {
  adopters_[std::move(kind)] = std::move(adopt);
}

json::Array HandedStreams::HandOver(std::vector<int>& fds) const {
  json::Array out;
  for (const auto& [id, stream] : table_->streams) {
    json::Value entry = stream.describe(fds);
    if (!entry.is_null()) out.push_back(std::move(entry));
  }
  return out;
}

std::vector<int> EntryFds(const json::Value& entry) {
  std::vector<int> fds;
  const json::Value* list = entry.Find("fds");
  if (!list || !list->is_array()) return fds;
  for (const json::Value& fd : list->as_array()) {
    if (fd.is_int() && fd.as_int() > 2 && fd.as_int() <= INT32_MAX) {
      fds.push_back(static_cast<int>(fd.as_int()));
    }
  }
  return fds;
}

size_t HandedStreams::Adopt(const json::Array& entries) {
  size_t adopted = 0;
  for (const json::Value& entry : entries) {
    const json::Value* kind = entry.Find("kind");
    std::string name = kind && kind->is_string() ? kind->as_string() : std::string();
    auto it = adopters_.find(name);
    Status s = it == adopters_.end()
                   ? Status::InvalidRequest("no stream of kind \"" + name + "\" can be taken over")
                   : it->second(entry);
    if (s.ok()) {
      ++adopted;
      continue;
    }
    // Its client sees a closed connection, as before streams were handed over.
    Log(LogLevel::kWarn, "a handed-over stream could not be taken over; closed",
        json::Object().Set("kind", name).Set("error", s.message()));
    for (int fd : EntryFds(entry)) ::close(fd);
  }
  return adopted;
}

void HandedStreams::CloseAll() {
  std::vector<Close> closers;
  for (const auto& [id, stream] : table_->streams) closers.push_back(stream.close);
  for (const Close& close : closers) close();
}

size_t HandedStreams::size() const { return table_->streams.size(); }

}  // namespace agentd
