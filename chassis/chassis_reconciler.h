#pragma once
// Keeps the local Open_vSwitch row (external_ids, external bridges) in line with the Node, live.
// The agent's plan (agent/plan.h) says what is wanted (planChassis); this applier adds what only
// the host can tell (the external NIC's safety check), drains, and writes. Runs on the Asio loop
// thread; owns the OVSDB writer (its participant on the transport, chassis_participant.h, behind
// OvsdbApplier) and the planned gateway failover (seed 000 § 3.2):
//
// The planned gateway failover, in the order Neutron ML2/OVN needs (gateway_drain.h): when the
// network role goes away while the agent's enable-chassis-as-gw item is there, the item and the
// AZ item are cleared at once (Neutron reschedules router gateways only once the flag is gone);
// the bridge mappings, bridges and NIC the agent owns stay while a chassisredirect Port_Binding of
// the Southbound DB is still bound to this chassis (the old chassis forwards until the new one
// claims), at most OvsConfig::drainTimeout; then they go unless the Node still asks for them.
// While the Southbound DB is unknown or not synced the hold waits (it cannot tell that the
// gateways have moved); with no system-id there is no chassis and nothing to wait for. The
// drain's start is kept in the ownership record, so a restarted agent continues the same drain.
// Reported in log lines, the okna_ovsdb_gateway_draining gauge, the
// okna_ovsdb_gateway_drain_seconds histogram and Node Events GatewayDrainStarted (once gateways
// are known to be bound here), GatewayDrained (after a Started) or GatewayDrainTimedOut.
//
// The ownership record (ownership.h) is mirrored to OvsConfig::stateFile after every change;
// when the record is deleted or garbled it is recovered from the agent's memory or that file
// (Warning Event OwnershipRecovered); when neither is left, Warning Event OwnershipLost, the
// okna_ovsdb_ownership_lost gauge and the readiness detail say so until the operator answers
// with the annotation chassis.openkeel.io/adopt-ownership (true | none).
//
// Readiness component "ovsdb": connected, the first desired state applied, and ovs-vswitchd
// answering on its unixctl socket (OvsConfig::vswitchdRunDir, vswitchd_probe.h; checked every
// OvsConfig::vswitchdCheckInterval): a dead ovs-vswitchd leaves OVSDB looking configured.
// Gauge okna_ovsdb_vswitchd_running; its loss and return are logged once each.
// Metrics: okna_ovsdb_transactions_total{result=success|unchanged|conflict|error},
// okna_ovsdb_reconnects_total{db} and okna_ovsdb_connection_losses_total{db} (db: Open_vSwitch,
// the local OVSDB, or OVN_Southbound), okna_ovsdb_connected, okna_ovsdb_gateway_ports,
// okna_ovsdb_failed_interfaces (the agent's bridges and ports ovs-vswitchd failed to create:
// also a Warning Event OvsInterfaceFailed and "not ready" with the error).

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "chassis/chassis_decision.h"
#include "chassis/chassis_desired.h"
#include "chassis/chassis_participant.h"
#include "chassis/gateway_drain.h"
#include "chassis/host_nics.h"
#include "chassis/ovsdb_applier.h"
#include "chassis/ownership_state_file.h"
#include "chassis/vswitchd_probe.h"
#include "core/applier.h"
#include "core/clock.h"
#include "ovsdb/config.h"

namespace okna::core {
class HealthRegistry;
class MetricsRegistry;
}  // namespace okna::core
namespace okna::k8s {
class EventRecorder;
}

namespace okna::ovsdb {

/** What the chassis decision (chassis_decision.h) reads of a snapshot: the live applier's
 *  and the dry run's one reading. */
ChassisObserved observedChassisOf(const Snapshot& snapshot);

/** The chassis applier's section: the plan's chassis section (planChassis) and the Node it was
 *  planned from (the external NIC's safety check reads its InternalIP and annotations). */
struct ChassisSection {
  const k8s::NodeInfo& node;
  const DesiredChassis& planned;
};

class ChassisReconciler : public core::Applier<ChassisSection> {
 public:
  /** `events` may be null (no Node Events). Nothing touches OVSDB before the first update().
   *  `clock` drives the drain deadline, the ovs-vswitchd check and a default transport (the
   *  agent's core::AsioClock; tests a ManualClock). `makeApplier`: the agent's puts the
   *  participant on its shared transport; tests pass a fake; default: a transport of its own
   *  (ChassisTransportApplier). */
  ChassisReconciler(boost::asio::io_context& io, core::Clock& clock, OvsConfig config,
                    core::MetricsRegistry& metrics, core::HealthRegistry& health,
                    k8s::EventRecorder* events, OvsdbApplierFactory makeApplier = {});
  ~ChassisReconciler() override;
  ChassisReconciler(const ChassisReconciler&) = delete;
  ChassisReconciler& operator=(const ChassisReconciler&) = delete;

  /** The plan's chassis section (planChassis) for `node`, whose InternalIP and annotations the
   *  external NIC's safety check reads. Its warnings were logged by the planner's caller: here
   *  they become Node Events and readiness detail. Starts the OVSDB writer on the first call. */
  void update(const k8s::NodeInfo& node, const DesiredChassis& planned);
  const OvsConfig& config() const { return config_; }

  // core::Applier: apply() is update(); describe() is debugJson(); health() the "ovsdb"
  // readiness component.
  void apply(const ChassisSection& section) override { update(section.node, section.planned); }
  /** Stops the IDL thread and the drain timer; OVSDB is left as it is. */
  void stop() override;
  std::optional<core::HealthRegistry::Check> health() const override;
  nlohmann::json describe() const override { return debugJson(); }
  /** The last decision is in the database as read back, and no planned failover is running. */
  bool settled() const override;

  /** Where the external NIC's safety check reads the host (default: LinuxHostNics). */
  void setHostNics(std::unique_ptr<HostNics> nics) { hostNics_ = std::move(nics); }
  /** How ovs-vswitchd is checked (default: UnixctlVswitchdProbe of OvsConfig::vswitchdRunDir
   *  when that is set and not empty; null: no check). Before the first update(). */
  void setVswitchdProbe(std::unique_ptr<VswitchdProbe> probe) { vswitchdProbe_ = std::move(probe); }

  /** The last snapshot from the IDL thread (null before the first one). */
  const std::shared_ptr<const Snapshot>& snapshot() const { return snapshot_; }
  /** The desired state of the last update() after the host's checks (before the drain). */
  const std::optional<DesiredChassis>& planned() const { return planned_; }
  /** The last decision (decideChassis): what is submitted and why (nullopt before update()). */
  const std::optional<ChassisDecision>& decision() const { return decision_; }
  /** What this applier does about the plan, for /debug/plan: {"connected", "ready",
   *  "drain": {"inProgress", "since", "deadline", "gatewayPorts", "holdingOwned"},
   *  "externalNicRefused", "failedInterfaces", "vswitchd": {"running", "detail"} (null: not
   *  checked), "decision": decisionToJson of the last decision (what --dry-run --ovsdb prints
   *  as "ovs": {"decision"}), "submittedGeneration", "convergedGeneration"}. */
  nlohmann::json debugJson() const;
  bool draining() const { return drain_.since != 0; }
  /** The generation of the last desired state sent to the IDL thread (0: none yet). */
  std::uint64_t submittedGeneration() const { return generation_; }

 private:
  void onSnapshot(std::shared_ptr<const Snapshot> snapshot);
  void reportFailedInterfaces();
  void mirrorOwnership();
  void reportOwnership();
  void updateHealth();
  void checkVswitchd();
  // Decides (decideChassis) from the plan, the host's NIC facts and the snapshot, and steps
  // the drain; submit() sends what it decided.
  void decide();
  void armDrainTimer(std::int64_t now);
  void reportDrain(const GatewayDrainStep& step, const Snapshot& s);
  std::string heldNetwork() const;
  void submit();
  void updateMetrics(const Snapshot& previous, const Snapshot& next);
  void event(const std::string& type, const std::string& reason, const std::string& message);

  boost::asio::io_context& io_;
  OvsConfig config_;
  core::MetricsRegistry& metrics_;
  core::HealthRegistry& health_;
  k8s::EventRecorder* events_;
  // Shared with the callbacks the IDL thread posts, which may run after stop().
  std::shared_ptr<bool> alive_;
  core::Clock& clock_;
  std::unique_ptr<OvsdbApplier> thread_;
  std::string nodeName_;
  // The last update()'s Node and plan section, and what the host said about the external NIC.
  std::optional<k8s::NodeInfo> node_;
  std::optional<DesiredChassis> plan_;
  NicFacts nicFacts_;
  std::optional<ChassisDecision> decision_;
  std::optional<DesiredChassis> planned_;
  std::unique_ptr<HostNics> hostNics_ = std::make_unique<LinuxHostNics>();
  std::vector<ChassisWarning> reportedWarnings_;
  // The external NIC the host check refused to plug ("" when none), and why.
  std::string refusedNic_;
  // The ownership record's copy on disk, as read at start (sent with every desired state).
  OwnershipStateFile stateFile_;
  OwnershipCopy fileCopy_;
  std::optional<OwnershipRecord> savedOwnership_;
  std::string stateFileError_;
  bool reportedLost_ = false;
  std::uint64_t reportedOwnershipEvents_ = 0;
  // failedInterfaces() of the last snapshot (reported once each).
  std::vector<std::string> failedInterfaces_;
  std::shared_ptr<const Snapshot> snapshot_;
  // The newest snapshot published by the IDL thread and not yet taken by the loop.
  std::mutex latestMutex_;
  std::shared_ptr<const Snapshot> latest_;
  std::optional<DesiredChassis> submitted_;
  std::uint64_t generation_ = 0;
  bool ready_ = false;
  // The planned failover (gateway_drain.h) and its deadline.
  std::unique_ptr<core::Timer> drainTimer_;
  GatewayDrainState drain_;
  std::vector<std::string> reportedGatewayPorts_;
  // ovs-vswitchd's liveness: the probe, its timer and its last answer (nullopt: not checked).
  std::unique_ptr<VswitchdProbe> vswitchdProbe_;
  std::unique_ptr<core::Timer> vswitchdTimer_;
  std::optional<VswitchdStatus> vswitchd_;
};

}  // namespace okna::ovsdb
