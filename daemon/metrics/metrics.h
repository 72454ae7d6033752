// A small metrics registry rendered in the Prometheus text exposition
// format (docs/PROTOCOL.md, "Metrics").
//
// Counters, gauges and histograms are lock-free to update (relaxed
// atomics), so any component on any thread (the io thread, the blocking
// pool) can count. A family is a metric name with fixed label names; its
// children are created on first use of a label-value tuple (under the
// family's lock) and live as long as the registry, so a caller may keep the
// reference. Label values must come from small closed sets (a route
// pattern, a status, a limit name): never a command line, path, environment
// value or output. Callback gauges are evaluated by Render(), on the thread
// that renders (the io thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace agentd::metrics {

class Counter {
 public:
  void Inc(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { v_.store(v, std::memory_order_relaxed); }
  void Add(int64_t n) { v_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

class Histogram {
 public:
  // `bounds`: increasing upper bounds of the buckets (+Inf is implied).
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  // Non-cumulative count of bucket i (i == bounds().size(): above all).
  uint64_t bucket(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Bucket bounds in seconds from 100 us to 5 min, roughly x2.5 apart.
std::vector<double> LatencyBuckets();

template <typename M>
class Family {
 public:
  Family(std::vector<std::string> label_names, std::function<std::unique_ptr<M>()> make)
      : label_names_(std::move(label_names)), make_(std::move(make)) {}

  // The child for these label values (as many as the family has names).
  M& With(const std::vector<std::string>& values) {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<M>& slot = children_[values];
    if (!slot) slot = make_();
    return *slot;
  }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Calls fn(values, child) for every child, in label order.
  template <typename Fn>
  void ForEach(Fn fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [values, child] : children_) fn(values, *child);
  }

 private:
  std::vector<std::string> label_names_;
  std::function<std::unique_ptr<M>()> make_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;
};

class Registry {
 public:
  Family<Counter>& AddCounter(std::string name, std::string help,
                              std::vector<std::string> labels = {});
  Family<Gauge>& AddGauge(std::string name, std::string help, std::vector<std::string> labels = {});
  Family<Histogram>& AddHistogram(std::string name, std::string help,
                                  std::vector<std::string> labels, std::vector<double> bounds);
  // A gauge whose value is computed at render time.
  void AddCallbackGauge(std::string name, std::string help, std::function<double()> value);

  // The whole exposition, metrics in registration order.
  std::string Render() const;

 private:
  enum class Kind { kCounter, kGauge, kHistogram, kCallback };
  struct Entry {
    std::string name;
    std::string help;
    Kind kind;
    std::unique_ptr<Family<Counter>> counters;
    std::unique_ptr<Family<Gauge>> gauges;
    std::unique_ptr<Family<Histogram>> histograms;
    std::function<double()> callback;
  };
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

// Escapes a label value for the exposition format (\\, \", \n).
std::string EscapeLabelValue(std::string_view v);
// A number as Prometheus writes it ("+Inf", integers without a fraction).
std::string FormatNumber(double v);

}  // namespace agentd::metrics
