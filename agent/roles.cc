#include "agent/roles.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

namespace okna::agent {

namespace {

// The prefixes of the roles' default keys. node-role.openkeel.io/ holds roles only: a label there
// that is no role's key is a mistake. node-restriction.kubernetes.io/openkeel- also holds other
// keys (openkeel-trait-<TRAIT>, Placement's; other components' to come): a label there is taken
// for a mistyped role only when it is a typo's distance from one.
struct RolePrefix {
  std::string_view prefix;
  bool rolesOnly;
};
constexpr RolePrefix kPrefixes[] = {{"node-role.openkeel.io/", true},
                                    {"node-restriction.kubernetes.io/openkeel-", false}};

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A label under the roles' prefixes that is no role's key grants nothing: most likely a typo,
// which would otherwise leave the node without the role and no word said.
// `roleKeys`: the keys the roles are read from (a configured key may be under a prefix too).
void warnOfMistypedRoleLabels(const k8s::NodeInfo& node, const std::set<std::string>& roleKeys,
                              std::vector<std::string>& warnings) {
  for (const auto& [key, value] : node.labels) {
    (void)value;
    if (roleKeys.count(key) != 0) continue;
    for (const auto& [prefix, rolesOnly] : kPrefixes) {
      if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string_view written = std::string_view(key).substr(prefix.size());
      std::string closest;
      std::size_t best = 3;  // at most two edits away: a typo, not another word
      std::string names;
      bool known = false;
      for (const std::string& role : roleNames()) {
        const std::string name = kebabCase(role);
        names += (names.empty() ? "" : ", ") + name;
        if (name == written) known = true;
        const std::size_t d = editDistance(written, name);
        if (d < best) {
          best = d;
          closest = name;
        }
      }
      if (known || (!rolesOnly && closest.empty())) continue;
      std::string warning = "label " + key + " names no OpenKeel role and grants nothing; ";
      warning += closest.empty()
                     ? "the roles' labels here are " + std::string(prefix) + "<role> for " + names
                     : "did you mean " + std::string(prefix) + closest + "?";
      warnings.push_back(std::move(warning));
    }
  }
}

}  // namespace

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
  std::set<std::string> roleKeys;
  for (const std::string& role : roleNames()) {
    auto ruleIt = config.roles.find(role);
    const RoleRule* rule = ruleIt == config.roles.end() ? nullptr : &ruleIt->second;
    const bool byTerms = rule != nullptr && !rule->nodeSelectorTerms.empty();
    const std::string key =
        rule != nullptr && rule->label ? *rule->label : defaultRoleLabel(config.profile, role);
    if (!byTerms) roleKeys.insert(key);

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
  warnOfMistypedRoleLabels(node, roleKeys, plan.warnings);
  return plan;
}

}  // namespace okna::agent
