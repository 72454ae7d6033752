// Client-library overhead (docs/BENCHMARKS.md, "Client library"): the same
// work done through agentd::client and through raw HTTP on a plain socket,
// interleaved in the same run, reported as ratios.
//
//   client_bench --url http://127.0.0.1:PORT --token T [--rounds N] [--stream-mib M]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "agentd/client/client.h"

namespace {

using Clock = std::chrono::steady_clock;

// Minimal blocking HTTP/1.1 over one keep-alive TCP connection, reading
// Content-Length bodies only: the "raw" baseline a harness could write.
class RawHttp {
 public:
  RawHttp(int port, std::string token) : token_(std::move(token)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~RawHttp() { close(fd_); }

  // Returns the body of a Content-Length answer.
  std::string Call(const std::string& method, const std::string& target, const std::string& body) {
    std::string req = method + " " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                      token_ + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                      body;
    send(fd_, req.data(), req.size(), 0);
    for (;;) {
      size_t end = buf_.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t cl = buf_.find("Content-Length: ");
        size_t len = std::stoul(buf_.substr(cl + 16));
        while (buf_.size() < end + 4 + len) Fill();
        std::string out = buf_.substr(end + 4, len);
        buf_.erase(0, end + 4 + len);
        return out;
      }
      Fill();
    }
  }

  // Reads a raw, close-delimited or chunked stream to its end; returns bytes.
  uint64_t Drain(const std::string& target) {
    std::string req = "GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token_ +
                      "\r\nConnection: close\r\n\r\n";
    send(fd_, req.data(), req.size(), 0);
    uint64_t total = 0;
    std::vector<char> b(1 << 20);
    ssize_t n;
    while ((n = recv(fd_, b.data(), b.size(), 0)) > 0) total += static_cast<uint64_t>(n);
    return total;
  }

 private:
  void Fill() {
    char tmp[65536];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) throw std::runtime_error("connection closed");
    buf_.append(tmp, static_cast<size_t>(n));
  }
  int fd_;
  std::string token_;
  std::string buf_;
};

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// CPU time of this process (user + system), in microseconds: what each side
// costs the caller, which load does not inflate the way it does wall time.
double CpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, token;
  int rounds = 300;
  uint64_t stream_mib = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--url") url = argv[i + 1];
    if (a == "--token") token = argv[i + 1];
    if (a == "--rounds") rounds = std::stoi(argv[i + 1]);
    if (a == "--stream-mib") stream_mib = std::stoull(argv[i + 1]);
  }
  int port = std::stoi(url.substr(url.rfind(':') + 1));
  agentd::client::Client client({.url = url, .token = token});
  RawHttp raw(port, token);
  agentd::ExecStartRequest req;
  req.argv = {"/bin/true"};
  std::vector<double> via_client, via_raw;
  double client_cpu_us = 0, raw_cpu_us = 0;
  for (int i = 0; i < rounds + 20; ++i) {
    double c0 = CpuUs();
    auto t0 = Clock::now();
    auto r = client.Run(req);
    auto t1 = Clock::now();
    double c1 = CpuUs();
    if (!r.ok()) {
      std::fprintf(stderr, "client run failed: %s\n", r.status().ToString().c_str());
      return 1;
    }
    std::string id = "raw-" + std::to_string(i);
    // The requests Run makes, by hand: a start that waits (Start and wait)
    // and carries the output, then the ack.
    raw.Call("PUT", "/v1/execs/" + id + "?stdout_from=0&stderr_from=0&wait_ms=10000",
             R"({"argv":["/bin/true"]})");
    raw.Call("POST", "/v1/execs/" + id + "/ack", "{}");
    auto t2 = Clock::now();
    double c2 = CpuUs();
    if (i >= 20) {  // warm-up rounds are not counted
      via_client.push_back(Ms(t1 - t0));
      via_raw.push_back(Ms(t2 - t1));
      client_cpu_us += c1 - c0;
      raw_cpu_us += c2 - c1;
    }
  }
  // Throughput: one exec printing stream_mib MiB, read through Stream
  // (binary frames from a daemon that has them, else SSE, decoded) and
  // through the raw route by a plain socket.
  std::string cmd = "head -c " + std::to_string(stream_mib << 20) + " /dev/zero";
  agentd::ExecStartRequest big;
  big.command = cmd;
  std::string id = agentd::client::MintExecId("bench");
  auto t0 = Clock::now();
  (void)client.StartExec(id, big);
  uint64_t got = 0;
  agentd::client::StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) { got += b.size(); };
  (void)client.Stream(id, {}, cb);
  double client_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::string raw_id = agentd::client::MintExecId("bench-raw");
  auto t1 = Clock::now();
  RawHttp raw2(port, token);
  raw2.Call("PUT", "/v1/execs/" + raw_id, R"({"command":")" + cmd + R"("})");
  uint64_t raw_got = raw2.Drain("/v1/execs/" + raw_id + "/stdout?follow=1");
  double raw_s = std::chrono::duration<double>(Clock::now() - t1).count();
  double mib = static_cast<double>(stream_mib);
  std::printf(
      "{\"run_p50_ms\": %.3f, \"run_p99_ms\": %.3f, \"raw_p50_ms\": %.3f, \"raw_p99_ms\": %.3f, "
      "\"run_ratio_p50\": %.3f, \"stream_client_mib_s\": %.1f, \"stream_raw_mib_s\": %.1f, "
      "\"stream_ratio\": %.3f, \"stream_bytes\": %llu, \"raw_bytes\": %llu, "
      "\"run_cpu_us\": %.1f, \"raw_cpu_us\": %.1f}\n",
      Percentile(via_client, 0.5), Percentile(via_client, 0.99), Percentile(via_raw, 0.5),
      Percentile(via_raw, 0.99), Percentile(via_client, 0.5) / Percentile(via_raw, 0.5),
      mib / client_s, mib / raw_s, (mib / client_s) / (mib / raw_s),
      static_cast<unsigned long long>(got), static_cast<unsigned long long>(raw_got),
      client_cpu_us / rounds, raw_cpu_us / rounds);
  return got == (stream_mib << 20) ? 0 : 1;
}
