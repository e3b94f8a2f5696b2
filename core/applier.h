#pragma once
// The one shape of the agent's appliers (chassis, Placement, metadata): each is handed its section
// of the plan (agent/plan.h) on the loop thread, stops for good when the agent does, reports its
// readiness component, and describes what it is doing about its section for /debug/plan. The
// agent holds them through this interface only (agent/plan_appliers.h), so a test can stand a
// fake in for any of them.

#include <optional>

#include <nlohmann/json.hpp>

#include "core/health.h"

namespace okna::core {

template <typename Section>
class Applier {
 public:
  virtual ~Applier() = default;

  /** The applier's section of a new plan (after every input change: bursts are cheap). Loop
   *  thread only. Nothing is applied after stop(). */
  virtual void apply(const Section& section) = 0;
  /** Stops for good; what was applied stays as it is. Idempotent. */
  virtual void stop() = 0;
  /** Its readiness component as /readyz shows it (nullopt: none now, e.g. Placement without the
   *  compute role). */
  virtual std::optional<HealthRegistry::Check> health() const = 0;
  /** What it does about its section, for /debug/plan's "appliers". */
  virtual nlohmann::json describe() const = 0;
  /** What the last section asks is done, as far as this applier can know (its write read back,
   *  a drain finished, a provider closed): an agent that leaves its node waits for it
   *  (agent/departure.h). An applier that cannot act now (no credentials) is settled. */
  virtual bool settled() const = 0;
};

}  // namespace okna::core
