#include "metrics/metrics.h"

#include <cmath>
#include <cstdio>

namespace agentd::metrics {
namespace {

std::string Labels(const std::vector<std::string>& names, const std::vector<std::string>& values,
                   std::string_view extra_name = {}, std::string_view extra_value = {}) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += std::string(extra_name) + "=\"" + std::string(extra_value) + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

void Header(std::string& out, const std::string& name, const std::string& help,
            std::string_view type) {
  out += "# HELP " + name + " " + help + "\n";
  out += "# TYPE " + name + " " + std::string(type) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,     1,      2.5,   5,      10,    30,   60,    120,  300};
}

Family<Counter>& Registry::AddCounter(std::string name, std::string help,
                                      std::vector<std::string> labels) {
  auto e = std::make_unique<Entry>();
  e->name = std::move(name);
  e->help = std::move(help);
  e->kind = Kind::kCounter;
  e->counters = std::make_unique<Family<Counter>>(std::move(labels),
                                                  [] { return std::make_unique<Counter>(); });
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(std::move(e));
  return *entries_.back()->counters;
}

Family<Gauge>& Registry::AddGauge(std::string name, std::string help,
                                  std::vector<std::string> labels) {
  auto e = std::make_unique<Entry>();
  e->name = std::move(name);
  e->help = std::move(help);
  e->kind = Kind::kGauge;
  e->gauges =
      std::make_unique<Family<Gauge>>(std::move(labels), [] { return std::make_unique<Gauge>(); });
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(std::move(e));
  return *entries_.back()->gauges;
}

Family<Histogram>& Registry::AddHistogram(std::string name, std::string help,
                                          std::vector<std::string> labels,
                                          std::vector<double> bounds) {
  auto e = std::make_unique<Entry>();
  e->name = std::move(name);
  e->help = std::move(help);
  e->kind = Kind::kHistogram;
  e->histograms = std::make_unique<Family<Histogram>>(
      std::move(labels), [bounds] { return std::make_unique<Histogram>(bounds); });
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(std::move(e));
  return *entries_.back()->histograms;
}

void Registry::AddCallbackGauge(std::string name, std::string help, std::function<double()> value) {
  auto e = std::make_unique<Entry>();
  e->name = std::move(name);
  e->help = std::move(help);
  e->kind = Kind::kCallback;
  e->callback = std::move(value);
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(std::move(e));
}

std::string Registry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& e : entries_) {
    switch (e->kind) {
      case Kind::kCounter:
        Header(out, e->name, e->help, "counter");
        e->counters->ForEach([&](const std::vector<std::string>& values, const Counter& c) {
          out += e->name + Labels(e->counters->label_names(), values) + " " +
                 std::to_string(c.value()) + "\n";
        });
        break;
      case Kind::kGauge:
        Header(out, e->name, e->help, "gauge");
        e->gauges->ForEach([&](const std::vector<std::string>& values, const Gauge& g) {
          out += e->name + Labels(e->gauges->label_names(), values) + " " +
                 std::to_string(g.value()) + "\n";
        });
        break;
      case Kind::kCallback:
        Header(out, e->name, e->help, "gauge");
        out += e->name + " " + FormatNumber(e->callback()) + "\n";
        break;
      case Kind::kHistogram:
        Header(out, e->name, e->help, "histogram");
        e->histograms->ForEach([&](const std::vector<std::string>& values, const Histogram& h) {
          const std::vector<std::string>& names = e->histograms->label_names();
          uint64_t cumulative = 0;
          for (size_t i = 0; i <= h.bounds().size(); ++i) {
            cumulative += h.bucket(i);
            std::string le = i < h.bounds().size() ? FormatNumber(h.bounds()[i]) : "+Inf";
            out += e->name + "_bucket" + Labels(names, values, "le", le) + " " +
                   std::to_string(cumulative) + "\n";
          }
          out += e->name + "_sum" + Labels(names, values) + " " + FormatNumber(h.sum()) + "\n";
          out +=
              e->name + "_count" + Labels(names, values) + " " + std::to_string(h.count()) + "\n";
        });
        break;
    }
  }
  return out;
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(v));
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace agentd::metrics
