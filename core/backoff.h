#pragma once
// Capped exponential backoff with jitter: every retry loop in the agent (watch reconnects,
// Placement, OVSDB) waits through one of these, so that a failing peer never sees a tight loop
// and a fleet of agents does not retry in lockstep.

#include <chrono>
#include <cstdint>
#include <random>

namespace okna::core {

struct BackoffConfig {
  // First delay after a failure.
  std::chrono::milliseconds initial{500};
  // Upper bound of any delay (before jitter).
  std::chrono::milliseconds max{30000};
  // Growth per consecutive failure.
  double factor = 2.0;
  // Each delay is drawn uniformly in [d * (1 - jitter), d].
  double jitter = 0.5;
};

class Backoff {
 public:
  explicit Backoff(BackoffConfig config, std::uint64_t seed = std::random_device{}());

  /** The delay before the next attempt; grows until reset(). */
  std::chrono::milliseconds next();
  /** Call after a success: the next failure starts again from `initial`. */
  void reset() { attempt_ = 0; }
  unsigned attempts() const { return attempt_; }

 private:
  BackoffConfig config_;
  std::mt19937_64 rng_;
  unsigned attempt_ = 0;
};

}  // namespace okna::core
