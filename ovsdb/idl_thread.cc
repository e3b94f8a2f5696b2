#include "ovsdb/idl_thread.h"

#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>

#include "core/health.h"
#include "core/logging.h"
#include "metadata/neutron_liveness.h"
#include "metadata/sb_values.h"
#include "ovsdb/observed_read.h"
#include "ovsdb/ovs_chassis_glue.h"
#include "ovsdb/ovs_idl_glue.h"
#include "ovsdb/ovs_log.h"
#include "ovsdb/ovs_metadata_glue.h"
#include "ovsdb/string_map.h"

namespace okna::ovsdb {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kHeartbeat = "ovsdb-idl";
constexpr auto kMaxSilence = std::chrono::seconds(10);
// poll_block wakes at least this often, to beat the heartbeat.
constexpr long long kTickMs = 1000;
// After TRY_AGAIN with no replica change yet, retry anyway after this long.
constexpr auto kTryAgainFallback = std::chrono::milliseconds(500);
// During a burst of OVS database changes the replica is re-read at most this often; the first
// change after a quiet period is read at once. A read is O(ports) (with 1,000 metadata
// namespaces and their VMs, 2,000 ports); ovs-vswitchd and ovn-controller write several times
// per new port, so a cold start re-read it thousands of times (most of the IDL thread's CPU).
constexpr auto kBurstReadInterval = std::chrono::milliseconds(50);
constexpr auto kErrorBackoffMin = std::chrono::seconds(1);
// Between this chassis's Chassis_Private row appearing and the first liveness write.
constexpr auto kLivenessSettle = std::chrono::seconds(3);
constexpr auto kErrorBackoffMax = std::chrono::seconds(30);

okna_ovs_op_kind toGlue(OvsOp::Kind kind) {
  switch (kind) {
    case OvsOp::Kind::SetExternalId:
      return OKNA_OVS_SET_EXTERNAL_ID;
    case OvsOp::Kind::DeleteExternalId:
      return OKNA_OVS_DEL_EXTERNAL_ID;
    case OvsOp::Kind::AddBridge:
      return OKNA_OVS_ADD_BRIDGE;
    case OvsOp::Kind::AddPort:
      return OKNA_OVS_ADD_PORT;
    case OvsOp::Kind::DeletePort:
      return OKNA_OVS_DEL_PORT;
    case OvsOp::Kind::DeleteBridge:
      return OKNA_OVS_DEL_BRIDGE;
    case OvsOp::Kind::AddIfacePort:
      return OKNA_OVS_ADD_IFACE_PORT;
    case OvsOp::Kind::SetIfaceExternalIds:
      return OKNA_OVS_SET_IFACE_EXTERNAL_ID;
    case OvsOp::Kind::SetBridgeDatapathType:
      return OKNA_OVS_SET_BRIDGE_DATAPATH_TYPE;
  }
  return OKNA_OVS_SET_EXTERNAL_ID;
}

std::vector<std::string> readGatewayPorts(okna_sb_idl* sb) {
  std::vector<std::string> ports;
  // With the conditions of okna_sb_idl_open_gateways, a binding has a chassis only when it is
  // this chassis.
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

// The marked ports' ids, and the VM interfaces' iface-ids into `vmIfaceIds`.
ObservedBridgeIfaceIds readIfaceIds(okna_ovs_idl* idl, const std::string& bridge,
                                    std::set<std::string>& vmIfaceIds) {
  ObservedBridgeIfaceIds ids;
  okna_ovs_idl_foreach_iface_external_id(
      idl, bridge.c_str(),
      [](void* ctx, const char* port, const char* k, const char* v) {
        // Only the keys the metadata diff and vmIfaceIdsOf read: ovn-controller adds half a
        // dozen per port.
        if (std::strcmp(k, "iface-id") == 0 || std::strcmp(k, kMetadataPortMarkKey) == 0 ||
            std::strcmp(k, "attached-mac") == 0)
          (*static_cast<ObservedBridgeIfaceIds*>(ctx))[port][k] = v;
      },
      &ids);
  vmIfaceIds = vmIfaceIdsOf(ids);
  std::erase_if(ids, [](const auto& port) { return !marksTheAgentsPort(port.second); });
  return ids;
}

// The rows of the chassis view the metadata service uses (not synced-ness: the caller's). The
// rows stay shared with the published snapshots unless they changed.
void readMetadataView(okna_sb_idl* sb, SbMetadataView& view) {
  SbRows rows;
  okna_sb_idl_foreach_port(
      sb,
      [](void* ctx, const okna_sb_port* p) {
        auto& port = static_cast<std::vector<SbPort>*>(ctx)->emplace_back(
            SbPort{p->uuid, p->logical_port, p->type, p->datapath, p->on_chassis != 0,
                   p->on_additional != 0, p->mac0, p->cidrs, p->device_id, p->project_id,
                   p->device_owner, ""});
        // Tenant values, checked where they enter the agent (metadata/sb_values.h).
        port.problem = sbPortProblem(port);
      },
      &rows.ports);
  std::sort(rows.ports.begin(), rows.ports.end(),
            [](const SbPort& a, const SbPort& b) { return a.uuid < b.uuid; });
  okna_sb_idl_foreach_datapath(
      sb,
      [](void* ctx, const char* uuid, const char* name) {
        (*static_cast<std::map<std::string, std::string>*>(ctx))[uuid] = name;
      },
      &rows.datapathNames);
  if (view.rows.set(std::move(rows))) ++view.version;
  view.nbCfg = okna_sb_idl_nb_cfg(sb);
  std::map<std::string, std::string> ids;
  view.hasChassisPrivate = okna_sb_idl_foreach_chassis_private_id(
                               sb,
                               [](void* ctx, const char* k, const char* v) {
                                 (*static_cast<std::map<std::string, std::string>*>(ctx))[k] = v;
                               },
                               &ids) != 0;
  view.chassisPrivateIds = std::move(ids);
}

// The datapaths that host a VIF (type "" or "external") bound to this chassis or migrating to
// it: Neutron's OVN_VIF_PORT_TYPES.
std::vector<std::string> hostedDatapaths(const std::vector<SbPort>& ports) {
  std::set<std::string> dps;
  for (const auto& p : ports)
    if ((p.type.empty() || p.type == "external") && (p.onChassis || p.onAdditional) &&
        !p.datapath.empty())
      dps.insert(p.datapath);
  return {dps.begin(), dps.end()};
}

}  // namespace

// Everything that lives on the IDL thread.
class IdlThread::Loop {
 public:
  explicit Loop(IdlThread& owner) : owner_(owner), log_(core::logger("ovsdb")) {}

  void run() {
    applySsl();
    ovs_ = okna_ovs_idl_open_chassis(owner_.config_.remote.c_str());
    while (!owner_.stopping_.load()) {
      owner_.health_.beat(kHeartbeat);
      drainWakeFd();
      takePending();
      pass();
      waitForWork();
    }
    if (txn_) okna_ovs_txn_destroy(txn_);
    if (sbTxn_) okna_sb_txn_destroy(sbTxn_);
    okna_sb_idl_close(sb_);
    okna_ovs_idl_close(ovs_);
  }

 private:
  void drainWakeFd() {
    std::uint64_t n = 0;
    while (::read(owner_.wakeFd_, &n, sizeof n) > 0) {
    }
  }

  void takePending() {
    std::lock_guard lock(owner_.mutex_);
    if (owner_.pendingGeneration_ != generation_) {
      desired_ = owner_.pending_;
      generation_ = owner_.pendingGeneration_;
      // A new desired state deserves an attempt now, whatever the last error was, and a diff
      // from a fresh read (the burst interval must not delay what a caller just asked for;
      // callers hand on at most every 25 ms during a burst).
      retryAt_ = Clock::time_point{};
      forceRead_ = true;
    }
    if (owner_.pendingMetadataGeneration_ != metadataGeneration_) {
      // New wanted ports are diffed against a fresh read at once (also when the integration
      // bridge, whose interface ids are read, changed): few reads, since the loop hands them on
      // in a window that grows to 500 ms during a burst.
      forceRead_ = true;
      metadata_ = owner_.pendingMetadata_;
      metadataGeneration_ = owner_.pendingMetadataGeneration_;
      retryAt_ = Clock::time_point{};
    }
  }

  // libopenvswitch's stream-ssl is process-wide (both IDLs share it) and re-reads a file whose
  // mtime changed: called on every pass, a rotated certificate is picked up within a second.
  void applySsl() {
    const OvsSslConfig& ssl = owner_.config_.ssl;
    if (!ssl.configured()) return;
    std::string problem;
    for (const auto& [name, path] : {std::pair{"privateKeyFile", &ssl.privateKeyFile},
                                     std::pair{"certificateFile", &ssl.certificateFile},
                                     std::pair{"caCertFile", &ssl.caCertFile}}) {
      if (::access(path->c_str(), R_OK) == 0) continue;
      problem = std::string("ovs.ssl.") + name + " " + *path + ": " + std::strerror(errno);
      break;
    }
    if (problem != snap_.tlsError && !problem.empty()) log_->error("{}", problem);
    snap_.tlsError = problem;
    if (problem.empty())
      okna_ovsdb_set_ssl_files(ssl.privateKeyFile.c_str(), ssl.certificateFile.c_str(),
                               ssl.caCertFile.c_str());
  }

  void pass() {
    applySsl();
    okna_ovs_idl_run(ovs_);
    if (sb_) okna_sb_idl_run(sb_);

    const bool connected = okna_ovs_idl_is_connected(ovs_) != 0;
    if (connected && !connected_) {
      if (everConnected_) {
        ++snap_.stats.reconnects;
        log_->info("reconnected to {}: re-asserting the desired state", owner_.config_.remote);
      }
      everConnected_ = true;
    } else if (!connected && connected_) {
      ++snap_.stats.losses;
      log_->warn("lost the connection to {}; reconnecting with backoff", owner_.config_.remote);
    }
    connected_ = connected;
    snap_.connected = connected;
    snap_.connectionError = connected ? "" : okna_ovs_idl_connection_error(ovs_);

    if (txn_) finishTxn();

    const unsigned seqno = okna_ovs_idl_seqno(ovs_);
    const auto now = Clock::now();
    // A replica newer than snap_.ovs that is not read yet: no diff from stale data.
    stale_ = false;
    if (seqno != seqno_ && now < nextReadAt_ && !forceRead_) {
      stale_ = true;
    } else if (seqno != seqno_ || forceRead_) {
      forceRead_ = false;
      nextReadAt_ = now + kBurstReadInterval;
      seqno_ = seqno;
      // Compared with what was read before, so that unchanged data stays shared with the
      // published snapshots (most changes touch one of the two).
      snap_.ovs.set(readObserved(ovs_));
      snap_.systemId = valueIn(snap_.ovs->externalIds, "system-id");
      if (const auto it = snap_.ovs->externalIds.find(kOwnershipKey);
          it != snap_.ovs->externalIds.end())
        if (auto record = parseOwnership(it->second)) known_ = std::move(*record);
      std::set<std::string> vmIfaceIds;
      snap_.integrationIfaceIds.set(metadata_ && metadata_->enabled
                                        ? readIfaceIds(ovs_, metadata_->bridge, vmIfaceIds)
                                        : ObservedBridgeIfaceIds{});
      snap_.integrationVmIfaceIds.set(std::move(vmIfaceIds));
    }
    manageSb();
    if (sbTxn_) finishSbTxn();
    if (!sbTxn_) keepNeutronLiveness();

    if (!stale_ && !txn_ && (desired_ || metadata_) && connected && snap_.ovs->hasRoot &&
        Clock::now() >= retryAt_ && (seqno_ != tryAgainSeqno_ || Clock::now() >= tryAgainUntil_))
      reconcile();
    publish();
  }

  void reconcile() {
    ChassisOps ops;
    if (desired_) {
      // Once the agent knows the record, its memory is the copy: a deleted or garbled record is
      // restored from what this process last saw, the state file being only the first copy.
      ops = known_ ? diffChassis(*desired_, *snap_.ovs,
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
    }
    if (ops.notes != snap_.notes) {
      for (const auto& n : ops.notes) log_->warn("{}", n);
      snap_.notes = ops.notes;
    }
    if (desired_ && ops.empty()) {
      snap_.convergedGeneration = generation_;
      known_ = ops.owned;
    }
    // The metadata ports go in the same transaction (after the chassis ops); the diff emits
    // nothing for a bridge that is not there, so they can never block the chassis ops.
    const std::size_t chassisOps = ops.ops.size();
    if (metadata_) {
      auto portOps = diffMetadataPorts(*metadata_, *snap_.ovs, *snap_.integrationIfaceIds);
      if (portOps.empty()) snap_.metadataConvergedGeneration = metadataGeneration_;
      ops.ops.insert(ops.ops.end(), portOps.begin(), portOps.end());
    }
    if (ops.ops.empty() || owner_.config_.readOnly) return;
    if (chassisOps == 0) ops.verifyExternalIds = ops.verifyBridges = false;
    std::vector<okna_ovs_op> glueOps;
    for (const auto& op : ops.ops) {
      log_->debug("ovsdb op: {}", describe(op));
      glueOps.push_back({toGlue(op.kind), op.a.c_str(), op.b.c_str(), op.c.c_str()});
    }
    txn_ = okna_ovs_txn_start(ovs_, glueOps.data(), glueOps.size(), ops.verifyExternalIds,
                              ops.verifyBridges, "openkeel-node-agent: OVN chassis configuration");
    if (!txn_) return;  // the replica changed under the diff; the next change retries
    txnSeqno_ = seqno_;
    txnOwned_ = chassisOps > 0 ? std::optional<OwnershipRecord>(ops.owned) : std::nullopt;
    txnOps_.clear();
    for (const auto& op : ops.ops) txnOps_.push_back(describe(op));
    finishTxn();
  }

  void finishTxn() {
    const okna_txn_status status = okna_ovs_txn_commit(txn_);
    if (status == OKNA_TXN_INCOMPLETE) return;
    // Our own chassis change is read at once, never held back by the burst interval: the loop
    // decides from the snapshot (a gateway drain from the ownership record just written).
    // Metadata ports alone wait for the burst read like any other change.
    if (txnOwned_) forceRead_ = true;
    switch (status) {
      case OKNA_TXN_SUCCESS:
        ++snap_.stats.success;
        for (const auto& op : txnOps_) log_->info("{}", op);
        if (txnOwned_) known_ = *txnOwned_;
        snap_.lastError.clear();
        errorBackoff_ = {};
        break;
      case OKNA_TXN_UNCHANGED:
        ++snap_.stats.unchanged;
        break;
      case OKNA_TXN_TRY_AGAIN:
        // Retry once the replica has moved past what the diff saw (or after a short while).
        ++snap_.stats.conflicts;
        log_->debug("transaction: try again (concurrent change or reconnect)");
        tryAgainSeqno_ = txnSeqno_;
        tryAgainUntil_ = Clock::now() + kTryAgainFallback;
        break;
      default:
        ++snap_.stats.errors;
        snap_.lastError = okna_ovs_txn_error(txn_);
        errorBackoff_ = std::clamp(errorBackoff_ * 2, std::chrono::milliseconds(kErrorBackoffMin),
                                   std::chrono::milliseconds(kErrorBackoffMax));
        retryAt_ = Clock::now() + errorBackoff_;
        log_->error("OVSDB transaction failed: {}; retrying in {} ms", snap_.lastError,
                    errorBackoff_.count());
        break;
    }
    okna_ovs_txn_destroy(txn_);
    txn_ = nullptr;
  }

  // The SB IDL follows the SB remote and the chassis name: reopened when either changes.
  void manageSb() {
    std::string remote = owner_.config_.sbRemote;
    if (remote.empty()) remote = valueIn(snap_.ovs->externalIds, "ovn-remote");
    const std::string chassis = snap_.systemId;
    if (remote != sbRemote_ || chassis != sbChassis_) {
      okna_sb_idl_close(sb_);
      sb_ = nullptr;
      sbRemote_ = remote;
      sbChassis_ = chassis;
      const auto version = snap_.sb.metadata.version;
      snap_.sb = SbState{};
      snap_.sb.metadata.version = version + 1;
      snap_.sb.remote = remote;
      sbSeqno_ = 0;
      sbConnected_ = sbEverConnected_ = false;  // a new connection, not a lost one
      if (!remote.empty() && !chassis.empty()) {
        log_->info("watching chassis {} in the Southbound DB at {}", chassis, remote);
        sb_ = okna_sb_idl_open_chassis_view(remote.c_str(), chassis.c_str());
        okna_sb_idl_run(sb_);
      }
    }
    if (!sb_) return;
    snap_.sb.connected = okna_sb_idl_is_connected(sb_) != 0;
    snap_.sb.connectionError = snap_.sb.connected ? "" : okna_sb_idl_connection_error(sb_);
    noteSbConnection();
    const bool synced = okna_sb_idl_has_ever_connected(sb_) != 0;
    const unsigned seqno = okna_sb_idl_seqno(sb_);
    const bool metadata = metadata_ && metadata_->enabled;
    SbMetadataView& view = snap_.sb.metadata;
    const bool changed = !snap_.sb.synced || seqno != sbSeqno_ || metadata != view.enabled;
    if (synced && changed) {
      snap_.sb.gatewayPorts = readGatewayPorts(sb_);
      sbSeqno_ = seqno;
      if (metadata) readMetadataView(sb_, view);
    }
    snap_.sb.synced = synced;
    if (!metadata) {
      if (view.enabled) {
        const auto version = view.version;
        snap_.sb.metadata = SbMetadataView{};
        snap_.sb.metadata.version = version + 1;
      }
      okna_sb_idl_set_metadata_datapaths(sb_, 0, nullptr, 0);
      return;
    }
    view.enabled = true;
    // ovn-controller's way (update_sb_monitors): the conditions follow what the replica says
    // this chassis hosts. One step reaches the fixpoint: the hosted datapaths come from the
    // ports bound here, which the datapath clauses do not change.
    const auto dps = hostedDatapaths(view.rows->ports);
    std::vector<const char*> dpArgs;
    for (const auto& d : dps) dpArgs.push_back(d.c_str());
    const unsigned expected =
        okna_sb_idl_set_metadata_datapaths(sb_, 1, dpArgs.data(), dpArgs.size());
    char own[37];
    const bool hasChassis = okna_sb_idl_own_chassis_uuid(sb_, own) != 0;
    view.chassisUuid = hasChassis ? own : "";
    const bool acked = okna_sb_idl_condition_seqno(sb_) == expected;
    std::string reason;
    if (!snap_.sb.connected)
      reason = "not connected to the Southbound DB at " + sbRemote_;
    else if (!synced)
      reason = "waiting for the first Southbound contents";
    else if (!hasChassis)
      reason = "chassis " + sbChassis_ + " is not registered in the Southbound DB";
    else if (!acked)
      reason = "waiting for the Southbound to apply the monitor conditions";
    view.synced = reason.empty();
    view.notSyncedReason = reason;
  }

  // Each loss of the Southbound and each recovery is logged and counted once: the IDL retries
  // with backoff in between, and the connection is down all along.
  void noteSbConnection() {
    const bool connected = snap_.sb.connected;
    if (connected && !sbConnected_) {
      if (sbEverConnected_) {
        ++snap_.stats.sbReconnects;
        log_->info(
            "reconnected to the Southbound DB at {} after {} s", sbRemote_,
            std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - sbLostAt_).count());
      }
      sbEverConnected_ = true;
    } else if (!connected && sbConnected_) {
      ++snap_.stats.sbLosses;
      sbLostAt_ = Clock::now();
      log_->warn("lost the connection to the Southbound DB at {} ({}); reconnecting with backoff",
                 sbRemote_, snap_.sb.connectionError);
    }
    sbConnected_ = connected;
  }

  // Neutron's liveness keys on this chassis' Chassis_Private row, as its metadata agent (master)
  // keeps them: the agent id (set once, never overwritten), the integration bridge
  // (neutron:ovn-bridge, Neutron master's VIF bridge), nb_cfg echoed on every change (after a
  // random delay but the first), and none of the keys of the OVN Neutron agent
  // (neutron:ovn-neutron-agent-*), which Neutron's server prefers: left by an agent this one
  // replaced on the host, they would make the host look dead.
  void keepNeutronLiveness() {
    const SbMetadataView& view = snap_.sb.metadata;
    if (!sb_ || !view.enabled || !view.synced) return;
    if (!view.hasChassisPrivate) {
      // A re-created row (ovn-controller re-registered) gets its first echo at once again.
      chassisPrivateSeen_ = false;
      liveness_ = {};
      return;
    }
    if (!chassisPrivateSeen_) {
      // ovn-controller 23.03 exits, without a log line, when Chassis_Private.external_ids is
      // written right after it (re)registered its chassis (a fresh or emptied Southbound;
      // reproduced with ovn-sbctl alone, metadata/README.md). The first write waits a moment.
      chassisPrivateSeen_ = true;
      sbRetryAt_ = std::max(sbRetryAt_, Clock::now() + kLivenessSettle);
    }
    if (owner_.config_.readOnly) return;
    if (Clock::now() < sbRetryAt_) return;
    NeutronLivenessInputs in;
    in.ids = view.chassisPrivateIds;
    in.nbCfg = view.nbCfg;
    in.chassisName = sbChassis_;
    in.bridge = valueIn(snap_.ovs->externalIds, "ovn-bridge");
    in.now = Clock::now();
    in.randomDelay = randomDelay();
    const NeutronLivenessPlan plan = planNeutronLiveness(in, liveness_);
    if (plan.scheduled)
      log_->debug(
          "nb_cfg {}: echoed to Chassis_Private {} in {} ms (a random 0-{} ms, as Neutron's "
          "agent spreads it)",
          view.nbCfg, sbChassis_, plan.scheduled->count(), owner_.config_.livenessDelayMax.count());
    if (plan.set.empty() && plan.remove.empty()) {
      liveness_ = plan.next;
      return;
    }
    std::vector<const char*> kv;
    for (const auto& [k, v] : plan.set) {
      kv.push_back(k.c_str());
      kv.push_back(v.c_str());
    }
    std::vector<const char*> del;
    for (const auto& k : plan.remove) del.push_back(k.c_str());
    if (!del.empty())
      log_->info(
          "removing the OVN Neutron agent's keys from Chassis_Private {} (this agent "
          "serves the host's metadata now; Neutron's server reads those keys first)",
          sbChassis_);
    sbTxn_ =
        okna_sb_txn_set_chassis_private_ids(sb_, kv.data(), kv.size() / 2, del.data(), del.size());
    // Not sent (the row went): the echo stays pending, due at once.
    liveness_ = sbTxn_ ? plan.next : NeutronLivenessState{liveness_.echoed, in.now};
    if (sbTxn_) finishSbTxn();
  }

  // 0 to ovs.livenessDelayMaxSeconds, for an nb_cfg echo scheduled now.
  std::chrono::milliseconds randomDelay() {
    const auto max = owner_.config_.livenessDelayMax;
    if (max.count() <= 0) return std::chrono::milliseconds(0);
    std::uniform_int_distribution<long long> ms(0, max.count());
    return std::chrono::milliseconds(ms(random_));
  }

  void finishSbTxn() {
    const okna_txn_status status = okna_sb_txn_commit(sbTxn_);
    if (status == OKNA_TXN_INCOMPLETE) return;
    if (status == OKNA_TXN_ERROR) {
      log_->warn("Southbound transaction (metadata agent liveness) failed: {}",
                 okna_sb_txn_error(sbTxn_));
      sbRetryAt_ = Clock::now() + kErrorBackoffMin;
    } else if (status == OKNA_TXN_TRY_AGAIN) {
      sbRetryAt_ = Clock::now() + kTryAgainFallback;
    }
    okna_sb_txn_destroy(sbTxn_);
    sbTxn_ = nullptr;
  }

  void publish() {
    snap_.ownership = known_;
    if (published_ && *published_ == snap_) return;
    published_ = std::make_shared<const Snapshot>(snap_);
    owner_.onSnapshot_(published_);
  }

  void waitForWork() {
    okna_ovs_idl_wait(ovs_);
    if (sb_) okna_sb_idl_wait(sb_);
    if (txn_) okna_ovs_txn_wait(txn_);
    if (sbTxn_) okna_sb_txn_wait(sbTxn_);
    okna_poll_fd_wait(owner_.wakeFd_);
    long long ms = kTickMs;
    const auto now = Clock::now();
    for (const auto at : {retryAt_, tryAgainUntil_, sbRetryAt_, stale_ ? nextReadAt_ : now,
                          liveness_.echoDueAt.value_or(now)})
      if (at > now)
        ms = std::min<long long>(
            ms, std::chrono::duration_cast<std::chrono::milliseconds>(at - now).count() + 1);
    okna_poll_timer_wait(ms);
    okna_poll_block();
  }

  IdlThread& owner_;
  std::shared_ptr<spdlog::logger> log_;
  okna_ovs_idl* ovs_ = nullptr;
  okna_sb_idl* sb_ = nullptr;
  okna_ovs_txn* txn_ = nullptr;
  okna_sb_txn* sbTxn_ = nullptr;
  Clock::time_point sbRetryAt_{};
  // This chassis's Chassis_Private row was there at the last look (keepNeutronLiveness).
  bool chassisPrivateSeen_ = false;
  // The nb_cfg echo: done once (later ones are delayed), and when the pending one is due.
  NeutronLivenessState liveness_;
  std::mt19937_64 random_{std::random_device{}()};
  std::vector<std::string> txnOps_;
  // The ownership record the running transaction writes (nullopt: no chassis ops in it).
  std::optional<OwnershipRecord> txnOwned_;
  // Snapshot::ownership.
  std::optional<OwnershipRecord> known_;
  std::shared_ptr<const DesiredChassis> desired_;
  std::uint64_t generation_ = 0;
  std::shared_ptr<const DesiredMetadataOvs> metadata_;
  std::uint64_t metadataGeneration_ = 0;
  bool connected_ = false;
  bool everConnected_ = false;
  unsigned seqno_ = 0;
  bool forceRead_ = false;
  bool stale_ = false;
  Clock::time_point nextReadAt_{};
  unsigned txnSeqno_ = 0;
  // After TRY_AGAIN: wait for the replica to leave this seqno, or for tryAgainUntil_.
  unsigned tryAgainSeqno_ = ~0U;
  Clock::time_point tryAgainUntil_{};
  Clock::time_point retryAt_{};
  std::chrono::milliseconds errorBackoff_{0};
  std::string sbRemote_;
  std::string sbChassis_;
  unsigned sbSeqno_ = 0;
  bool sbConnected_ = false;
  bool sbEverConnected_ = false;
  Clock::time_point sbLostAt_{};
  Snapshot snap_;
  std::shared_ptr<const Snapshot> published_;
};

IdlThread::IdlThread(OvsConfig config, core::HealthRegistry& health, SnapshotCallback onSnapshot)
    : config_(std::move(config)), health_(health), onSnapshot_(std::move(onSnapshot)) {
  wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
}

IdlThread::~IdlThread() {
  stop();
  ::close(wakeFd_);
}

void IdlThread::start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  health_.addHeartbeat(kHeartbeat, kMaxSilence);
  health_.beat(kHeartbeat);
  // libopenvswitch's own log goes to the "ovs" logger (ovs_log.h), never raw to stderr.
  routeOvsLogs();
  thread_ = std::thread([this] {
    // Asynchronous signals are the loop thread's business (Asio signal_set); OVS's
    // fatal-signal code must never run them here.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    pthread_setname_np(pthread_self(), "okna-ovsdb");  // for top and perf
    // The thread's boundary: what escapes it is logged and makes /healthz fail at once.
    try {
      Loop(*this).run();
    } catch (const std::exception& e) {
      core::logger("ovsdb")->critical("OVSDB thread stopped: {}", e.what());
      health_.stopped(kHeartbeat, e.what());
    }
  });
}

void IdlThread::submit(const DesiredChassis& desired, std::uint64_t generation) {
  {
    std::lock_guard lock(mutex_);
    pending_ = std::make_shared<const DesiredChassis>(desired);
    pendingGeneration_ = generation;
  }
  wake();
}

void IdlThread::submitMetadata(std::shared_ptr<const DesiredMetadataOvs> desired,
                               std::uint64_t generation) {
  {
    std::lock_guard lock(mutex_);
    pendingMetadata_ = std::move(desired);
    pendingMetadataGeneration_ = generation;
  }
  wake();
}

void IdlThread::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wakeFd_, &one, sizeof one);
}

void IdlThread::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  wake();
  thread_.join();
}

}  // namespace okna::ovsdb
