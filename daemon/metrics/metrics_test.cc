#include "metrics/metrics.h"

#include <catch2/catch.hpp>
#include <thread>

using namespace agentd::metrics;

TEST_CASE("counters with labels render in the text format", "[metrics]") {
  Registry r;
  auto& c = r.AddCounter("x_total", "Things.", {"kind"});
  c.With({"a"}).Inc();
  c.With({"a"}).Inc(2);
  c.With({"b\"\\\n"}).Inc();
  std::string text = r.Render();
  CHECK(text.find("# TYPE x_total counter\n") != std::string::npos);
  CHECK(text.find("x_total{kind=\"a\"} 3\n") != std::string::npos);
  CHECK(text.find("x_total{kind=\"b\\\"\\\\\\n\"} 1\n") != std::string::npos);
}

TEST_CASE("histograms are cumulative with +Inf, sum and count", "[metrics]") {
  Registry r;
  Histogram& h = r.AddHistogram("d_seconds", "Durations.", {}, {0.1, 1}).With({});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  std::string text = r.Render();
  CHECK(text.find("d_seconds_bucket{le=\"0.1\"} 1\n") != std::string::npos);
  CHECK(text.find("d_seconds_bucket{le=\"1\"} 2\n") != std::string::npos);
  CHECK(text.find("d_seconds_bucket{le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("d_seconds_sum 5.55\n") != std::string::npos);
  CHECK(text.find("d_seconds_count 3\n") != std::string::npos);
}

TEST_CASE("counting from several threads loses nothing", "[metrics]") {
  Registry r;
  Counter& c = r.AddCounter("n_total", "N.").With({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 10000; ++i) c.Inc();
    });
  }
  for (auto& t : threads) t.join();
  CHECK(c.value() == 40000);
}

TEST_CASE("callback gauges are evaluated at render time", "[metrics]") {
  Registry r;
  int v = 1;
  r.AddCallbackGauge("g", "G.", [&v] { return static_cast<double>(v); });
  v = 7;
  CHECK(r.Render().find("g 7\n") != std::string::npos);
}
