#include "core/health.h"

#include <algorithm>

namespace okna::core {

void HealthRegistry::addComponent(const std::string& name) {
  std::lock_guard lock(mutex_);
  components_.try_emplace(name, Component{false, "not synced yet"});
}

void HealthRegistry::removeComponent(const std::string& name) {
  std::lock_guard lock(mutex_);
  components_.erase(name);
}

void HealthRegistry::setReady(const std::string& name, bool ready, const std::string& detail) {
  std::lock_guard lock(mutex_);
  components_[name] = Component{ready, detail};
}

std::vector<HealthRegistry::Check> HealthRegistry::readiness() const {
  std::lock_guard lock(mutex_);
  std::vector<Check> out;
  for (const auto& [name, c] : components_) out.push_back({name, c.ready, c.detail});
  return out;
}

std::optional<HealthRegistry::Check> HealthRegistry::component(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = components_.find(name);
  if (it == components_.end()) return std::nullopt;
  return Check{name, it->second.ready, it->second.detail};
}

bool HealthRegistry::ready() const {
  auto checks = readiness();
  return std::all_of(checks.begin(), checks.end(), [](const Check& c) { return c.ok; });
}

void HealthRegistry::addHeartbeat(const std::string& name, Clock::duration maxSilence) {
  std::lock_guard lock(mutex_);
  beats_[name] = Beat{maxSilence, Clock::now(), ""};
}

void HealthRegistry::stopped(const std::string& name, const std::string& reason) {
  std::lock_guard lock(mutex_);
  auto it = beats_.find(name);
  if (it != beats_.end()) it->second.stopped = reason.empty() ? "stopped" : reason;
}

void HealthRegistry::beat(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = beats_.find(name);
  if (it != beats_.end()) it->second.last = Clock::now();
}

std::vector<HealthRegistry::Check> HealthRegistry::liveness(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  std::vector<Check> out;
  for (const auto& [name, b] : beats_) {
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - b.last);
    if (!b.stopped.empty()) {
      out.push_back({name, false, "stopped: " + b.stopped});
      continue;
    }
    const bool ok = now - b.last <= b.maxSilence;
    out.push_back({name, ok, "last beat " + std::to_string(silent.count()) + " ms ago"});
  }
  return out;
}

bool HealthRegistry::live(Clock::time_point now) const {
  auto checks = liveness(now);
  return std::all_of(checks.begin(), checks.end(), [](const Check& c) { return c.ok; });
}

}  // namespace okna::core
