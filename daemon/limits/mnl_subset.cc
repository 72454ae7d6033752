// The part of libmnl's API that libnftnl calls (docs/BUILDING.md,
// "libnftnl, the nftables egress rung"): netlink attribute and message
// builders, their parsers, the batch buffer and a netlink socket.
//
// Why here and not Debian's libmnl: libmnl-dev ships only a shared
// library, and the static daemon cannot link one; Debian's source package
// of it is not reachable from the registries this project's machines and
// CI reach (its orig tarball answers 404 there). libnftnl.a references
// these symbols; each is defined as libmnl 1.0.4 documents it in
// <libmnl/libmnl.h>, whose prototypes this file includes, so a signature
// that drifts fails the build. Nothing here is called by agentd's own code
// except the socket helpers.
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

char* MnlTail(const struct nlmsghdr* nlh) {
  return reinterpret_cast<char*>(const_cast<struct nlmsghdr*>(nlh)) + MNL_ALIGN(nlh->nlmsg_len);
}

// The payload length each fixed-size type must have (0: not fixed).
size_t MnlFixedLen(enum mnl_attr_data_type type) {
  switch (type) {
    case MNL_TYPE_U8:
      return 1;
    case MNL_TYPE_U16:
      return 2;
    case MNL_TYPE_U32:
      return 4;
    case MNL_TYPE_U64:
    case MNL_TYPE_MSECS:
      return 8;
    default:
      return 0;
  }
}

int MnlFail(int e) {
  errno = e;
  return -1;
}

}  // namespace

struct mnl_socket {
  int fd;
  struct sockaddr_nl addr;
};

struct mnl_nlmsg_batch {
  char* buf;
  size_t limit;
  size_t buflen;
  char* cur;
  bool overflow;
};

extern "C" {

// Messages.
struct nlmsghdr* mnl_nlmsg_put_header(void* buf) {
  std::memset(buf, 0, MNL_NLMSG_HDRLEN);
  auto* nlh = static_cast<struct nlmsghdr*>(buf);
  nlh->nlmsg_len = MNL_NLMSG_HDRLEN;
  return nlh;
}

void* mnl_nlmsg_put_extra_header(struct nlmsghdr* nlh, size_t size) {
  char* p = MnlTail(nlh);
  nlh->nlmsg_len += static_cast<uint32_t>(MNL_ALIGN(size));
  std::memset(p, 0, size);
  return p;
}

void* mnl_nlmsg_get_payload(const struct nlmsghdr* nlh) {
  return const_cast<char*>(reinterpret_cast<const char*>(nlh)) + MNL_NLMSG_HDRLEN;
}

void* mnl_nlmsg_get_payload_offset(const struct nlmsghdr* nlh, size_t offset) {
  return static_cast<char*>(mnl_nlmsg_get_payload(nlh)) + MNL_ALIGN(offset);
}

void* mnl_nlmsg_get_payload_tail(const struct nlmsghdr* nlh) { return MnlTail(nlh); }

bool mnl_nlmsg_ok(const struct nlmsghdr* nlh, int len) {
  return len >= static_cast<int>(sizeof(struct nlmsghdr)) &&
         nlh->nlmsg_len >= sizeof(struct nlmsghdr) && static_cast<int>(nlh->nlmsg_len) <= len;
}

struct nlmsghdr* mnl_nlmsg_next(const struct nlmsghdr* nlh, int* len) {
  *len -= static_cast<int>(MNL_ALIGN(nlh->nlmsg_len));
  return reinterpret_cast<struct nlmsghdr*>(MnlTail(nlh));
}

// Batches: messages laid one after another in a caller's buffer.
struct mnl_nlmsg_batch* mnl_nlmsg_batch_start(void* buf, size_t limit) {
  auto* b = static_cast<struct mnl_nlmsg_batch*>(std::malloc(sizeof(struct mnl_nlmsg_batch)));
  if (!b) return nullptr;
  b->buf = static_cast<char*>(buf);
  b->limit = limit;
  b->buflen = 0;
  b->cur = b->buf;
  b->overflow = false;
  return b;
}

void mnl_nlmsg_batch_stop(struct mnl_nlmsg_batch* b) { std::free(b); }

bool mnl_nlmsg_batch_next(struct mnl_nlmsg_batch* b) {
  auto* nlh = reinterpret_cast<struct nlmsghdr*>(b->cur);
  if (b->buflen + nlh->nlmsg_len > b->limit) {
    b->overflow = true;
    return false;
  }
  b->cur = b->buf + b->buflen + nlh->nlmsg_len;
  b->buflen += nlh->nlmsg_len;
  return true;
}

void mnl_nlmsg_batch_reset(struct mnl_nlmsg_batch* b) {
  if (b->overflow) {  // the message that did not fit starts the next batch
    auto* nlh = reinterpret_cast<struct nlmsghdr*>(b->cur);
    std::memmove(b->buf, b->cur, nlh->nlmsg_len);
    b->buflen = nlh->nlmsg_len;
    b->cur = b->buf + b->buflen;
    b->overflow = false;
  } else {
    b->buflen = 0;
    b->cur = b->buf;
  }
}

size_t mnl_nlmsg_batch_size(struct mnl_nlmsg_batch* b) { return b->buflen; }
void* mnl_nlmsg_batch_head(struct mnl_nlmsg_batch* b) { return b->buf; }
void* mnl_nlmsg_batch_current(struct mnl_nlmsg_batch* b) { return b->cur; }
bool mnl_nlmsg_batch_is_empty(struct mnl_nlmsg_batch* b) { return b->buflen == 0; }

// Attributes: reading.
uint16_t mnl_attr_get_type(const struct nlattr* attr) { return attr->nla_type & NLA_TYPE_MASK; }
uint16_t mnl_attr_get_len(const struct nlattr* attr) { return attr->nla_len; }
uint16_t mnl_attr_get_payload_len(const struct nlattr* attr) {
  return static_cast<uint16_t>(attr->nla_len - MNL_ATTR_HDRLEN);
}
void* mnl_attr_get_payload(const struct nlattr* attr) {
  return const_cast<char*>(reinterpret_cast<const char*>(attr)) + MNL_ATTR_HDRLEN;
}
uint8_t mnl_attr_get_u8(const struct nlattr* attr) {
  return *static_cast<const uint8_t*>(mnl_attr_get_payload(attr));
}
uint16_t mnl_attr_get_u16(const struct nlattr* attr) {
  uint16_t v;
  std::memcpy(&v, mnl_attr_get_payload(attr), sizeof(v));
  return v;
}
uint32_t mnl_attr_get_u32(const struct nlattr* attr) {
  uint32_t v;
  std::memcpy(&v, mnl_attr_get_payload(attr), sizeof(v));
  return v;
}
uint64_t mnl_attr_get_u64(const struct nlattr* attr) {
  uint64_t v;  // an 8-byte payload is only 4-byte aligned
  std::memcpy(&v, mnl_attr_get_payload(attr), sizeof(v));
  return v;
}
const char* mnl_attr_get_str(const struct nlattr* attr) {
  return static_cast<const char*>(mnl_attr_get_payload(attr));
}

bool mnl_attr_ok(const struct nlattr* attr, int len) {
  return len >= static_cast<int>(sizeof(struct nlattr)) && attr->nla_len >= sizeof(struct nlattr) &&
         static_cast<int>(attr->nla_len) <= len;
}

struct nlattr* mnl_attr_next(const struct nlattr* attr) {
  return reinterpret_cast<struct nlattr*>(const_cast<char*>(reinterpret_cast<const char*>(attr)) +
                                          MNL_ALIGN(attr->nla_len));
}

int mnl_attr_type_valid(const struct nlattr* attr, uint16_t max) {
  return mnl_attr_get_type(attr) > max ? MnlFail(EOPNOTSUPP) : 1;
}

int mnl_attr_validate2(const struct nlattr* attr, enum mnl_attr_data_type type, size_t exp_len) {
  if (type >= MNL_TYPE_MAX) return MnlFail(EINVAL);
  uint16_t len = mnl_attr_get_payload_len(attr);
  const char* data = mnl_attr_get_str(attr);
  if (len < exp_len) return MnlFail(ERANGE);
  switch (type) {
    case MNL_TYPE_FLAG:
      if (len > 0) return MnlFail(ERANGE);
      break;
    case MNL_TYPE_NUL_STRING:
      if (len == 0) return MnlFail(ERANGE);
      if (data[len - 1] != '\0') return MnlFail(EINVAL);
      break;
    case MNL_TYPE_STRING:
      if (len == 0) return MnlFail(ERANGE);
      break;
    case MNL_TYPE_NESTED:
      if (len != 0 && len < MNL_ATTR_HDRLEN) return MnlFail(ERANGE);
      break;
    default:
      break;
  }
  if (exp_len && len > exp_len) return MnlFail(ERANGE);
  return 0;
}

int mnl_attr_validate(const struct nlattr* attr, enum mnl_attr_data_type type) {
  if (type >= MNL_TYPE_MAX) return MnlFail(EINVAL);
  return mnl_attr_validate2(attr, type, MnlFixedLen(type));
}

int mnl_attr_parse_payload(const void* payload, size_t len, mnl_attr_cb_t cb, void* data) {
  int ret = MNL_CB_OK;
  const char* end = static_cast<const char*>(payload) + len;
  for (auto* attr = static_cast<const struct nlattr*>(payload);
       mnl_attr_ok(attr, static_cast<int>(end - reinterpret_cast<const char*>(attr)));
       attr = mnl_attr_next(attr)) {
    if ((ret = cb(attr, data)) <= MNL_CB_STOP) return ret;
  }
  return ret;
}

int mnl_attr_parse(const struct nlmsghdr* nlh, unsigned int offset, mnl_attr_cb_t cb, void* data) {
  const char* start = static_cast<const char*>(mnl_nlmsg_get_payload_offset(nlh, offset));
  return mnl_attr_parse_payload(start, static_cast<size_t>(MnlTail(nlh) - start), cb, data);
}

int mnl_attr_parse_nested(const struct nlattr* nested, mnl_attr_cb_t cb, void* data) {
  return mnl_attr_parse_payload(mnl_attr_get_payload(nested), mnl_attr_get_payload_len(nested), cb,
                                data);
}

// Attributes: writing, at the message's tail; the caller sized the buffer.
void mnl_attr_put(struct nlmsghdr* nlh, uint16_t type, size_t len, const void* data) {
  auto* attr = reinterpret_cast<struct nlattr*>(MnlTail(nlh));
  uint16_t payload_len = static_cast<uint16_t>(MNL_ALIGN(sizeof(struct nlattr)) + len);
  attr->nla_type = type;
  attr->nla_len = payload_len;
  std::memcpy(mnl_attr_get_payload(attr), data, len);
  size_t pad = MNL_ALIGN(len) - len;
  if (pad > 0) std::memset(static_cast<char*>(mnl_attr_get_payload(attr)) + len, 0, pad);
  nlh->nlmsg_len += static_cast<uint32_t>(MNL_ALIGN(payload_len));
}
void mnl_attr_put_u8(struct nlmsghdr* nlh, uint16_t type, uint8_t v) {
  mnl_attr_put(nlh, type, sizeof(v), &v);
}
void mnl_attr_put_u16(struct nlmsghdr* nlh, uint16_t type, uint16_t v) {
  mnl_attr_put(nlh, type, sizeof(v), &v);
}
void mnl_attr_put_u32(struct nlmsghdr* nlh, uint16_t type, uint32_t v) {
  mnl_attr_put(nlh, type, sizeof(v), &v);
}
void mnl_attr_put_u64(struct nlmsghdr* nlh, uint16_t type, uint64_t v) {
  mnl_attr_put(nlh, type, sizeof(v), &v);
}
void mnl_attr_put_str(struct nlmsghdr* nlh, uint16_t type, const char* s) {
  mnl_attr_put(nlh, type, std::strlen(s), s);
}
void mnl_attr_put_strz(struct nlmsghdr* nlh, uint16_t type, const char* s) {
  mnl_attr_put(nlh, type, std::strlen(s) + 1, s);
}

struct nlattr* mnl_attr_nest_start(struct nlmsghdr* nlh, uint16_t type) {
  auto* start = reinterpret_cast<struct nlattr*>(MnlTail(nlh));
  start->nla_type = static_cast<uint16_t>(NLA_F_NESTED | type);
  nlh->nlmsg_len += static_cast<uint32_t>(MNL_ALIGN(sizeof(struct nlattr)));
  return start;
}
void mnl_attr_nest_end(struct nlmsghdr* nlh, struct nlattr* start) {
  start->nla_len = static_cast<uint16_t>(MnlTail(nlh) - reinterpret_cast<char*>(start));
}

// Running the answers: the data callback for each message, errors as errno.
int mnl_cb_run(const void* buf, size_t numbytes, unsigned int seq, unsigned int portid,
               mnl_cb_t cb_data, void* data) {
  int ret = MNL_CB_OK;
  int len = static_cast<int>(numbytes);
  auto* nlh = static_cast<const struct nlmsghdr*>(buf);
  while (mnl_nlmsg_ok(nlh, len)) {
    if (nlh->nlmsg_pid && portid && nlh->nlmsg_pid != portid) return MnlFail(ESRCH);
    if (nlh->nlmsg_seq && seq && nlh->nlmsg_seq != seq) return MnlFail(EPROTO);
    if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) return MnlFail(EINTR);
    if (nlh->nlmsg_type >= NLMSG_MIN_TYPE) {
      if (cb_data) ret = cb_data(nlh, data);
    } else if (nlh->nlmsg_type == NLMSG_ERROR) {
      if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + sizeof(struct nlmsgerr)) return MnlFail(EBADMSG);
      auto* err = static_cast<const struct nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
      if (err->error == 0) return MNL_CB_STOP;  // an acknowledgement
      errno = err->error < 0 ? -err->error : err->error;
      return MNL_CB_ERROR;
    } else if (nlh->nlmsg_type == NLMSG_DONE) {
      return MNL_CB_STOP;
    }
    if (ret <= MNL_CB_STOP) return ret;
    nlh = mnl_nlmsg_next(nlh, &len);
  }
  return ret;
}

// The socket: close-on-exec, as every descriptor of the daemon.
struct mnl_socket* mnl_socket_open(int bus) {
  auto* nl = static_cast<struct mnl_socket*>(std::calloc(1, sizeof(struct mnl_socket)));
  if (!nl) return nullptr;
  nl->fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, bus);
  if (nl->fd < 0) {
    std::free(nl);
    return nullptr;
  }
  return nl;
}

int mnl_socket_bind(struct mnl_socket* nl, unsigned int groups, pid_t pid) {
  nl->addr.nl_family = AF_NETLINK;
  nl->addr.nl_groups = groups;
  nl->addr.nl_pid = static_cast<uint32_t>(pid);
  if (::bind(nl->fd, reinterpret_cast<struct sockaddr*>(&nl->addr), sizeof(nl->addr)) < 0) {
    return -1;
  }
  socklen_t addr_len = sizeof(nl->addr);
  if (::getsockname(nl->fd, reinterpret_cast<struct sockaddr*>(&nl->addr), &addr_len) < 0) {
    return -1;
  }
  if (addr_len != sizeof(nl->addr) || nl->addr.nl_family != AF_NETLINK) return MnlFail(EINVAL);
  return 0;
}

int mnl_socket_get_fd(const struct mnl_socket* nl) { return nl->fd; }
unsigned int mnl_socket_get_portid(const struct mnl_socket* nl) { return nl->addr.nl_pid; }

ssize_t mnl_socket_sendto(const struct mnl_socket* nl, const void* buf, size_t len) {
  struct sockaddr_nl kernel = {};
  kernel.nl_family = AF_NETLINK;
  return ::sendto(nl->fd, buf, len, 0, reinterpret_cast<const struct sockaddr*>(&kernel),
                  sizeof(kernel));
}

ssize_t mnl_socket_recvfrom(const struct mnl_socket* nl, void* buf, size_t bufsiz) {
  struct sockaddr_nl from = {};
  struct iovec iov = {buf, bufsiz};
  struct msghdr msg = {};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof(from);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ssize_t n = ::recvmsg(nl->fd, &msg, 0);
  if (n < 0) return n;
  if (msg.msg_flags & MSG_TRUNC) return MnlFail(ENOSPC);
  if (msg.msg_namelen != sizeof(from)) return MnlFail(EINVAL);
  return n;
}

int mnl_socket_close(struct mnl_socket* nl) {
  int ret = ::close(nl->fd);
  std::free(nl);
  return ret;
}

}  // extern "C"
