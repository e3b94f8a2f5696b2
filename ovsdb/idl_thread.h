#pragma once
// The thread that owns libopenvswitch's IDLs: the local Open_vSwitch database and, once its
// remote and this chassis' name are known, the OVN Southbound one. It runs OVS's own poll loop
// (ovsdb_idl_run / poll_block) and never touches the Asio loop's state:
//   - the loop thread hands it desired states through submit() (a mailbox plus an eventfd that
//     wakes poll_block);
//   - it hands back immutable Snapshots through a callback called ON THE IDL THREAD (the caller
//     posts them to its loop).
// On every pass where something changed (desired state, replica, connection, a transaction
// finished) it diffs the desired state against the replica and, if needed, starts one
// transaction: a reconnect or a server restart re-asserts the state, and an operator's edit
// (a deleted port) is repaired. TRY_AGAIN (a concurrent writer) retries after the replica
// catches up; a hard error retries with backoff (1 s doubling to 30 s). It beats the
// "ovsdb-idl" heartbeat at least every second, so /healthz notices a wedged thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chassis/chassis_diff.h"
#include "core/shared_value.h"
#include "metadata/metadata_ports.h"
#include "ovsdb/config.h"
#include "ovsdb/ovsdb_applier.h"

namespace okna::core {
class HealthRegistry;
}

namespace okna::ovsdb {

/** Counters since the thread started; the loop thread turns deltas into metrics. */
struct IdlStats {
  std::uint64_t success = 0;
  std::uint64_t unchanged = 0;
  // TRY_AGAIN: a verified column changed under the transaction (or the connection dropped).
  std::uint64_t conflicts = 0;
  std::uint64_t errors = 0;
  // Connections to the local Open_vSwitch DB re-established after having been connected, and
  // connections lost (each once, however many reconnection attempts fail in between).
  std::uint64_t reconnects = 0;
  std::uint64_t losses = 0;
  // The same for the OVN Southbound DB (a new remote or chassis name is neither).
  std::uint64_t sbReconnects = 0;
  std::uint64_t sbLosses = 0;
  bool operator==(const IdlStats&) const = default;
};

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
  // The metadata service's view (rows only while DesiredMetadataOvs::enabled).
  SbMetadataView metadata;
  bool operator==(const SbState&) const = default;
};

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
  // The integration bridge (DesiredMetadataOvs::bridge) and its ports' Interface external_ids.
  core::SharedValue<ObservedBridgeIfaceIds> integrationIfaceIds;
  // The iface-ids of the VM interfaces on that bridge (vmIfaceIdsOf): what the metadata
  // planner judges a Southbound that lost this chassis's bindings by.
  core::SharedValue<std::set<std::string>> integrationVmIfaceIds;
  // The last submitted metadata generation whose diff came out empty (0: none yet).
  std::uint64_t metadataConvergedGeneration = 0;
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
  IdlStats stats;
  bool operator==(const Snapshot&) const = default;
};

class IdlThread : public OvsdbApplier {
 public:
  IdlThread(OvsConfig config, core::HealthRegistry& health, SnapshotCallback onSnapshot);
  ~IdlThread() override;
  IdlThread(const IdlThread&) = delete;
  IdlThread& operator=(const IdlThread&) = delete;

  /** Starts the thread (the first OVS call happens on it). */
  void start() override;
  /** The new desired state and its generation (increasing). Thread-safe, never blocks long. */
  void submit(const DesiredChassis& desired, std::uint64_t generation) override;
  /** The metadata ports and whether the Southbound metadata rows are wanted. Thread-safe. */
  void submitMetadata(std::shared_ptr<const DesiredMetadataOvs> desired,
                      std::uint64_t generation) override;
  /** Stops and joins the thread; OVSDB is left as it is. */
  void stop() override;

 private:
  class Loop;
  void wake();

  OvsConfig config_;
  core::HealthRegistry& health_;
  SnapshotCallback onSnapshot_;
  int wakeFd_ = -1;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;  // guards pending_ and pendingGeneration_
  std::shared_ptr<const DesiredChassis> pending_;
  std::uint64_t pendingGeneration_ = 0;
  std::shared_ptr<const DesiredMetadataOvs> pendingMetadata_;
  std::uint64_t pendingMetadataGeneration_ = 0;
  std::thread thread_;
};

}  // namespace okna::ovsdb
