#pragma once
// The metadata service on the OVSDB transport (ovsdb/participant.h), on the transport's thread:
//   - the Southbound view (SbMetadataView): this chassis's Port_Bindings and every port and
//     Datapath_Binding of the datapaths hosting a VIF bound here, monitored with conditions that
//     follow what the replica says this chassis hosts (ovn-controller's update_sb_monitors);
//   - the integration bridge: its ports, which of them ovs-vswitchd created, the agent's marked
//     metadata ports' interface ids and the VM interfaces' iface-ids;
//   - its ops: the metadata ports (diffMetadataPorts) in the Open_vSwitch transaction, Neutron's
//     liveness keys on Chassis_Private (neutron_liveness.h) in the Southbound one.
// It publishes an immutable SouthboundView to its owner (agent/MetadataService, which hops to
// its loop) when it changed; the owner submits the wanted ports.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/shared_value.h"
#include "metadata/metadata_ports.h"
#include "metadata/neutron_liveness.h"
#include "ovsdb/participant.h"

namespace okna::metadata {

/** What the metadata participant publishes. */
struct SouthboundView {
  // The Southbound rows (while DesiredMetadataOvs::enabled) and whether they are complete.
  ovsdb::SbMetadataView sb;
  // external_ids:system-id ("" when ovn-controller was never set up).
  std::string systemId;
  // Connected to the local Open_vSwitch database.
  bool connected = false;
  // The integration bridge: external_ids:ovn-bridge, else br-int.
  std::string bridge = "br-int";
  // Its ports in the database, and those of them ovs-vswitchd has created (shared while
  // unchanged: ovs-vswitchd's and ovn-controller's own writes change neither).
  core::SharedValue<std::set<std::string>> bridgePorts;
  core::SharedValue<std::set<std::string>> createdPorts;
  // The iface-ids of the VM interfaces on the wanted bridge (vmIfaceIdsOf): what the planner
  // judges a Southbound that lost this chassis's bindings by.
  core::SharedValue<std::set<std::string>> vmIfaceIds;
  // The last submitted generation whose port diff came out empty (0: none yet).
  std::uint64_t convergedGeneration = 0;
  bool operator==(const SouthboundView&) const = default;
};

class SouthboundParticipant final : public ovsdb::Participant {
 public:
  using Publish = std::function<void(std::shared_ptr<const SouthboundView>)>;

  /** `livenessDelayMax`: ovs.livenessDelayMaxSeconds (the random delay of an nb_cfg echo). */
  explicit SouthboundParticipant(std::chrono::milliseconds livenessDelayMax);

  /** Before the transport starts: where the views go (called on the transport's thread). */
  void setPublish(Publish publish) { publish_ = std::move(publish); }
  /** The metadata ports and whether the Southbound metadata rows are wanted (shared, not copied:
   *  1,000 ports at 1,000 networks). Thread-safe, never blocks long. */
  void submit(std::shared_ptr<const ovsdb::DesiredMetadataOvs> desired, std::uint64_t generation);

  // ovsdb::Participant
  const char* name() const override { return "metadata"; }
  ovsdb::Monitors monitors() const override;
  bool takeDesired() override;
  void southboundReopened() override;
  void observe(const ovsdb::PassContext& pass) override;
  std::vector<ovsdb::TableCondition> southboundConditions(
      const std::string& chassisName) const override;
  void settle(const ovsdb::PassContext& pass) override;
  ovsdb::SbOps southboundOps(const ovsdb::PassContext& pass) override;
  void southboundTxnEnded(ovsdb::TxnOutcome outcome) override;
  ovsdb::OvsOps ovsOps(const ovsdb::PassContext& pass) override;
  void publish(const ovsdb::PassContext& pass) override;
  std::optional<ovsdb::PassContext::TimePoint> wakeAt() const override;

 private:
  bool enabled() const { return desired_ && desired_->enabled; }
  void observeOvs(const ovsdb::PassContext& pass);

  const std::chrono::milliseconds livenessDelayMax_;
  Publish publish_;
  std::mutex mutex_;  // guards pending_ and pendingGeneration_
  std::shared_ptr<const ovsdb::DesiredMetadataOvs> pending_;
  std::uint64_t pendingGeneration_ = 0;
  // The rest lives on the transport's thread.
  std::shared_ptr<const ovsdb::DesiredMetadataOvs> desired_;
  std::uint64_t generation_ = 0;
  SouthboundView view_;
  std::shared_ptr<const SouthboundView> published_;
  // The wanted bridge's ports (only it, in the shape diffMetadataPorts reads) and the marked
  // ports' interface ids.
  ovsdb::ObservedOvs ports_;
  ovsdb::ObservedBridgeIfaceIds ifaceIds_;
  // external_ids:ovn-bridge ("" when absent).
  std::string ovnBridge_;
  // The datapaths hosting a VIF bound here (the conditions' datapath clauses), and this
  // chassis's Chassis row ("" until it is in the replica).
  std::vector<std::string> hostedDatapaths_;
  std::string chassisUuid_;
  // Neutron's liveness keys: whether this chassis's Chassis_Private row was there at the last
  // look, the first write's earliest time after it appeared, the echo state, and the state to
  // return to when the write could not be sent.
  bool chassisPrivateSeen_ = false;
  ovsdb::PassContext::TimePoint settleUntil_{};
  ovsdb::NeutronLivenessState liveness_;
  ovsdb::NeutronLivenessState livenessIfNotSent_;
  std::mt19937_64 random_{std::random_device{}()};
};

}  // namespace okna::metadata
