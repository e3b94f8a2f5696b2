#pragma once
// What the agent submits to OVSDB for the chassis, decided from the plan's chassis section and
// what was observed. Pure: no I/O, no clock (the time is an input). The live applier
// (ChassisReconciler) and `--dry-run --ovsdb` (agent/dry_run.cc) both call decideChassis, so
// what the dry run prints is what the agent does on the same inputs
// (tests/integration/chassis/dry_run_parity_test.cc).
//
// Two decisions sit between the plan (planChassis) and the diff (chassis_diff.h):
//   1. the external NIC's safety check (guardExternalNic): what the host says about the NIC the
//      Node names (its addresses, the default route) may drop it from the plan;
//   2. the planned gateway failover's step (stepGatewayDrain, gateway_drain.h): from the
//      ownership record, the Southbound's chassisredirect bindings and the time, whether the
//      network the agent owns is held (DesiredChassis::holdOwned) while router gateways move.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "chassis/chassis_desired.h"
#include "chassis/gateway_drain.h"
#include "chassis/ownership.h"
#include "k8s/objects.h"

namespace okna::ovsdb {

/** What the chassis decision reads of the local OVSDB and the Southbound. */
struct ChassisObserved {
  // The Open_vSwitch row exists (nothing is submitted before: a drain depends on the record).
  bool hasRoot = false;
  // external_ids:system-id ("" = no chassis).
  std::string systemId;
  // What the agent owns: the record in OVSDB, or the IDL thread's memory of it (nullopt: none).
  std::optional<OwnershipRecord> ownership;
  // The Southbound chassis view is synced: gatewayPorts can be trusted.
  bool sbSynced = false;
  // chassisredirect Port_Bindings bound to this chassis.
  std::vector<std::string> gatewayPorts;
  bool operator==(const ChassisObserved&) const = default;
};

/** Everything but the plan and the Node. */
struct ChassisDecisionInputs {
  // What the host says about the NIC of the label kExternalNicKey (externalNicOf); ignored
  // without the label.
  NicFacts externalNic;
  // nullopt: no replica yet (no drain step, nothing to submit).
  std::optional<ChassisObserved> observed;
  // The drain as this process knows it ({} in a new process and in the dry run: the record's
  // drainSince resumes a running one).
  GatewayDrainState drain;
  // A gateway flag submitted and not yet read back: it may be in OVSDB already, so it counts as
  // the agent's until the record says otherwise.
  bool gatewayFlagInFlight = false;
  // The ownership record's copy (the state file), sent with the desired state.
  OwnershipCopy ownershipCopy;
  // Unix seconds.
  std::int64_t now = 0;
  std::chrono::seconds drainTimeout{120};
};

struct ChassisDecision {
  // The plan after the host's check (before the drain): what the Node asks for and the host
  // allows.
  DesiredChassis checked;
  // What is submitted to OVSDB: `checked` with the drain's hold and the record's copy.
  DesiredChassis effective;
  // The UnsafeExternalNic warning's message when the host check refused the NIC ("" otherwise).
  std::string refusedNic;
  // The planner's warnings are checked.warnings[0, planWarnings); the rest are the host check's.
  std::size_t planWarnings = 0;
  // The drain's step (What::None and the state unchanged without an observed replica).
  GatewayDrainStep drain;
  // Whether there is anything to submit (a replica with the Open_vSwitch row).
  bool submit = false;
  // Why `effective` differs from the plan, one sentence each (empty: it does not).
  std::vector<std::string> reasons;
};

/** The value of the label kExternalNicKey ("" without it): the NIC whose facts the host is asked
 *  for. */
std::string externalNicOf(const k8s::NodeInfo& node);

ChassisDecision decideChassis(const DesiredChassis& planned, const k8s::NodeInfo& node,
                              const ChassisDecisionInputs& in);

/** {"submit", "refusedNic", "drain": {"step", "why", "since", "holdOwned"}, "reasons",
 *  "effective": toDryRunJson(effective)} for --dry-run and /debug/plan: equal JSON, equal
 *  decision. */
nlohmann::json decisionToJson(const ChassisDecision& decision);

/** ISO 8601 UTC of unix seconds ("2026-12-03T10:00:00Z"), for --dry-run and /debug/plan. */
std::string isoTime(std::int64_t unix);

/** "None", "NotNeeded", "Waiting", "Started", "Drained", "TimedOut", "Cancelled". */
const char* drainStepName(GatewayDrainStep::What what);

}  // namespace okna::ovsdb
