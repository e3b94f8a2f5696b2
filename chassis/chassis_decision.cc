#include "chassis/chassis_decision.h"

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

namespace okna::ovsdb {

// A deadline, not a duration, so that the text is the same whenever it is computed.
std::string isoTime(std::int64_t unix) {
  const std::time_t t = static_cast<std::time_t>(unix);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

std::string externalNicOf(const k8s::NodeInfo& node) {
  const auto it = node.labels.find(kExternalNicKey);
  return it == node.labels.end() ? std::string() : it->second;
}

const char* drainStepName(GatewayDrainStep::What what) {
  using What = GatewayDrainStep::What;
  switch (what) {
    case What::None:
      return "None";
    case What::NotNeeded:
      return "NotNeeded";
    case What::Waiting:
      return "Waiting";
    case What::Started:
      return "Started";
    case What::Drained:
      return "Drained";
    case What::TimedOut:
      return "TimedOut";
    case What::Cancelled:
      return "Cancelled";
  }
  return "None";
}

ChassisDecision decideChassis(const DesiredChassis& planned, const k8s::NodeInfo& node,
                              const ChassisDecisionInputs& in) {
  ChassisDecision out;
  out.checked = planned;
  out.planWarnings = planned.warnings.size();
  if (!externalNicOf(node).empty()) {
    guardExternalNic(out.checked, node, in.externalNic);
    if (out.checked.warnings.size() > out.planWarnings) {
      out.refusedNic = out.checked.warnings.back().message;
      out.reasons.push_back("external NIC not plugged: " + out.refusedNic);
    }
  }

  out.drain.state = in.drain;
  if (in.observed && in.observed->hasRoot) {
    const ChassisObserved& o = *in.observed;
    GatewayDrainInputs d;
    d.gatewayWanted = out.checked.gateway;
    if (o.ownership) {
      const auto& items = o.ownership->cmsItems;
      d.ownsGatewayItem = std::find(items.begin(), items.end(), kGatewayItem) != items.end();
      d.recordedSince = o.ownership->drainSince;
    }
    if (in.gatewayFlagInFlight) d.ownsGatewayItem = true;
    d.hasChassis = !o.systemId.empty();
    d.sbSynced = o.sbSynced;
    d.gatewayPorts = o.gatewayPorts;
    d.now = in.now;
    d.timeout = in.drainTimeout;
    out.drain = stepGatewayDrain(in.drain, d);
    out.submit = true;
  }

  out.effective = out.checked;
  out.effective.holdOwned = out.drain.state.since != 0;
  out.effective.drainSince = out.drain.state.since;
  out.effective.ownershipCopy = in.ownershipCopy;
  if (out.effective.holdOwned) {
    std::string where;
    if (!in.observed || !in.observed->sbSynced)
      where = "the Southbound is not synced, so it cannot show that the router gateways left";
    else if (in.observed->gatewayPorts.empty())
      where = "no router gateway is bound here any more";
    else
      where = std::to_string(in.observed->gatewayPorts.size()) +
              " router gateway(s) still bound to this chassis";
    out.reasons.push_back(
        "gateway drain: the bridge mappings, bridges and ports the agent owns are kept (" + where +
        "; at most until " + isoTime(out.drain.state.since + in.drainTimeout.count()) + ")");
  }
  if (out.drain.what == GatewayDrainStep::What::NotNeeded ||
      out.drain.what == GatewayDrainStep::What::Drained ||
      out.drain.what == GatewayDrainStep::What::TimedOut)
    out.reasons.push_back(std::string("gateway drain ") + drainStepName(out.drain.what) +
                          (out.drain.why.empty() ? std::string() : ": " + out.drain.why) +
                          "; the network the Node no longer asks for goes");
  return out;
}

nlohmann::json decisionToJson(const ChassisDecision& d) {
  nlohmann::json drain = {{"step", drainStepName(d.drain.what)},
                          {"why", d.drain.why},
                          {"since", d.drain.state.since},
                          {"holdOwned", d.effective.holdOwned}};
  return {
      {"submit", d.submit},
      {"refusedNic", d.refusedNic.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.refusedNic)},
      {"drain", std::move(drain)},
      {"reasons", d.reasons},
      {"effective", toDryRunJson(d.effective)}};
}

}  // namespace okna::ovsdb
