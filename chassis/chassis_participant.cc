#include "chassis/chassis_participant.h"

#include <algorithm>
#include <cstring>

#include "chassis/observed_read.h"
#include "core/logging.h"
#include "ovsdb/idl_thread.h"
#include "ovsdb/ovs_chassis_glue.h"

namespace okna::ovsdb {

namespace {

std::vector<std::string> readGatewayPorts(okna_sb_idl* sb) {
  std::vector<std::string> ports;
  // With the chassis's conditions (southboundConditions), a binding has a chassis only when it
  // is this chassis.
  okna_sb_idl_foreach_port_binding(
      sb,
      [](void* ctx, const char* lport, const char* type, const char* chassis) {
        if (std::strcmp(type, "chassisredirect") == 0 && *chassis != '\0')
          static_cast<std::vector<std::string>*>(ctx)->push_back(lport);
      },
      &ports);
  std::sort(ports.begin(), ports.end());
  return ports;
}

}  // namespace

ChassisParticipant::ChassisParticipant(OvsdbApplier::SnapshotCallback publish)
    : publish_(std::move(publish)) {}

void ChassisParticipant::submit(const DesiredChassis& desired, std::uint64_t generation) {
  {
    std::lock_guard lock(mutex_);
    pending_ = std::make_shared<const DesiredChassis>(desired);
    pendingGeneration_ = generation;
  }
  wake();
}

Monitors ChassisParticipant::monitors() const {
  Monitors m;
  m.openVswitch = {{"Open_vSwitch", {"external_ids", "bridges"}},
                   {"Bridge", {"name", "datapath_type", "ports"}},
                   {"Port", {"name", "interfaces"}},
                   // What ovs-vswitchd made of each interface (failedInterfaces).
                   {"Interface", {"name", "error", "ofport"}}};
  m.southbound = {{"Chassis", {"name"}}, {"Port_Binding", {"logical_port", "type", "chassis"}}};
  return m;
}

bool ChassisParticipant::takeDesired() {
  std::lock_guard lock(mutex_);
  if (pendingGeneration_ == generation_) return false;
  desired_ = pending_;
  generation_ = pendingGeneration_;
  return true;
}

void ChassisParticipant::southboundReopened() {
  snap_.sb = SbState{};
}

void ChassisParticipant::observe(const PassContext& pass) {
  if (pass.ovsChanged) {
    // Compared with what was read before, so that unchanged data stays shared with the
    // published snapshots.
    snap_.ovs.set(readObserved(pass.ovs));
    if (const auto it = snap_.ovs->externalIds.find(kOwnershipKey);
        it != snap_.ovs->externalIds.end())
      if (auto record = parseOwnership(it->second)) known_ = std::move(*record);
  }
  if (pass.sb && pass.sbChanged) snap_.sb.gatewayPorts = readGatewayPorts(pass.sb);
}

std::vector<TableCondition> ChassisParticipant::southboundConditions(
    const std::string& chassisName) const {
  // This chassis' row only, and the gateway ports: a binding's chassis (a reference to a row
  // outside the replica reads as empty) is then non-empty exactly when it is this chassis.
  return {{"Chassis", false, {{"name", Clause::Function::Equal, chassisName}}},
          {"Port_Binding", false, {{"type", Clause::Function::Equal, "chassisredirect"}}}};
}

OvsOps ChassisParticipant::ovsOps(const PassContext&) {
  if (!desired_) return {};
  // Once the agent knows the record, its memory is the copy: a deleted or garbled record is
  // restored from what this process last saw, the state file being only the first copy.
  ChassisOps ops =
      known_ ? diffChassis(*desired_, *snap_.ovs,
                           {OwnershipCopy::State::Known, *known_, "the agent's memory", ""})
             : diffChassis(*desired_, *snap_.ovs);
  using Kind = OwnershipOutcome::Kind;
  const Kind kind = ops.ownership.kind;
  if (kind != snap_.ownershipOutcome.kind &&
      (kind == Kind::Recovered || kind == Kind::Adopted || kind == Kind::Disowned)) {
    ++snap_.ownershipEvents;
    snap_.lastOwnershipEvent = ops.ownership;
  }
  snap_.ownershipOutcome = ops.ownership;
  if (ops.notes != snap_.notes) {
    for (const auto& n : ops.notes) core::logger("ovsdb")->warn("{}", n);
    snap_.notes = ops.notes;
  }
  if (ops.empty()) {
    snap_.convergedGeneration = generation_;
    known_ = ops.owned;
    return {};
  }
  txnOwned_ = ops.owned;
  // Its own change is read back at once: the loop decides from the snapshot (a gateway drain
  // from the ownership record just written).
  return {std::move(ops.ops), ops.verifyExternalIds, ops.verifyBridges, true};
}

void ChassisParticipant::ovsTxnEnded(TxnOutcome outcome) {
  if (outcome == TxnOutcome::Success) known_ = txnOwned_;
}

void ChassisParticipant::publish(const PassContext& pass) {
  const TransportStatus& t = *pass.status;
  snap_.connected = t.connected;
  snap_.connectionError = t.connectionError;
  snap_.tlsError = t.tlsError;
  snap_.lastError = t.lastError;
  snap_.stats = t.stats;
  snap_.systemId = t.chassisName;
  snap_.sb.remote = t.sbRemote;
  snap_.sb.connected = t.sbConnected;
  snap_.sb.connectionError = t.sbConnectionError;
  snap_.sb.synced = t.sbSynced;
  snap_.ownership = known_;
  if (published_ && *published_ == snap_) return;
  published_ = std::make_shared<const Snapshot>(snap_);
  publish_(published_);
}

ChassisTransportApplier::ChassisTransportApplier(IdlThread& transport, SnapshotCallback publish)
    : transport_(transport),
      participant_(std::make_shared<ChassisParticipant>(std::move(publish))) {
  transport_.add(participant_);
}

ChassisTransportApplier::ChassisTransportApplier(const OvsConfig& config,
                                                 core::HealthRegistry& health, core::Clock& clock,
                                                 SnapshotCallback publish)
    : owned_(std::make_unique<IdlThread>(config, health, clock)),
      transport_(*owned_),
      participant_(std::make_shared<ChassisParticipant>(std::move(publish))) {
  transport_.add(participant_);
}

ChassisTransportApplier::~ChassisTransportApplier() {
  stop();
}

void ChassisTransportApplier::start() {
  transport_.start();
}

void ChassisTransportApplier::submit(const DesiredChassis& desired, std::uint64_t generation) {
  participant_->submit(desired, generation);
}

void ChassisTransportApplier::stop() {
  transport_.stop();
}

}  // namespace okna::ovsdb
