#pragma once
// A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
// exposition format (version 0.0.4). Metrics are touched only from the event loop thread;
// worker threads post their updates to it.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace okna::core {

using Labels = std::map<std::string, std::string>;

class Counter {
 public:
  void inc(double by = 1) { value_ += by; }
  double value() const { return value_; }

 private:
  double value_ = 0;
};

class Gauge {
 public:
  void set(double v) { value_ = v; }
  void add(double v) { value_ += v; }
  double value() const { return value_; }

 private:
  double value_ = 0;
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<unsigned long long>& buckets() const { return buckets_; }
  double sum() const { return sum_; }
  unsigned long long count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<unsigned long long> buckets_;  // cumulative counts are computed when rendering
  double sum_ = 0;
  unsigned long long count_ = 0;
};

/** Default buckets for durations in seconds: 1 ms to 60 s. */
std::vector<double> durationBuckets();

class MetricsRegistry {
 public:
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const Labels& labels = {},
                       std::vector<double> bounds = durationBuckets());
  /** The whole registry in Prometheus text format. */
  std::string render() const;

 private:
  enum class Type { Counter, Gauge, Histogram };
  struct Family {
    Type type;
    std::string help;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, Type type, const std::string& help);

  mutable std::mutex mutex_;  // guards the maps; values are updated on the loop thread
  std::map<std::string, Family> families_;
};

}  // namespace okna::core
