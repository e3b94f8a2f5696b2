#pragma once
// The agent's whole desired state for its node, computed by the pure planners from the Node, its
// Pods and the config. The live agent and --dry-run compute it with the same function; only the
// live agent hands it to the appliers. The live agent computes it once per input change
// (PlanTracker), logs what changed once, and hands each applier its section (plan_appliers.h):
// no applier runs a planner of its own.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/config.h"
#include "agent/roles.h"
#include "chassis/chassis_desired.h"
#include "k8s/objects.h"
#include "placement/desired.h"

namespace okna::agent {

struct PlanInputs {
  k8s::NodeInfo node;
  // The pods bound to the node; unset while they are not known (the pod informer has not synced):
  // there is no Placement section then, since a reservation from half the pods would be too
  // small. (--dry-run without --pods-file plans with no pods and says so itself.)
  std::optional<std::vector<k8s::PodInfo>> pods;
};

/** A planner's warning and the component ("roles", "ovsdb", "placement") it belongs to. */
struct PlanWarning {
  std::string component;
  std::string message;
  /** As shown in --dry-run and /debug/plan: "placement: <message>", others unprefixed. */
  std::string text() const;
  bool operator==(const PlanWarning&) const = default;
};

// Whether this node serves 169.254.169.254, and why (or why not).
struct MetadataIntent {
  bool active = false;
  std::string reason;
  // The agent leaves the node and no role of it serves metadata any more (departure.h,
  // --cleanup): every namespace goes. Never set by the planner.
  bool retire = false;
};

struct Plan {
  std::string nodeName;
  std::string nodeUid;
  RolesPlan roles;
  // The OVN chassis configuration the Node asks for (applied only when config.ovs.enabled).
  ovsdb::DesiredChassis chassis;
  // Every planner's warnings, in order.
  std::vector<PlanWarning> warnings;
  // Number of pods considered (for the text output); -1 when unknown.
  long podCount = -1;
  // The node's resource provider tree: with the compute role and Placement enabled.
  std::optional<placement::DesiredProviderTree> placement;
  MetadataIntent metadata;
};

Plan computePlan(const AgentConfig& config, const PlanInputs& inputs);
MetadataIntent planMetadataIntent(const AgentConfig& config, const std::set<std::string>& roles);

/** {"node": {"name", "uid"}, "roles": [...], "warnings": [...], "ovs": {"external_ids": {...},
 *  "bridges": [{"name", "ports"}]}, ...later sections}. */
nlohmann::json planToJson(const Plan& plan);
/** A human-readable rendering for --dry-run --output text. */
std::string planToText(const Plan& plan);

/**
 * The live agent's plan: recomputed on every input change, with each role change and each new
 * warning logged exactly once, under its component's logger ("[roles]", "[ovsdb]",
 * "[placement]"). The appliers get sections of this plan and log none of its warnings again.
 */
class PlanTracker {
 public:
  explicit PlanTracker(const AgentConfig& config) : config_(config) {}
  /** Computes and logs; the result is current() until the next call. */
  const Plan& update(const PlanInputs& inputs);
  const std::optional<Plan>& current() const { return plan_; }
  /** The roles changed with the last update() (or it was the first). */
  bool rolesChanged() const { return rolesChanged_; }

 private:
  const AgentConfig& config_;
  std::optional<Plan> plan_;
  bool rolesChanged_ = false;
};

}  // namespace okna::agent
