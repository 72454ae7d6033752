// A netlink socket to nf_tables (NETLINK_NETFILTER): a batch sent and
// every request's acknowledgement read, a dump read to its end. A refusal
// is limit_unsupported naming the kernel's errno and the request it
// refused.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agentd/protocol/status.h"
#include "limits/netlink_reader.h"
#include "limits/nft_messages.h"

namespace agentd {

Status NftError(int err, const std::string& what);

class NftSocket {
 public:
  NftSocket() = default;
  NftSocket(const NftSocket&) = delete;
  NftSocket& operator=(const NftSocket&) = delete;
  ~NftSocket();

  Status Open();
  // Sends the batch; Ok when every request was acknowledged, else the
  // first error and the request it answers (`what` names the whole).
  Status Send(NftBatch& b, const std::string& what);
  // Sends a dump request (one of NftDump*) and passes each answer's
  // payload to `answer` until the kernel's NLMSG_DONE; `answer` false: a
  // malformed answer.
  Status Dump(const std::vector<uint8_t>& request, const std::string& what,
              const std::function<bool(NetlinkSpan)>& answer);

 private:
  int fd_ = -1;
};

}  // namespace agentd
