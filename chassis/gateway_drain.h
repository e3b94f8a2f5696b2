#pragma once
// The planned gateway failover (seed 000 § 3.2), in the order Neutron ML2/OVN needs. Pure: the
// reconciler (chassis_reconciler.h) feeds it the ownership record, the Southbound view and the
// wall clock, and applies the step it returns.
//
// Neutron moves router gateways off a chassis only once enable-chassis-as-gw is gone from it (its
// SB Chassis update event runs schedule_unhosted_gateways); OVN itself ignores the flag. So:
//   1. the flag and the AZ item go at once (the planner simply no longer wants them);
//   2. the bridge mappings, bridges and external NIC the agent owns stay (DesiredChassis::
//      holdOwned) while a chassisredirect Port_Binding is still bound to this chassis: the old
//      chassis keeps forwarding until the new one claims. At most `timeout`;
//   3. then they go, unless the Node still asks for them (with distributed floating IPs compute
//      nodes keep their mappings).
// The drain's start (unix seconds) is kept in the ownership record (OwnershipRecord::drainSince),
// so a new agent process continues the same drain rather than starting a full timeout again.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace okna::ovsdb {

/** What the reconciler remembers between steps (in this process). */
struct GatewayDrainState {
  // The running drain's start (unix seconds); 0: none.
  std::int64_t since = 0;
  // The drain for this loss of the role is over (until the role returns): the record may still
  // show the flag or the drain while the transaction that removes them is in flight.
  bool done = false;
  // GatewayDrainStarted was recorded for the running drain (only once gateways are known to be
  // bound here: no Started/Drained pair when nothing was).
  bool announced = false;
  // The running drain was found in the record (started by an earlier agent process).
  bool resumed = false;
  bool operator==(const GatewayDrainState&) const = default;
};

struct GatewayDrainInputs {
  // The node has the network role (the planner wants the gateway items).
  bool gatewayWanted = false;
  // The ownership record holds enable-chassis-as-gw: clearing it is the agent's job.
  bool ownsGatewayItem = false;
  // The record's drain start (0: none).
  std::int64_t recordedSince = 0;
  // external_ids:system-id is set (without a chassis name nothing can be bound here).
  bool hasChassis = false;
  // The Southbound view is synced: gatewayPorts can be trusted.
  bool sbSynced = false;
  // chassisredirect Port_Bindings bound to this chassis.
  std::vector<std::string> gatewayPorts;
  // Unix seconds.
  std::int64_t now = 0;
  std::chrono::seconds timeout{120};
};

struct GatewayDrainStep {
  enum class What {
    None,
    // The role went and nothing needs to wait (reason in `why`): the network goes now.
    NotNeeded,
    // A drain began (or was resumed); gateways are not known to be bound yet (SB not synced).
    Waiting,
    // Gateways are known to be bound here: GatewayDrainStarted.
    Started,
    // They left (GatewayDrained if it was announced), or the chassis name went.
    Drained,
    // The timeout passed first (GatewayDrainTimedOut).
    TimedOut,
    // The role came back during the drain.
    Cancelled,
  };
  GatewayDrainState state;
  What what = What::None;
  // Why (NotNeeded, Drained).
  std::string why;
  // Whether the drain that ended here had been announced (Drained, TimedOut, Cancelled).
  bool wasAnnounced = false;
  // The running drain's elapsed seconds (Drained, TimedOut, Cancelled, Started when resumed).
  std::int64_t elapsed = 0;

  /** Keep the agent's mappings, bridges and NIC: a drain is running. */
  bool holdOwned() const { return state.since != 0; }
  /** When to step again if nothing else changes (unix seconds; 0: no deadline). */
  std::int64_t deadline(std::chrono::seconds timeout) const {
    return state.since == 0 ? 0 : state.since + timeout.count();
  }
};

GatewayDrainStep stepGatewayDrain(const GatewayDrainState& previous, const GatewayDrainInputs& in);

}  // namespace okna::ovsdb
