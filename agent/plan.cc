#include "agent/plan.h"

namespace okna::agent {

Plan computePlan(const AgentConfig& config, const PlanInputs& inputs) {
  Plan plan;
  plan.nodeName = inputs.node.name;
  plan.nodeUid = inputs.node.uid;
  plan.roles = planRoles(config.nodeRoles, inputs.node);
  plan.warnings = plan.roles.warnings;
  plan.podCount = inputs.pods ? static_cast<long>(inputs.pods->size()) : -1;
  return plan;
}

nlohmann::json planToJson(const Plan& plan) {
  nlohmann::json out;
  out["node"] = {{"name", plan.nodeName}, {"uid", plan.nodeUid}};
  out["roles"] = nlohmann::json::array();
  for (const auto& r : plan.roles.roles) out["roles"].push_back(r);  // std::set: sorted
  out["warnings"] = plan.warnings;
  return out;
}

std::string planToText(const Plan& plan) {
  std::string out = "node " + plan.nodeName + " (uid " +
                    (plan.nodeUid.empty() ? "unknown" : plan.nodeUid) + ")\n";
  out += "roles:";
  if (plan.roles.roles.empty()) out += " (none)";
  for (const auto& r : plan.roles.roles) out += " " + r;
  out += "\n";
  if (plan.podCount >= 0) out += "pods on the node: " + std::to_string(plan.podCount) + "\n";
  for (const auto& w : plan.warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace okna::agent
