#pragma once
// Retries per key (a network, a provider, ...) on core::Backoff: each key that failed waits its
// own capped, growing delay on the caller's core::Clock, and a success forgets it. The owner
// keeps one timer for nextDue() and attempts the keys that are due() when it fires. Loop thread
// only, like the appliers that use it.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>

#include "core/backoff.h"
#include "core/clock.h"

namespace okna::core {

template <typename Key, typename Compare = std::less<>>
class KeyedRetry {
 public:
  using TimePoint = Clock::TimePoint;

  /** `config.jitter` 0: every key waits exactly initial, 2x initial, ... up to max. */
  KeyedRetry(const Clock& clock, BackoffConfig config, std::uint64_t seed = std::random_device{}())
      : clock_(clock), config_(config), seeds_(seed) {}

  /** `key` failed: it is due again after its next delay (returned). */
  std::chrono::milliseconds failed(const Key& key) {
    auto it = keys_.find(key);
    if (it == keys_.end()) it = keys_.emplace(key, Entry{Backoff(config_, seeds_()), {}}).first;
    const auto delay = it->second.backoff.next();
    it->second.dueAt = clock_.now() + delay;
    return delay;
  }
  /** `key` succeeded or is gone: its next failure waits `initial` again. */
  void forget(const Key& key) {
    if (auto it = keys_.find(key); it != keys_.end()) keys_.erase(it);
  }
  /** No failure of `key` is waiting out its delay. */
  bool due(const Key& key) const {
    const auto at = dueAt(key);
    return !at || clock_.now() >= *at;
  }
  /** When `key` is due again (nullopt: it has no failure pending). */
  std::optional<TimePoint> dueAt(const Key& key) const {
    const auto it = keys_.find(key);
    if (it == keys_.end()) return std::nullopt;
    return it->second.dueAt;
  }
  /** Failures of `key` in a row. */
  unsigned attempts(const Key& key) const {
    const auto it = keys_.find(key);
    return it == keys_.end() ? 0 : it->second.backoff.attempts();
  }
  /** The earliest due time of the keys still waiting (nullopt: none is). */
  std::optional<TimePoint> nextDue() const {
    std::optional<TimePoint> out;
    const auto now = clock_.now();
    for (const auto& [key, e] : keys_)
      if (e.dueAt > now && (!out || e.dueAt < *out)) out = e.dueAt;
    return out;
  }
  /** Keys with a failure on record. */
  std::size_t size() const { return keys_.size(); }

 private:
  struct Entry {
    Backoff backoff;
    TimePoint dueAt;
  };
  const Clock& clock_;
  BackoffConfig config_;
  // Each key's Backoff draws its jitter from its own stream, seeded from this one.
  std::mt19937_64 seeds_;
  std::map<Key, Entry, Compare> keys_;
};

}  // namespace okna::core
