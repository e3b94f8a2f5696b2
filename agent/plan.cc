#include "agent/plan.h"

namespace okna::agent {

Plan computePlan(const AgentConfig& config, const PlanInputs& inputs) {
  Plan plan;
  plan.nodeName = inputs.node.name;
  plan.nodeUid = inputs.node.uid;
  plan.roles = planRoles(config.nodeRoles, inputs.node);
  plan.warnings = plan.roles.warnings;
  plan.chassis = ovsdb::planChassis(config.ovs, inputs.node, plan.roles.roles);
  for (const auto& w : plan.chassis.warnings) plan.warnings.push_back(w.message);
  plan.podCount = inputs.pods ? static_cast<long>(inputs.pods->size()) : -1;
  if (config.placement.enabled && plan.roles.roles.count("compute") != 0 &&
      (inputs.pods || inputs.dryRun)) {
    plan.placement = placement::planPlacement(config.placement, inputs.node,
                                              inputs.pods.value_or(std::vector<k8s::PodInfo>{}));
    if (!inputs.pods)
      plan.warnings.push_back(
          "placement: reserved is computed without the node's pods (no --pods-file)");
    for (const auto& w : plan.placement->warnings) plan.warnings.push_back("placement: " + w);
  }
  plan.metadata = planMetadataIntent(config, plan.roles.roles);
  return plan;
}

MetadataIntent planMetadataIntent(const AgentConfig& config, const std::set<std::string>& roles) {
  if (!config.metadata.enabled) return {false, "metadata.enabled is false"};
  if (!config.ovs.enabled)
    return {false, "OVS management is off (no ovs: section, no --ovsdb): no chassis to serve"};
  if (roles.count("compute") == 0)
    return {false, "no compute role: no namespace is created (existing ones keep serving)"};
  return {true,
          "compute role: one ovnmeta-<network> namespace per network with a VM port bound here"};
}

nlohmann::json planToJson(const Plan& plan) {
  nlohmann::json out;
  out["node"] = {{"name", plan.nodeName}, {"uid", plan.nodeUid}};
  out["roles"] = nlohmann::json::array();
  for (const auto& r : plan.roles.roles) out["roles"].push_back(r);  // std::set: sorted
  out["warnings"] = plan.warnings;
  if (plan.placement) out["placement"] = placement::toDryRunJson(*plan.placement);
  out["ovs"] = ovsdb::toDryRunJson(plan.chassis);
  // The namespaces need the Southbound: --dry-run --ovsdb fills them in (dry_run_metadata.h).
  out["metadata"] = {{"enabled", plan.metadata.active},
                     {"reason", plan.metadata.reason},
                     {"namespaces", nlohmann::json::array()}};
  return out;
}

std::string planToText(const Plan& plan) {
  std::string out = "node " + plan.nodeName + " (uid " +
                    (plan.nodeUid.empty() ? "unknown" : plan.nodeUid) + ")\n";
  out += "roles:";
  if (plan.roles.roles.empty()) out += " (none)";
  for (const auto& r : plan.roles.roles) out += " " + r;
  out += "\n";
  const auto ovs = ovsdb::toDryRunJson(plan.chassis);
  for (const auto& [key, value] : ovs["external_ids"].items())
    out += "ovs external_ids:" + key + "=" + value.get<std::string>() + "\n";
  for (const auto& b : ovs["bridges"]) {
    out += "ovs bridge " + b["name"].get<std::string>();
    for (const auto& p : b["ports"]) out += " port " + p.get<std::string>();
    out += "\n";
  }
  out += std::string("metadata: ") + (plan.metadata.active ? "active" : "inactive") + " (" +
         plan.metadata.reason + ")\n";
  if (plan.podCount >= 0) out += "pods on the node: " + std::to_string(plan.podCount) + "\n";
  if (plan.placement) {
    const nlohmann::json p = placement::toDryRunJson(*plan.placement);
    out += "placement provider " + p["provider"]["name"].get<std::string>() + " (" +
           p["provider"]["uuid"].get<std::string>() + ")\n";
    auto inventories = [&](const nlohmann::json& inv, const std::string& indent) {
      for (const auto& [cls, i] : inv.items())
        out += indent + cls + ": total " + i["total"].dump() + ", reserved " +
               i["reserved"].dump() + ", allocation_ratio " + i["allocation_ratio"].dump() + "\n";
    };
    inventories(p["inventories"], "  ");
    for (const auto& n : p["nested"]) {
      out += "  nested " + n["name"].get<std::string>() + " traits " + n["traits"].dump() + "\n";
      inventories(n["inventories"], "    ");
    }
    out += "  traits " + p["traits"].dump() + "\n";
  }
  for (const auto& w : plan.warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace okna::agent
