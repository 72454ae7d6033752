#include "limits/nft_socket.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agentd {
namespace {

constexpr size_t kAnswerBuffer = 64 * 1024;

Status SendAll(int fd, const std::vector<uint8_t>& bytes, const std::string& what) {
  struct sockaddr_nl kernel = {};
  kernel.nl_family = AF_NETLINK;
  ssize_t n = ::sendto(fd, bytes.data(), bytes.size(), 0,
                       reinterpret_cast<struct sockaddr*>(&kernel), sizeof(kernel));
  if (n < 0) return NftError(errno, what);
  if (static_cast<size_t>(n) != bytes.size()) return NftError(EMSGSIZE, what);
  return Status::Ok();
}

}  // namespace

Status NftError(int err, const std::string& what) {
  return Status::Error(ErrorCode::kLimitUnsupported,
                       "nftables refused " + what + ": " + std::strerror(err))
      .With("field", std::string("egress"));
}

NftSocket::~NftSocket() {
  if (fd_ >= 0) ::close(fd_);
}

Status NftSocket::Open() {
  fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (fd_ < 0) return NftError(errno, "a netlink socket");
  struct sockaddr_nl self = {};
  self.nl_family = AF_NETLINK;  // nl_pid 0: the kernel picks a port id
  if (::bind(fd_, reinterpret_cast<struct sockaddr*>(&self), sizeof(self)) < 0) {
    return NftError(errno, "a netlink bind");
  }
  int on = 1;
  // Errors answer with the failed message's header only; a large batch
  // goes in one transaction (SO_SNDBUFFORCE: CAP_NET_ADMIN, which nf_tables
  // needs anyway).
  ::setsockopt(fd_, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof(on));
  int size = 4 << 20;
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
  return Status::Ok();
}

Status NftSocket::Send(NftBatch& b, const std::string& what) {
  AGENTD_RETURN_IF_ERROR(SendAll(fd_, b.Finish(), what));
  // nfnetlink handles the batch inside sendto: every answer is queued now.
  std::vector<uint8_t> answer(kAnswerBuffer);
  NetlinkAck first_error;
  for (size_t acks = 0; acks < b.requests();) {
    ssize_t n = ::recv(fd_, answer.data(), answer.size(), MSG_DONTWAIT);
    if (n <= 0 && first_error.error != 0) break;  // an aborted batch answers no more
    if (n <= 0) return NftError(n < 0 ? errno : EPROTO, what + " (missing acknowledgements)");
    bool ok = ForEachMessage({answer.data(), static_cast<size_t>(n)},
                             [&](const struct nlmsghdr& h, NetlinkSpan payload) {
                               NetlinkAck ack;
                               if (h.nlmsg_type != NLMSG_ERROR || !ParseAck(payload, &ack)) return;
                               ++acks;
                               if (ack.error != 0 && first_error.error == 0) first_error = ack;
                             });
    if (!ok) return NftError(EPROTO, what + " (a malformed answer)");
  }
  if (first_error.error != 0) {
    return NftError(first_error.error, what + " (at " + b.NameOf(first_error.seq) + ")");
  }
  return Status::Ok();
}

Status NftSocket::Dump(const std::vector<uint8_t>& request, const std::string& what,
                       const std::function<bool(NetlinkSpan)>& answer) {
  AGENTD_RETURN_IF_ERROR(SendAll(fd_, request, what));
  uint32_t seq = reinterpret_cast<const struct nlmsghdr*>(request.data())->nlmsg_seq;
  std::vector<uint8_t> buf(kAnswerBuffer);
  for (;;) {
    ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return NftError(n < 0 ? errno : EPROTO, what);
    int error = 0;
    bool done = false, ok = true;
    bool parsed = ForEachMessage({buf.data(), static_cast<size_t>(n)},
                                 [&](const struct nlmsghdr& h, NetlinkSpan payload) {
                                   if (h.nlmsg_seq != seq || done || error != 0) return;
                                   NetlinkAck ack;
                                   if (h.nlmsg_type == NLMSG_DONE) {
                                     done = true;
                                   } else if (h.nlmsg_type == NLMSG_ERROR) {
                                     ok = ParseAck(payload, &ack) && ok;
                                     error = ack.error;
                                     done = true;  // an acknowledgement ends it too
                                   } else {
                                     ok = answer(payload) && ok;
                                   }
                                 });
    if (!parsed || !ok) return NftError(EPROTO, what + " (a malformed answer)");
    if (error != 0) return NftError(error, what);
    if (done) return Status::Ok();
  }
}

}  // namespace agentd
