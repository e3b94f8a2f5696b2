#include "agent/plan.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/logging.h"

namespace okna::agent {

namespace {

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out.empty() ? "(none)" : out;
}

}  // namespace

std::string PlanWarning::text() const {
  return component == "placement" ? component + ": " + message : message;
}

Plan computePlan(const AgentConfig& config, const PlanInputs& inputs) {
  Plan plan;
  plan.nodeName = inputs.node.name;
  plan.nodeUid = inputs.node.uid;
  plan.roles = planRoles(config.nodeRoles, inputs.node);
  for (const auto& w : plan.roles.warnings) plan.warnings.push_back({"roles", w});
  plan.chassis = ovsdb::planChassis(config.ovs, inputs.node, plan.roles.roles);
  for (const auto& w : plan.chassis.warnings) plan.warnings.push_back({"ovsdb", w.message});
  plan.podCount = inputs.pods ? static_cast<long>(inputs.pods->size()) : -1;
  if (config.placement.enabled && plan.roles.roles.count("compute") != 0 && inputs.pods) {
    plan.placement = placement::planPlacement(config.placement, inputs.node, *inputs.pods);
    for (const auto& w : plan.placement->warnings) plan.warnings.push_back({"placement", w});
  }
  plan.metadata = planMetadataIntent(config, plan.roles.roles);
  return plan;
}

const Plan& PlanTracker::update(const PlanInputs& inputs) {
  Plan next = computePlan(config_, inputs);
  rolesChanged_ = !plan_ || plan_->roles.roles != next.roles.roles;
  if (rolesChanged_)
    core::logger("roles")->info("node {} roles: {} -> {}", next.nodeName,
                                plan_ ? join(plan_->roles.roles) : "(unknown)",
                                join(next.roles.roles));
  // Each warning once while it holds: said again only after it went away and came back.
  for (const auto& w : next.warnings) {
    const bool known = plan_ && std::find(plan_->warnings.begin(), plan_->warnings.end(), w) !=
                                    plan_->warnings.end();
    if (!known) core::logger(w.component)->warn("{}", w.message);
  }
  plan_ = std::move(next);
  return *plan_;
}

MetadataIntent planMetadataIntent(const AgentConfig& config, const std::set<std::string>& roles) {
  if (!config.metadata.enabled) return {false, "metadata.enabled is false"};
  if (!config.ovs.enabled)
    return {false, "OVS management is off (no ovs: section, no --ovsdb): no chassis to serve"};
  // Neutron's agent serves every VIF bound to its chassis wherever it runs: on a network node,
  // the external ports (SR-IOV direct, baremetal) whose HA chassis group it hosts.
  const bool compute = roles.count("compute") != 0;
  if (!compute && roles.count("network") == 0)
    return {false,
            "neither compute nor network role: no namespace is created (existing ones keep "
            "serving)"};
  return {true, std::string(compute ? "compute" : "network") +
                    " role: one ovnmeta-<network> namespace per network with a VM port (or an "
                    "external port) bound here"};
}

nlohmann::json planToJson(const Plan& plan) {
  nlohmann::json out;
  out["node"] = {{"name", plan.nodeName}, {"uid", plan.nodeUid}};
  out["roles"] = nlohmann::json::array();
  for (const auto& r : plan.roles.roles) out["roles"].push_back(r);  // std::set: sorted
  out["warnings"] = nlohmann::json::array();
  for (const auto& w : plan.warnings) out["warnings"].push_back(w.text());
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
    if (p["availabilityZone"].is_object())
      out += "  availability zone " + p["availabilityZone"]["zone"].get<std::string>() +
             " (Nova aggregate " + p["availabilityZone"]["aggregate"].get<std::string>() +
             ", the same aggregate on the provider in Placement)\n";
  }
  for (const auto& w : plan.warnings) out += "warning: " + w.text() + "\n";
  return out;
}

}  // namespace okna::agent
