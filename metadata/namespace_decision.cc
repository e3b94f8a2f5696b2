#include "metadata/namespace_decision.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace okna::metadata {

namespace {

constexpr const char* kPrefix = "ovnmeta-";

NamespaceDecision make(const std::string& id, NamespaceAction action, std::string reason) {
  return {id, namespaceNameFor(id), action, std::move(reason)};
}

}  // namespace

const char* actionName(NamespaceAction action) {
  switch (action) {
    case NamespaceAction::Create:
      return "create";
    case NamespaceAction::Keep:
      return "keep";
    case NamespaceAction::Remove:
      return "remove";
    case NamespaceAction::Hold:
      return "hold";
  }
  return "hold";
}

NamespaceDecision decideNamespace(const MetadataPlan& plan, bool active,
                                  const std::string& networkId, NamespaceState state,
                                  bool retired) {
  using A = NamespaceAction;
  if (retired)
    return state.present || state.managed
               ? make(networkId, A::Remove,
                      "no role of this node serves metadata any more: the agent removes what "
                      "it set up before it leaves")
               : make(networkId, A::Hold, "no namespace, none needed");
  const bool planned = plan.networks.count(networkId) != 0;
  if (planned) {
    if (!active && !state.managed)
      return make(networkId, A::Hold,
                  std::string("metadata is not active on this node: no namespace is created") +
                      (state.present ? " (the existing one is left as it is)" : ""));
    if (!active)
      return make(networkId, A::Keep,
                  "metadata is not active on this node, but VMs of the network are still here");
    if (const auto lost = plan.lost.find(networkId); lost != plan.lost.end())
      return make(networkId, state.present || state.managed ? A::Keep : A::Create, lost->second);
    if (state.present || state.managed)
      return make(networkId, A::Keep, "a VM port of the network is bound to this chassis");
    return make(networkId, A::Create, "a VM port of the network is bound to this chassis");
  }
  if (!state.present && !state.managed)
    return make(networkId, A::Hold, "no namespace, none needed");
  if (!plan.synced) return make(networkId, A::Hold, "nothing is removed: " + plan.notSyncedReason);
  if (state.managed)
    return make(networkId, A::Remove, "no VM port of the network is bound here any more");
  if (!active)
    return make(networkId, A::Hold,
                "metadata is not active on this node: a namespace it did not set up is left alone");
  return make(networkId, A::Remove,
              "no VM port of the network is bound here (left by an earlier agent or Neutron's)");
}

std::vector<NamespaceDecision> decideNamespaces(const MetadataPlan& plan, bool active,
                                                const std::set<std::string>& present,
                                                const std::set<std::string>& managed,
                                                bool retired) {
  std::set<std::string> ids(managed);
  for (const auto& [id, network] : plan.networks) ids.insert(id);
  std::set<std::string> presentIds;
  for (const auto& name : present)
    if (name.rfind(kPrefix, 0) == 0)
      presentIds.insert(name.substr(std::char_traits<char>::length(kPrefix)));
  ids.insert(presentIds.begin(), presentIds.end());
  std::vector<NamespaceDecision> out;
  for (const auto& id : ids)
    out.push_back(decideNamespace(plan, active, id,
                                  {presentIds.count(id) != 0, managed.count(id) != 0}, retired));
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.namespaceName < b.namespaceName; });
  return out;
}

MetadataDecision decideMetadata(const ovsdb::SbMetadataView& view,
                                const MetadataDecisionInputs& in) {
  MetadataDecision out;
  out.plan = planMetadata(view, in.ipv6, in.local);
  out.namespaces = decideNamespaces(out.plan, in.active, in.namespaces, {}, in.retired);
  return out;
}

nlohmann::json decisionsToJson(const std::vector<NamespaceDecision>& decisions) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : decisions)
    out.push_back({{"network", d.networkId},
                   {"namespace", d.namespaceName},
                   {"action", actionName(d.action)},
                   {"reason", d.reason}});
  return out;
}

}  // namespace okna::metadata
