/* The output route's candidate designs, each as a small stand-alone model of
 * the daemon's data path, so they can be compared in one run (issue 27;
 * bench/output_designs_ab.py drives it, docs/BENCHMARKS.md "Output designs").
 *
 *   output_designs_ab DESIGN SIZE SPOOL_DIR [BATCH_BYTES]
 *
 * Every design moves SIZE bytes from `head -c SIZE /dev/zero` (the producer
 * of the daemon's throughput rows) over one loopback TCP connection into a
 * reader process that reads 256 KiB at a time and counts. This process plays
 * the daemon: one thread, one poll loop, non-blocking descriptors, the
 * daemon's sizes (256 KiB output pipe, pump turns of 4 MiB in splices of
 * 1 MiB, sends of 4 MiB, SSE events of at most 128 KiB). Every design but
 * `socket` keeps every byte in a spool file in SPOOL_DIR until the end, as
 * the daemon keeps output until it is acked. Prints the seconds from the
 * producer's spawn to the reader's last byte, and the bytes the reader got.
 *
 *   socket  head's stdout is the socket (the baseline; keeps nothing)
 *   spool   today's daemon: pipe -> splice into the spool -> sendfile from
 *           the spool to the socket
 *   tee     pipe -> tee(2) into a second pipe -> splice that to the socket,
 *           the original spliced into the spool; when the second pipe is
 *           full the follower falls back to sendfile from the spool until it
 *           has caught up, then goes live again
 *   file    head's stdout is the spool file itself (O_APPEND); the server
 *           learns of new bytes by inotify (IN_MODIFY), of the end by a
 *           pidfd, and sendfile()s from the file
 *   sse     SSE as the daemon sends it: spool as `spool`, then each event
 *           pread from the spool, base64 in JSON, one event per chunked
 *           write (size line, event, CRLF in one writev)
 *   ssebatch  the same events gathered into writes of BATCH_BYTES (default
 *           1 MiB) before each writev
 *   ssemap  as ssebatch, but base64 is encoded straight from a mapping of
 *           the spool (4 MiB windows, MAP_POPULATE) instead of a pread copy
 *
 * HTTP framing of the raw designs (a size line per 4 MiB chunk) is left out:
 * it is the same for each of them and small. Exits 1 on any failure. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PIPE_BYTES (256 << 10)
#define PUMP_TURN (4u << 20)
#define SPLICE_CHUNK (1u << 20)
#define SEND_BYTES (4u << 20)
#define EVENT_BYTES (128u << 10)
#define READ_BYTES (256 << 10)
#define MAP_WINDOW (4u << 20)

static void die(const char* what) {
  fprintf(stderr, "output_designs_ab: %s: %s\n", what, strerror(errno));
  exit(1);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void nonblocking(int fd) {
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) die("fcntl");
}

/* ---- the connection and the two processes around this one ---- */

static void loopback_pair(int* tx, int* rx) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0 || bind(l, (struct sockaddr*)&a, len) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr*)&a, &len) != 0)
    die("listen");
  *tx = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*tx < 0 || connect(*tx, (struct sockaddr*)&a, len) != 0) die("connect");
  *rx = accept4(l, NULL, NULL, SOCK_CLOEXEC);
  if (*rx < 0) die("accept");
  close(l);
}

/* The reader: counts what arrives until the end, reports it on `report`. */
static pid_t spawn_reader(int rx, int tx, int report[2]) {
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid > 0) return pid;
  close(tx);
  close(report[0]);
  static char buf[READ_BYTES];
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(rx, buf, sizeof(buf));
    if (n > 0) {
      total += (uint64_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  if (write(report[1], &total, sizeof(total)) != sizeof(total)) _exit(1);
  _exit(0);
}

static pid_t spawn_head(uint64_t size, int out) {
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid > 0) return pid;
  if (dup2(out, 1) < 0) _exit(127);
  char count[32];
  snprintf(count, sizeof(count), "%llu", (unsigned long long)size);
  execlp("head", "head", "-c", count, "/dev/zero", (char*)NULL);
  _exit(127);
}

/* ---- the daemon's pump: pipe -> spool, at most one turn ---- */

struct spool {
  int fd;
  uint64_t next; /* bytes in the spool */
  int eof;       /* the pipe's writer is gone and it is empty */
};

/* Returns the bytes moved; sets eof, or *drained when the pipe is empty. */
static uint64_t pump(int pipe_fd, struct spool* s, int* drained) {
  uint64_t moved = 0;
  *drained = 0;
  while (moved < PUMP_TURN) {
    loff_t off = (loff_t)s->next;
    ssize_t n = splice(pipe_fd, NULL, s->fd, &off, SPLICE_CHUNK, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      s->next += (uint64_t)n;
      moved += (uint64_t)n;
      continue;
    }
    if (n == 0) {
      s->eof = 1;
      return moved;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      *drained = 1;
      return moved;
    }
    die("splice into the spool");
  }
  return moved;
}

/* sendfile [*cursor, end) to the socket until it would block; 1 when it did. */
static int send_spool(int sock, int fd, uint64_t* cursor, uint64_t end) {
  while (*cursor < end) {
    off_t off = (off_t)*cursor;
    uint64_t want = end - *cursor < SEND_BYTES ? end - *cursor : SEND_BYTES;
    ssize_t n = sendfile(sock, fd, &off, want);
    if (n > 0) {
      *cursor += (uint64_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 1;
    die("sendfile");
  }
  return 0;
}

/* Waits for the pipe (unless it ended or a turn was full) and the socket
 * (when a send would block). */
static void wait_for(int pipe_fd, int want_pipe, int sock, int want_sock) {
  struct pollfd p[2] = {{.fd = want_pipe ? pipe_fd : -1, .events = POLLIN},
                        {.fd = want_sock ? sock : -1, .events = POLLOUT}};
  if (!want_pipe && !want_sock) return;
  if (poll(p, 2, -1) < 0 && errno != EINTR) die("poll");
}

static void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) die("pipe");
  fcntl(fds[0], F_SETPIPE_SZ, PIPE_BYTES);
  nonblocking(fds[0]);
}

static int make_spool(const char* dir, char* path, size_t path_size) {
  snprintf(path, path_size, "%s/output-designs-ab-%d.spool", dir, (int)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) die("spool");
  return fd;
}

/* ---- the designs: each serves `sock` and returns when all was sent ---- */

static void serve_spool(int pipe_fd, struct spool* s, int sock) {
  uint64_t cursor = 0;
  for (;;) {
    int drained;
    pump(pipe_fd, s, &drained);
    int blocked = send_spool(sock, s->fd, &cursor, s->next);
    if (s->eof && cursor == s->next) return;
    wait_for(pipe_fd, !s->eof && drained, sock, blocked);
  }
}

/* tee: while the follower is live (caught up), every byte read from the
 * child's pipe is first duplicated into `live` (page references, no copy),
 * then spliced into the spool; `live` is spliced to the socket. */
static void serve_tee(int pipe_fd, struct spool* s, int sock) {
  int live[2];
  make_pipe(live);
  nonblocking(live[1]);
  uint64_t cursor = 0; /* bytes the follower has sent */
  uint64_t teed = 0;   /* bytes put into `live`: [cursor, teed) wait there;
                        * below cursor while it catches up from the spool */
  for (;;) {
    int drained = 0, blocked = 0;
    uint64_t moved = 0;
    while (moved < PUMP_TURN && !s->eof) {
      int waiting = 0;
      if (teed == s->next && ioctl(pipe_fd, FIONREAD, &waiting) == 0 && waiting > 0) {
        ssize_t t = tee(pipe_fd, live[1], SPLICE_CHUNK, SPLICE_F_NONBLOCK);
        if (t > 0) { /* exactly those bytes into the spool */
          uint64_t left = (uint64_t)t;
          while (left > 0) {
            loff_t off = (loff_t)s->next;
            ssize_t n = splice(pipe_fd, NULL, s->fd, &off, left, SPLICE_F_MOVE);
            if (n <= 0) die("splice of teed bytes");
            s->next += (uint64_t)n;
            left -= (uint64_t)n;
          }
          teed = s->next;
          moved += (uint64_t)t;
          continue;
        }
        if (t < 0 && errno != EAGAIN) die("tee");
        /* `live` is full: the bytes go to the spool only, the follower
         * falls behind and catches up from the spool. */
      }
      int d;
      uint64_t m = pump(pipe_fd, s, &d);
      moved += m;
      if (d) {
        drained = 1;
        break;
      }
    }
    while (cursor < teed) { /* the live pipe first: it holds [cursor, teed) */
      ssize_t n = splice(live[0], NULL, sock, NULL, teed - cursor, SPLICE_F_NONBLOCK);
      if (n > 0) {
        cursor += (uint64_t)n;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) {
        blocked = 1;
        break;
      }
      die("splice to the socket");
    }
    if (!blocked && cursor >= teed) { /* the live pipe is empty: catch up */
      blocked = send_spool(sock, s->fd, &cursor, s->next);
      if (cursor == s->next) teed = s->next; /* caught up: live again */
    }
    if (s->eof && cursor == s->next) break;
    wait_for(pipe_fd, !s->eof && drained, sock, blocked);
  }
  close(live[0]);
  close(live[1]);
}

/* file: the child writes the spool itself; the server only sends. */
static void serve_file(const char* path, pid_t child, int sock) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
  if (fd < 0 || in < 0 || pidfd < 0) die("file follower");
  if (inotify_add_watch(in, path, IN_MODIFY) < 0) die("inotify_add_watch");
  uint64_t cursor = 0;
  int exited = 0;
  char events[4096];
  for (;;) {
    int blocked = 0;
    for (;;) { /* to the file's current end */
      off_t off = (off_t)cursor;
      ssize_t n = sendfile(sock, fd, &off, SEND_BYTES);
      if (n > 0) {
        cursor += (uint64_t)n;
        continue;
      }
      if (n == 0) break;
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        blocked = 1;
        break;
      }
      die("sendfile");
    }
    if (!blocked && exited) break; /* the writer is gone and all was sent */
    struct pollfd p[3] = {{.fd = blocked ? -1 : in, .events = POLLIN},
                          {.fd = exited ? -1 : pidfd, .events = POLLIN},
                          {.fd = blocked ? sock : -1, .events = POLLOUT}};
    if (poll(p, 3, -1) < 0 && errno != EINTR) die("poll");
    if (p[0].revents & POLLIN)
      while (read(in, events, sizeof(events)) > 0) {
      }
    if (p[1].revents & POLLIN) exited = 1;
  }
  close(fd);
  close(in);
  close(pidfd);
}

/* ---- SSE ---- */

static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static char pairs[4096][2]; /* the daemon's encoder: a 12-bit pair table */

static char* base64(char* p, const unsigned char* s, size_t len) {
  size_t i = 0;
  for (; i + 3 <= len; i += 3) {
    uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
    memcpy(p, pairs[v >> 12], 2);
    memcpy(p + 2, pairs[v & 0xFFF], 2);
    p += 4;
  }
  if (i < len) {
    uint32_t v = (uint32_t)s[i] << 16;
    if (len - i == 2) v |= (uint32_t)s[i + 1] << 8;
    *p++ = kAlphabet[v >> 18];
    *p++ = kAlphabet[(v >> 12) & 63];
    *p++ = len - i == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    *p++ = '=';
  }
  return p;
}

/* ssemap: a window of the spool mapped read-only, kept while it serves. */
static int use_map;
static unsigned char* map_base;
static uint64_t map_from, map_to;

static const unsigned char* mapped(int fd, uint64_t from, size_t len) {
  if (!map_base || from < map_from || from + len > map_to) {
    if (map_base) munmap(map_base, map_to - map_from);
    map_from = from / MAP_WINDOW * MAP_WINDOW; /* len <= EVENT_BYTES < MAP_WINDOW */
    map_to = map_from + 2 * MAP_WINDOW;
    map_base = mmap(NULL, map_to - map_from, PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
                    (off_t)map_from);
    if (map_base == MAP_FAILED) die("mmap");
  }
  return map_base + (from - map_from);
}

/* Appends one stdout event for [*cursor, ...) at `out`; returns its end. */
static char* append_event(char* out, int spool_fd, uint64_t* cursor, uint64_t end) {
  static unsigned char copy[EVENT_BYTES];
  size_t len = end - *cursor < EVENT_BYTES ? (size_t)(end - *cursor) : EVENT_BYTES;
  const unsigned char* bytes = copy;
  if (use_map) {
    bytes = mapped(spool_fd, *cursor, len);
  } else {
    for (size_t done = 0; done < len;) {
      ssize_t n = pread(spool_fd, copy + done, len - done, (off_t)(*cursor + done));
      if (n <= 0) die("pread");
      done += (size_t)n;
    }
  }
  out += sprintf(out, "event: stdout\ndata: {\"offset\":%llu,\"data_b64\":\"",
                 (unsigned long long)*cursor);
  out = base64(out, bytes, len);
  *cursor += len;
  return out + sprintf(out, "\"}\nid: %llu:0\n\n", (unsigned long long)*cursor);
}

static void serve_sse(int pipe_fd, struct spool* s, int sock, size_t batch) {
  size_t event_max = EVENT_BYTES / 3 * 4 + 8 + 128;
  size_t cap = batch + event_max;
  char* buf = malloc(cap);
  if (!buf) die("malloc");
  for (int i = 0; i < 4096; ++i) {
    pairs[i][0] = kAlphabet[i >> 6];
    pairs[i][1] = kAlphabet[i & 63];
  }
  uint64_t cursor = 0;
  char size_line[24];
  struct iovec iov[3];
  int iovs = 0, at = 0; /* the write in flight: iov[at..iovs) */
  for (;;) {
    int drained;
    pump(pipe_fd, s, &drained);
    int blocked = 0;
    for (;;) {
      if (at == iovs) { /* the last write is out: gather the next */
        if (cursor == s->next) break;
        char* end = buf;
        do end = append_event(end, s->fd, &cursor, s->next);
        while ((size_t)(end - buf) < batch && cursor < s->next);
        size_t len = (size_t)(end - buf);
        iov[0] = (struct iovec){size_line, (size_t)sprintf(size_line, "%zx\r\n", len)};
        iov[1] = (struct iovec){buf, len};
        iov[2] = (struct iovec){(char*)"\r\n", 2};
        iovs = 3;
        at = 0;
      }
      ssize_t n = writev(sock, iov + at, iovs - at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) {
        blocked = 1;
        break;
      }
      if (n < 0) die("writev");
      for (size_t left = (size_t)n; left > 0 && at < iovs;) {
        size_t take = left < iov[at].iov_len ? left : iov[at].iov_len;
        iov[at].iov_base = (char*)iov[at].iov_base + take;
        iov[at].iov_len -= take;
        left -= take;
        if (iov[at].iov_len == 0) ++at;
      }
    }
    if (s->eof && cursor == s->next && at == iovs) break;
    wait_for(pipe_fd, !s->eof && drained, sock, blocked);
  }
  free(buf);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: output_designs_ab socket|spool|tee|file|sse|ssebatch|ssemap SIZE DIR [BATCH]\n");
    return 2;
  }
  const char* design = argv[1];
  uint64_t size = strtoull(argv[2], NULL, 10);
  size_t batch = argc > 4 ? strtoull(argv[4], NULL, 10) : 1u << 20;
  signal(SIGPIPE, SIG_IGN);
  int tx, rx, report[2];
  loopback_pair(&tx, &rx);
  if (pipe2(report, O_CLOEXEC) != 0) die("pipe");
  double t0 = now_s();
  pid_t reader = spawn_reader(rx, tx, report);
  close(rx);
  close(report[1]);
  char path[4096] = "";
  pid_t head;
  if (strcmp(design, "socket") == 0) {
    head = spawn_head(size, tx);
  } else if (strcmp(design, "file") == 0) {
    snprintf(path, sizeof(path), "%s/output-designs-ab-%d.spool", argv[3], (int)getpid());
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (out < 0) die("spool");
    head = spawn_head(size, out);
    close(out);
    nonblocking(tx);
    serve_file(path, head, tx);
  } else {
    int p[2];
    make_pipe(p);
    struct spool s = {.fd = make_spool(argv[3], path, sizeof(path))};
    head = spawn_head(size, p[1]);
    close(p[1]);
    nonblocking(tx);
    if (strcmp(design, "spool") == 0) {
      serve_spool(p[0], &s, tx);
    } else if (strcmp(design, "tee") == 0) {
      serve_tee(p[0], &s, tx);
    } else if (strcmp(design, "sse") == 0) {
      serve_sse(p[0], &s, tx, 1);
    } else if (strcmp(design, "ssebatch") == 0) {
      serve_sse(p[0], &s, tx, batch);
    } else if (strcmp(design, "ssemap") == 0) {
      use_map = 1;
      serve_sse(p[0], &s, tx, batch);
    } else {
      fprintf(stderr, "output_designs_ab: unknown design %s\n", design);
      return 2;
    }
    if (s.next != size) {
      fprintf(stderr, "output_designs_ab: the spool holds %llu bytes\n",
              (unsigned long long)s.next);
      return 1;
    }
    close(s.fd);
    close(p[0]);
  }
  close(tx);
  uint64_t got = 0;
  if (read(report[0], &got, sizeof(got)) != sizeof(got)) die("reader report");
  double seconds = now_s() - t0;
  int status;
  if (waitpid(reader, &status, 0) < 0 || status != 0) return 1;
  if (waitpid(head, &status, 0) < 0 || status != 0) return 1;
  if (path[0]) unlink(path); /* kept to the end, as until an ack */
  printf("%.6f %llu\n", seconds, (unsigned long long)got);
  return 0;
}
