#pragma once
// Which OpenKeel roles this node has, from its labels and the nodeRoles configuration (the same
// structure as the charts' global.nodeRoles). Pure: no I/O, no clock.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/node_selector.h"
#include "k8s/objects.h"

namespace okna::agent {

/** The role names of global.nodeRoles.roles, in the charts' spelling. */
const std::vector<std::string>& roleNames();
/** "controlPlane" -> "control-plane". */
std::string kebabCase(const std::string& roleName);

enum class RoleProfile { Default, Hardened };

struct RoleTaint {
  std::string key;
  std::string effect;
};

struct RoleRule {
  // The label key that grants the role when present with the empty value; unset means the
  // profile's default key.
  std::optional<std::string> label;
  // Accepted for parity with the charts (they tolerate it); the agent does not act on taints.
  std::optional<RoleTaint> taint;
  // Instead of a label: a required node affinity. Non-empty means it is used.
  std::vector<SelectorTerm> nodeSelectorTerms;
};

struct RolesConfig {
  RoleProfile profile = RoleProfile::Default;
  // global.nodeRoles.taints, kept for parity; unused by the agent.
  bool taints = false;
  // By role name; a role without an entry uses the profile's default label.
  std::map<std::string, RoleRule> roles;
};

/** The label key a role uses when its rule names none: default or hardened key. */
std::string defaultRoleLabel(RoleProfile profile, const std::string& roleName);

struct RolesPlan {
  std::set<std::string> roles;
  // Why a label that looks like a role grants nothing, in sentences for logs and --dry-run.
  std::vector<std::string> warnings;
};

RolesPlan planRoles(const RolesConfig& config, const k8s::NodeInfo& node);

}  // namespace okna::agent
