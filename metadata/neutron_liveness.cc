#include "metadata/neutron_liveness.h"

#include "metadata/metadata_ports.h"
#include "ovsdb/string_map.h"

namespace okna::ovsdb {

NeutronLivenessPlan planNeutronLiveness(const NeutronLivenessInputs& in,
                                        const NeutronLivenessState& state) {
  NeutronLivenessPlan plan;
  plan.next = state;
  if (!in.ids.count(kNeutronMetadataIdKey))
    plan.set.emplace_back(kNeutronMetadataIdKey, neutronMetadataAgentId(in.chassisName));
  const std::string bridge = in.bridge.empty() ? "br-int" : in.bridge;
  if (valueIn(in.ids, kNeutronOvnBridgeKey) != bridge)
    plan.set.emplace_back(kNeutronOvnBridgeKey, bridge);

  const std::string cfg = in.nbCfg >= 0 ? std::to_string(in.nbCfg) : "";
  const auto echoed = in.ids.find(kNeutronSbCfgKey);
  const bool behind = !cfg.empty() && (echoed == in.ids.end() || echoed->second != cfg);
  if (!behind) {
    plan.next.echoDueAt.reset();
  } else if (!state.echoed) {
    plan.next.echoDueAt = in.now;  // the first echo at once, as Neutron's first SB_Global event
  } else if (!state.echoDueAt) {
    plan.next.echoDueAt = in.now + in.randomDelay;
    plan.scheduled = in.randomDelay;
  }
  if (plan.next.echoDueAt && in.now >= *plan.next.echoDueAt) {
    plan.set.emplace_back(kNeutronSbCfgKey, cfg);
    plan.echoesNbCfg = true;
    plan.next.echoed = true;
    plan.next.echoDueAt.reset();
  }
  for (const char* key : kOvnNeutronAgentKeys)
    if (in.ids.count(key)) plan.remove.emplace_back(key);
  return plan;
}

}  // namespace okna::ovsdb
