#pragma once
// The chassis concern on the OVSDB transport (ovsdb/participant.h), on the transport's thread:
// it reads the local Open_vSwitch row, its bridges and their ports (ObservedOvs) and the
// chassisredirect Port_Bindings bound to this chassis, keeps what the agent owns (the ownership
// record, its in-memory copy), diffs the desired state against the replica (diffChassis) and
// publishes an immutable Snapshot when it changed. The chassis reconciler (loop thread) sees it
// through OvsdbApplier (ovsdb_applier.h): ChassisTransportApplier, below.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chassis/chassis_diff.h"
#include "chassis/ovsdb_applier.h"
#include "core/shared_value.h"
#include "ovsdb/participant.h"

namespace okna::core {
class Clock;
class HealthRegistry;
}  // namespace okna::core

namespace okna::ovsdb {

class IdlThread;
struct OvsConfig;

struct SbState {
  // The SB remote in use: OvsConfig::sbRemote, else external_ids:ovn-remote; "" = unknown.
  std::string remote;
  bool connected = false;
  // Why it is not connected ("" when connected or not tried yet).
  std::string connectionError;
  // The first contents (with the chassis condition) arrived: gatewayPorts can be trusted.
  bool synced = false;
  // logical_port of the chassisredirect Port_Bindings bound to this chassis, sorted.
  std::vector<std::string> gatewayPorts;
  bool operator==(const SbState&) const = default;
};

/** What the chassis participant publishes. */
struct Snapshot {
  bool connected = false;
  // Why the local OVSDB is not connected ("" when it is), e.g. "Protocol error" (TLS).
  std::string connectionError;
  // An ovs.ssl file that cannot be read ("ovs.ssl.caCertFile /x: No such file or directory").
  std::string tlsError;
  // Shared between snapshots while unchanged (see core/shared_value.h).
  core::SharedValue<ObservedOvs> ovs;
  // external_ids:system-id, the chassis name ("" when ovn-controller was never set up).
  std::string systemId;
  SbState sb;
  // The last submitted generation whose diff came out empty (0: none yet).
  std::uint64_t convergedGeneration = 0;
  // What the agent owns as far as it knows (ownership.h): the last valid record seen in OVSDB
  // or written by its own transaction; kept when the record is deleted or garbled behind its
  // back (the in-memory copy). nullopt until known. The reconciler mirrors it to the state file.
  std::optional<OwnershipRecord> ownership;
  // How the last diff found it (recovered, lost, adopted).
  OwnershipOutcome ownershipOutcome;
  // Recoveries and adoptions so far (the loop may see only the newest snapshot, where the
  // record is already rewritten) and the last of them.
  std::uint64_t ownershipEvents = 0;
  OwnershipOutcome lastOwnershipEvent;
  // The notes of the last diff (conflicts, bridges kept for foreign ports).
  std::vector<std::string> notes;
  // The last transaction error ("" after a success).
  std::string lastError;
  // The transport's counters (the reconciler's metrics).
  IdlStats stats;
  bool operator==(const Snapshot&) const = default;
};

class ChassisParticipant final : public Participant {
 public:
  /** `publish` is called on the transport's thread. */
  explicit ChassisParticipant(OvsdbApplier::SnapshotCallback publish);

  /** The new desired state and its generation (increasing). Thread-safe, never blocks long. */
  void submit(const DesiredChassis& desired, std::uint64_t generation);

  // ovsdb::Participant
  const char* name() const override { return "chassis"; }
  Monitors monitors() const override;
  bool takeDesired() override;
  void southboundReopened() override;
  void observe(const PassContext& pass) override;
  std::vector<TableCondition> southboundConditions(const std::string& chassisName) const override;
  OvsOps ovsOps(const PassContext& pass) override;
  void ovsTxnEnded(TxnOutcome outcome) override;
  void publish(const PassContext& pass) override;

 private:
  OvsdbApplier::SnapshotCallback publish_;
  std::mutex mutex_;  // guards pending_ and pendingGeneration_
  std::shared_ptr<const DesiredChassis> pending_;
  std::uint64_t pendingGeneration_ = 0;
  // The rest lives on the transport's thread.
  std::shared_ptr<const DesiredChassis> desired_;
  std::uint64_t generation_ = 0;
  // Snapshot::ownership.
  std::optional<OwnershipRecord> known_;
  // The record the running transaction writes.
  OwnershipRecord txnOwned_;
  Snapshot snap_;
  std::shared_ptr<const Snapshot> published_;
};

/** The chassis reconciler's OvsdbApplier: its participant on a transport, which start() and
 *  stop() start and stop. */
class ChassisTransportApplier final : public OvsdbApplier {
 public:
  /** On a transport shared with other participants (the agent's), before it starts. */
  ChassisTransportApplier(IdlThread& transport, SnapshotCallback publish);
  /** On a transport of its own (tests, tools). */
  ChassisTransportApplier(const OvsConfig& config, core::HealthRegistry& health, core::Clock& clock,
                          SnapshotCallback publish);
  ~ChassisTransportApplier() override;

  // ovsdb::OvsdbApplier
  void start() override;
  void submit(const DesiredChassis& desired, std::uint64_t generation) override;
  void stop() override;

 private:
  std::unique_ptr<IdlThread> owned_;
  IdlThread& transport_;
  std::shared_ptr<ChassisParticipant> participant_;
};

}  // namespace okna::ovsdb
