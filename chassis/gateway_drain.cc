#include "chassis/gateway_drain.h"

#include <algorithm>

namespace okna::ovsdb {

GatewayDrainStep stepGatewayDrain(const GatewayDrainState& previous, const GatewayDrainInputs& in) {
  GatewayDrainStep step;
  step.state = previous;
  GatewayDrainState& s = step.state;
  const auto end = [&](GatewayDrainStep::What what, std::string why) {
    step.what = what;
    step.why = std::move(why);
    step.wasAnnounced = s.announced;
    step.elapsed = std::max<std::int64_t>(0, in.now - s.since);
    s = GatewayDrainState{};
    s.done = what != GatewayDrainStep::What::Cancelled;
  };

  if (in.gatewayWanted) {
    if (s.since != 0) {
      end(GatewayDrainStep::What::Cancelled, "the network role is back");
    }
    s = GatewayDrainState{};
    return step;
  }
  if (s.done) return step;

  bool fresh = false;
  if (s.since == 0 && in.recordedSince != 0) {
    // An earlier process started it. A start in the future (a clock set back, a garbled value)
    // counts from now, so that the drain stays bounded.
    s.since = std::min(in.recordedSince, in.now);
    s.resumed = true;
    s.announced = false;
  } else if (s.since == 0) {
    if (!in.ownsGatewayItem) return step;  // nothing of the agent's to drain
    std::string why;
    if (in.timeout.count() == 0) {
      why = "drainTimeoutSeconds is 0";
    } else if (!in.hasChassis) {
      why = "this node has no chassis name (external_ids:system-id)";
    } else if (in.sbSynced && in.gatewayPorts.empty()) {
      why = "no router gateway is bound to this chassis";
    }
    if (!why.empty()) {
      step.what = GatewayDrainStep::What::NotNeeded;
      step.why = std::move(why);
      s.done = true;
      return step;
    }
    s.since = in.now;
    fresh = true;
  }

  if (!in.hasChassis) {
    end(GatewayDrainStep::What::Drained,
        "this node no longer has a chassis name (external_ids:system-id)");
  } else if (in.sbSynced && in.gatewayPorts.empty()) {
    end(GatewayDrainStep::What::Drained, "no chassisredirect port is bound to this chassis");
  } else if (in.now >= s.since + in.timeout.count()) {
    end(GatewayDrainStep::What::TimedOut, "");
  } else if (!s.announced && in.sbSynced) {
    s.announced = true;
    step.what = GatewayDrainStep::What::Started;
    step.elapsed = in.now - s.since;
  } else if (fresh || (s.resumed && previous.since == 0)) {
    step.what = GatewayDrainStep::What::Waiting;
    step.elapsed = in.now - s.since;
  }
  return step;
}

}  // namespace okna::ovsdb
