#pragma once
// The agent's whole desired state for its node, computed by the pure planners from the Node, its
// Pods and the config. The live agent and --dry-run compute it with the same function; only the
// live agent hands it to the appliers.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/config.h"
#include "agent/roles.h"
#include "k8s/objects.h"
#include "ovsdb/chassis_desired.h"
#include "placement/desired.h"

namespace okna::agent {

struct PlanInputs {
  k8s::NodeInfo node;
  // The pods bound to the node; unset when they are not known (dry-run without --pods-file).
  std::optional<std::vector<k8s::PodInfo>> pods;
  // --dry-run: plan what can be planned even without the pods, and say what is missing. The live
  // agent instead waits for the pods before planning Placement.
  bool dryRun = false;
};

// Whether this node serves 169.254.169.254, and why (or why not).
struct MetadataIntent {
  bool active = false;
  std::string reason;
};

struct Plan {
  std::string nodeName;
  std::string nodeUid;
  RolesPlan roles;
  // The OVN chassis configuration the Node asks for (applied only when config.ovs.enabled).
  ovsdb::DesiredChassis chassis;
  // Every planner's warnings, in order.
  std::vector<std::string> warnings;
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

}  // namespace okna::agent
