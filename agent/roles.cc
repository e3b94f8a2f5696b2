#include "agent/roles.h"

#include <cctype>

namespace okna::agent {

const std::vector<std::string>& roleNames() {
  static const std::vector<std::string> names{"controlPlane", "compute",    "network",
                                              "storage",      "containers", "provisioning"};
  return names;
}

std::string kebabCase(const std::string& roleName) {
  std::string out;
  for (char c : roleName) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      out += '-';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::string defaultRoleLabel(RoleProfile profile, const std::string& roleName) {
  return profile == RoleProfile::Hardened
             ? "node-restriction.kubernetes.io/openkeel-" + kebabCase(roleName)
             : "node-role.openkeel.io/" + kebabCase(roleName);
}

RolesPlan planRoles(const RolesConfig& config, const k8s::NodeInfo& node) {
  RolesPlan plan;
  for (const std::string& role : roleNames()) {
    auto ruleIt = config.roles.find(role);
    const RoleRule* rule = ruleIt == config.roles.end() ? nullptr : &ruleIt->second;
    const bool byTerms = rule != nullptr && !rule->nodeSelectorTerms.empty();
    const std::string key =
        rule != nullptr && rule->label ? *rule->label : defaultRoleLabel(config.profile, role);

    // Under the hardened profile a kubelet could have set the default key on its own node: say
    // that it grants nothing, so that an operator is not misled.
    const std::string weakKey = defaultRoleLabel(RoleProfile::Default, role);
    if (config.profile == RoleProfile::Hardened && (byTerms || weakKey != key) &&
        node.labels.count(weakKey) != 0) {
      plan.warnings.push_back("label " + weakKey +
                              " grants nothing under the hardened profile: the " + role +
                              " role comes from " + (byTerms ? "its nodeSelectorTerms" : key) +
                              ", which kubelets cannot set");
    }

    if (byTerms) {
      if (matchesSelectorTerms(rule->nodeSelectorTerms, node.labels, node.name))
        plan.roles.insert(role);
      continue;
    }
    auto it = node.labels.find(key);
    if (it == node.labels.end()) continue;
    // The charts select with nodeSelector {key: ""}: only the empty value places their pods.
    if (it->second.empty()) {
      plan.roles.insert(role);
    } else {
      plan.warnings.push_back("label " + key + "=\"" + it->second + "\" grants no " + role +
                              " role: role labels must have the empty value (the charts select " +
                              key + "=\"\"); relabel with: kubectl label node " + node.name +
                              " --overwrite " + key + "=");
    }
  }
  return plan;
}

}  // namespace okna::agent
