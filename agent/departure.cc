#include "agent/departure.h"

#include <algorithm>

#include "agent/roles.h"

namespace okna::agent {

namespace {

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::set<std::string> parseRoleSet(const core::YamlField& f) {
  std::set<std::string> out;
  for (const auto& item : f.items()) {
    const std::string name = item.asString();
    const auto& known = roleNames();
    if (std::find(known.begin(), known.end(), name) == known.end())
      item.fail(
          "unknown role (expected one of: controlPlane, compute, network, storage, "
          "containers, provisioning)");
    out.insert(name);
  }
  return out;
}

}  // namespace

DepartureConfig parseDepartureConfig(const core::YamlField& f) {
  f.expectKeys({"roles", "metadataRoles", "timeoutSeconds", "readTimeoutSeconds"});
  DepartureConfig c;
  if (auto v = f.get("roles")) c.roles = parseRoleSet(*v);
  if (auto v = f.get("metadataRoles")) c.metadataRoles = parseRoleSet(*v);
  if (auto v = f.get("timeoutSeconds")) c.timeout = std::chrono::seconds(v->asInt(1, 3600));
  if (auto v = f.get("readTimeoutSeconds"))
    c.readTimeout = std::chrono::milliseconds(static_cast<long>(v->asDouble(0.1, 60) * 1000));
  return c;
}

DepartureDecision decideDeparture(const DepartureConfig& config, const RolesAtStop& now) {
  DepartureDecision d;
  if (config.roles.empty()) {
    d.reason = "departure.roles is empty: every stop leaves the host as it is";
    return d;
  }
  if (!now.roles) {
    d.reason = "the Node's roles are unknown (" + now.source +
               "): the host is left as it is (openkeel-node-agent --cleanup finishes a removal "
               "by hand)";
    return d;
  }
  std::set<std::string> kept;
  for (const auto& role : config.roles)
    if (now.roles->count(role)) kept.insert(role);
  if (!kept.empty()) {
    d.reason = "the node still has the role " + join(kept) + " (" + now.source +
               "): a restart; the host is left as it is for the next agent";
    return d;
  }
  d.finish = true;
  d.lost = config.roles;
  bool metadataServed = false;
  for (const auto& role : config.metadataRoles) metadataServed |= now.roles->count(role) != 0;
  d.retireMetadata = !metadataServed;
  d.reason = "the node no longer has the role " + join(config.roles) + " (" + now.source +
             "): finishing its removal before exiting" +
             (d.retireMetadata ? "; no role left serves metadata: its namespaces go"
                               : "; the metadata namespaces stay for the role still here");
  return d;
}

}  // namespace okna::agent
