#include "core/backoff.h"

#include <algorithm>
#include <cmath>

namespace okna::core {

Backoff::Backoff(BackoffConfig config, std::uint64_t seed) : config_(config), rng_(seed) {}

std::chrono::milliseconds Backoff::next() {
  const double base = static_cast<double>(config_.initial.count()) *
                      std::pow(config_.factor, static_cast<double>(std::min(attempt_, 62u)));
  const double capped = std::min(base, static_cast<double>(config_.max.count()));
  ++attempt_;
  std::uniform_real_distribution<double> dist(capped * (1.0 - config_.jitter), capped);
  return std::chrono::milliseconds(static_cast<std::int64_t>(dist(rng_)));
}

}  // namespace okna::core
