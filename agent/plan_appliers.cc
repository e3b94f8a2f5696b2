#include "agent/plan_appliers.h"

#include <nlohmann/json.hpp>
#include "core/loop_thread.h"

#include "chassis/chassis_reconciler.h"
#include "placement/reconciler.h"

namespace okna::agent {

void handPlan(const Plan& plan, const k8s::NodeInfo& node, bool podsKnown,
              const PlanAppliers& appliers) {
  OKNA_ASSERT_ON_LOOP();
  if (appliers.placement)
    appliers.placement->apply({plan.nodeName, plan.nodeUid, podsKnown, plan.placement});
  if (appliers.chassis) appliers.chassis->apply({node, plan.chassis});
  if (appliers.metadata) appliers.metadata->apply(plan.metadata);
}

nlohmann::json appliersJson(const PlanAppliers& appliers, bool podsKnown) {
  nlohmann::json out = nlohmann::json::object();
  if (appliers.chassis) out["ovs"] = appliers.chassis->describe();
  if (appliers.placement) {
    out["placement"] = appliers.placement->describe();
    out["placement"]["waitingForPods"] = !podsKnown;
  }
  if (appliers.metadata) out["metadata"] = appliers.metadata->describe();
  return out;
}

}  // namespace okna::agent
