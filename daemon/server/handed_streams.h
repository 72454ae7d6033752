// HandedStreams: the byte streams an upgrade in place carries over
// (docs/OPERATIONS.md, "Upgrade"): port tunnels and watch streams, whose
// sockets the next binary inherits with the bytes the old one had read
// and not yet written, so the client never sees the execve.
//
// A live stream registers a description (called at the moment of the
// execve, on the io thread) and a closer; the entry unregisters when the
// stream ends. The next binary gives each described entry to the adopter
// registered for its "kind". Every entry lists its descriptors in "fds",
// so one that cannot be taken (an unknown kind, a refusal) is closed
// rather than leaked. A guest reset closes every registered stream, the
// adopted ones included (they belong to no HTTP connection).
//
// Used only on the io thread. Entries may outlive the object (a stream's
// coroutine frame is destroyed with the io_context): they share its table.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

class HandedStreams {
 public:
  // The entry for the next binary ("kind", "fds" and the kind's fields),
  // its descriptors appended to `fds`; null for a stream that is ending
  // and has nothing to hand over.
  using Describe = std::function<json::Value(std::vector<int>& fds)>;
  using Close = std::function<void()>;
  using Adopter = std::function<Status(const json::Value& entry)>;

  class Entry {
   public:
    Entry() = default;
    Entry(Entry&& other) noexcept;
    Entry& operator=(Entry&& other) noexcept;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry();

   private:
    friend class HandedStreams;
    struct Table;
    Entry(std::shared_ptr<Table> table, uint64_t id) : table_(std::move(table)), id_(id) {}
    std::shared_ptr<Table> table_;
    uint64_t id_ = 0;
  };

  HandedStreams();
  Entry Add(Describe describe, Close close);
  void SetAdopter(std::string kind, Adopter adopt);

  // The descriptions of every live stream.
  json::Array HandOver(std::vector<int>& fds) const;
  // Gives each entry to its kind's adopter; one refused is logged and its
  // descriptors closed. The count adopted.
  size_t Adopt(const json::Array& entries);
  void CloseAll();
  size_t size() const;

 private:
  std::shared_ptr<Entry::Table> table_;
  std::map<std::string, Adopter> adopters_;
};

// The descriptors an entry lists in "fds" (those a refusal closes).
std::vector<int> EntryFds(const json::Value& entry);

}  // namespace agentd
