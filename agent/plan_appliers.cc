#include "agent/plan_appliers.h"

#include <nlohmann/json.hpp>

#include "agent/metadata_service.h"
#include "chassis/chassis_reconciler.h"
#include "placement/reconciler.h"

namespace okna::agent {

void handPlan(const Plan& plan, const k8s::NodeInfo& node, bool podsKnown,
              const PlanAppliers& appliers) {
  if (appliers.placement) {
    appliers.placement->setNode(plan.nodeName, plan.nodeUid);
    // Before the pods are known there is no Placement section, and the reconciler keeps its
    // previous state (a role taken away is acted on once the pods are known too).
    if (podsKnown) {
      if (plan.placement) appliers.placement->update(*plan.placement);
      appliers.placement->setActive(plan.placement.has_value());
    }
  }
  if (appliers.chassis) appliers.chassis->update(node, plan.chassis);
  if (appliers.metadata) appliers.metadata->setActive(plan.metadata.active);
}

nlohmann::json appliersJson(const PlanAppliers& appliers, bool podsKnown) {
  nlohmann::json out = nlohmann::json::object();
  if (appliers.chassis) out["ovs"] = appliers.chassis->debugJson();
  if (appliers.placement) {
    out["placement"] = appliers.placement->debugJson();
    out["placement"]["waitingForPods"] = !podsKnown;
  }
  if (appliers.metadata) out["metadata"] = appliers.metadata->reconciler().debugJson();
  return out;
}

}  // namespace okna::agent
