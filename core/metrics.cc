#include "core/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace okna::core {

namespace {

std::string escapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string renderLabels(const Labels& labels, const std::string& extraKey = "",
                         const std::string& extraValue = "") {
  if (labels.empty() && extraKey.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    out += (first ? "" : ",") + k + "=\"" + escapeLabel(v) + "\"";
    first = false;
  }
  if (!extraKey.empty()) out += (first ? "" : ",") + extraKey + "=\"" + extraValue + "\"";
  return out + "}";
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  // Shortest representation that reads back as the same double: 0.005, not 0.0050000000000000001.
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(bounds_.size(), 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::observe(double v) {
  sum_ += v;
  ++count_;
  auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
  if (it != bounds_.end()) ++buckets_[static_cast<size_t>(it - bounds_.begin())];
}

std::vector<double> durationBuckets() {
  return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, Type type,
                                                 const std::string& help) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.type = type;
    it->second.help = help;
  } else if (it->second.type != type) {
    throw std::logic_error("metric " + name + " registered twice with different types");
  }
  return it->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, Type::Counter, help).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, Type::Gauge, help).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      const Labels& labels, std::vector<double> bounds) {
  std::lock_guard lock(mutex_);
  auto& slot = family(name, Type::Histogram, help).histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(std::move(bounds));
  return *slot;
}

std::string MetricsRegistry::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, f] : families_) {
    const char* type = f.type == Type::Counter ? "counter"
                       : f.type == Type::Gauge ? "gauge"
                                               : "histogram";
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& [labels, c] : f.counters)
      out += name + renderLabels(labels) + " " + number(c->value()) + "\n";
    for (const auto& [labels, g] : f.gauges)
      out += name + renderLabels(labels) + " " + number(g->value()) + "\n";
    for (const auto& [labels, h] : f.histograms) {
      unsigned long long cumulative = 0;
      for (size_t i = 0; i < h->bounds().size(); ++i) {
        cumulative += h->buckets()[i];
        out += name + "_bucket" + renderLabels(labels, "le", number(h->bounds()[i])) + " " +
               std::to_string(cumulative) + "\n";
      }
      out += name + "_bucket" + renderLabels(labels, "le", "+Inf") + " " +
             std::to_string(h->count()) + "\n";
      out += name + "_sum" + renderLabels(labels) + " " + number(h->sum()) + "\n";
      out += name + "_count" + renderLabels(labels) + " " + std::to_string(h->count()) + "\n";
    }
  }
  return out;
}

}  // namespace okna::core
