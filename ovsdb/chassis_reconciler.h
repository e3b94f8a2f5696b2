#pragma once
// Keeps the local Open_vSwitch row (external_ids, external bridges) in line with the Node, live.
// Runs on the Asio loop thread; owns the IDL thread (idl_thread.h) and the planned gateway
// failover (seed 000 § 3.2):
//
// When the network role goes away while this chassis still has the agent's enable-chassis-as-gw
// item, the item (and the gateway's availability-zones) is kept until no chassisredirect
// Port_Binding of the Southbound DB is bound to this chassis any more (the control plane moves
// them once it sees the label change), or until OvsConfig::drainTimeout; then it is cleared.
// While the Southbound DB is unknown or not synced the drain waits (it cannot tell that the
// gateways have moved); with no system-id there is no chassis and nothing to drain. The wait is
// reported in a log line, the okna_ovsdb_gateway_draining gauge, the
// okna_ovsdb_gateway_drain_seconds histogram, and Node Events (GatewayDrainStarted,
// GatewayDrained or GatewayDrainTimedOut). The decision is made from the database (the ownership
// record), so an agent restarted mid-drain drains again rather than dropping the gateway.
//
// Readiness component "ovsdb": connected and the first desired state applied.
// Metrics: okna_ovsdb_transactions_total{result=success|unchanged|conflict|error},
// okna_ovsdb_reconnects_total, okna_ovsdb_connected, okna_ovsdb_gateway_ports.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ovsdb/chassis_desired.h"
#include "ovsdb/config.h"
#include "ovsdb/idl_thread.h"

namespace okna::core {
class HealthRegistry;
class MetricsRegistry;
}  // namespace okna::core
namespace okna::k8s {
class EventRecorder;
}

namespace okna::ovsdb {

class ChassisReconciler {
 public:
  /** `events` may be null (no Node Events). Nothing touches OVSDB before the first update(). */
  ChassisReconciler(boost::asio::io_context& io, OvsConfig config, core::MetricsRegistry& metrics,
                    core::HealthRegistry& health, k8s::EventRecorder* events);
  ~ChassisReconciler();
  ChassisReconciler(const ChassisReconciler&) = delete;
  ChassisReconciler& operator=(const ChassisReconciler&) = delete;

  /** A new version of the Node or of its roles. Starts the IDL thread on the first call. */
  void update(const k8s::NodeInfo& node, const std::set<std::string>& roles);
  /** Stops the IDL thread and the drain timer; OVSDB is left as it is. */
  void stop();

  /** Called on the loop with every new snapshot, after this reconciler handled it. */
  using SnapshotListener = std::function<void(const Snapshot&)>;
  void setSnapshotListener(SnapshotListener listener) { listener_ = std::move(listener); }
  /** The metadata service's ports and Southbound interest (sent to the IDL thread if changed);
   *  returns the generation that Snapshot::metadataConvergedGeneration reaches once applied. */
  std::uint64_t submitMetadata(const DesiredMetadataOvs& desired);

  /** The last snapshot from the IDL thread (null before the first one). */
  const std::shared_ptr<const Snapshot>& snapshot() const { return snapshot_; }
  /** The desired state planned from the last update() (before the drain adjusts it). */
  const std::optional<DesiredChassis>& planned() const { return planned_; }
  bool draining() const { return drainStarted_.has_value(); }

 private:
  void onSnapshot(std::shared_ptr<const Snapshot> snapshot);
  void evaluateDrain();
  void startDrain();
  void finishDrain(const std::string& how, bool timedOut);
  void cancelDrain();
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
  std::unique_ptr<IdlThread> thread_;
  std::string nodeName_;
  std::optional<DesiredChassis> planned_;
  std::vector<ChassisWarning> reportedWarnings_;
  std::shared_ptr<const Snapshot> snapshot_;
  // The newest snapshot published by the IDL thread and not yet taken by the loop.
  std::mutex latestMutex_;
  std::shared_ptr<const Snapshot> latest_;
  std::optional<DesiredChassis> submitted_;
  std::uint64_t generation_ = 0;
  bool ready_ = false;
  // The planned failover: when it started, and whether it ended for this loss of the role.
  boost::asio::steady_timer drainTimer_;
  std::optional<std::chrono::steady_clock::time_point> drainStarted_;
  bool drainDone_ = false;
  std::vector<std::string> reportedGatewayPorts_;
  SnapshotListener listener_;
  std::optional<DesiredMetadataOvs> submittedMetadata_;
  std::uint64_t metadataGeneration_ = 0;
};

}  // namespace okna::ovsdb
