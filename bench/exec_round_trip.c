/* The exec round trip measured from C, like its baseline
 * (fork_exec_baseline.c), so neither side carries an interpreter's own cost
 * per request (Python's http.client adds about 0.1 ms to each call here).
 *
 *   exec_round_trip PORT TOKEN FIRST N [one|two]
 *
 * On one keep-alive loopback connection, for i in FIRST..FIRST+N-1, starts
 * /bin/true as rt-<i> and gets its exit and output, then prints the time in
 * microseconds, one per line:
 *   one (default)  PUT /v1/execs/rt-<i>?stdout_from=0&stderr_from=0&
 *                  wait_ms=10000&until=exit: the start that waits
 *                  (docs/PROTOCOL.md, "Start and wait"), one request;
 *   two            PUT, then one long poll (GET ...?stdout_from=0&...).
 * The ack that follows each (POST .../ack, keeping the daemon's table
 * small) is not timed. Exits 1 on any unexpected answer. Answers are read
 * by Content-Length, which is all the daemon sends on these routes. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int fd;
static const char* token;
static char answer[1 << 16];

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void die(const char* what, const char* detail) {
  fprintf(stderr, "exec_round_trip: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

/* Sends one request; returns the status and leaves the body in `answer`. */
static int call(const char* method, const char* target, const char* body) {
  char req[1024];
  size_t body_len = body ? strlen(body) : 0;
  int n = snprintf(req, sizeof req,
                   "%s %s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                   method, target, token, body_len, body ? body : "");
  if (n <= 0 || (size_t)n >= sizeof req) die("request too long", target);
  if (send(fd, req, (size_t)n, 0) != n) die("send failed", target);
  size_t got = 0;
  char* head_end = NULL;
  while (!head_end) {
    ssize_t r = recv(fd, answer + got, sizeof answer - 1 - got, 0);
    if (r <= 0) die("connection lost", target);
    got += (size_t)r;
    answer[got] = '\0';
    head_end = strstr(answer, "\r\n\r\n");
  }
  int status = atoi(answer + 9);
  const char* cl = strcasestr(answer, "\r\ncontent-length:");
  if (!cl || cl > head_end) die("no Content-Length", target);
  size_t want = (size_t)(head_end + 4 - answer) + strtoul(cl + 17, NULL, 10);
  if (want >= sizeof answer) die("answer too large", target);
  while (got < want) {
    ssize_t r = recv(fd, answer + got, want - got, 0);
    if (r <= 0) die("connection lost", target);
    got += (size_t)r;
  }
  answer[got] = '\0';
  memmove(answer, head_end + 4, got - (size_t)(head_end + 4 - answer) + 1);
  return status;
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) die("usage: exec_round_trip PORT TOKEN FIRST N [one|two]", NULL);
  int one_request = argc == 5 || strcmp(argv[5], "two") != 0;
  token = argv[2];
  long first = atol(argv[3]), n = atol(argv[4]);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) die("cannot connect", argv[1]);
  char target[256];
  for (long i = first; i < first + n; ++i) {
    double t0 = now_us();
    int status;
    if (one_request) {
      snprintf(target, sizeof target,
               "/v1/execs/rt-%ld?stdout_from=0&stderr_from=0&wait_ms=10000&until=exit", i);
      status = call("PUT", target, "{\"argv\":[\"/bin/true\"]}");
      if (status != 201) die("start refused", answer);
    } else {
      snprintf(target, sizeof target, "/v1/execs/rt-%ld", i);
      if (call("PUT", target, "{\"argv\":[\"/bin/true\"]}") != 201) die("start refused", answer);
      snprintf(target, sizeof target,
               "/v1/execs/rt-%ld?stdout_from=0&stderr_from=0&wait_ms=10000", i);
      status = call("GET", target, NULL);
      if (status != 200) die("poll refused", answer);
    }
    if (!strstr(answer, "\"state\":\"exited\"") || !strstr(answer, "\"exit_code\":0") ||
        !strstr(answer, "\"stdout\":")) {
      die("no exit and output in the answer", answer);
    }
    printf("%.1f\n", now_us() - t0);
    snprintf(target, sizeof target, "/v1/execs/rt-%ld/ack", i);
    if (call("POST", target, "{}") != 200) die("ack refused", answer);
  }
  return 0;
}
