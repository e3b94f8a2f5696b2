#include "metadata/sb_participant.h"

#include <algorithm>
#include <cstring>

#include "core/logging.h"
#include "metadata/sb_values.h"
#include "ovsdb/ovs_metadata_glue.h"
#include "ovsdb/string_map.h"

namespace okna::metadata {

namespace {

using ovsdb::Clause;
using ovsdb::ObservedBridgeIfaceIds;
using ovsdb::SbMetadataView;
using ovsdb::SbPort;
using ovsdb::SbRows;
using ovsdb::TableCondition;

// Between this chassis's Chassis_Private row appearing and the first liveness write.
constexpr auto kLivenessSettle = std::chrono::seconds(3);

// The marked ports' ids, and the VM interfaces' iface-ids into `vmIfaceIds` (as
// ovsdb::vmIfaceIdsOf reads them). Only those three keys are looked up, and only the marked
// ports' are copied: with 1,000 VMs a copy of every interface's keys was a million small
// allocations per read of the replica.
ObservedBridgeIfaceIds readIfaceIds(okna_ovs_idl* idl, const std::string& bridge,
                                    std::set<std::string>& vmIfaceIds) {
  struct Ctx {
    ObservedBridgeIfaceIds ids;
    std::set<std::string>& vms;
  } ctx{{}, vmIfaceIds};
  vmIfaceIds.clear();
  okna_ovs_idl_foreach_iface_ids(
      idl, bridge.c_str(), ovsdb::kMetadataPortMarkKey,
      [](void* c, const char* port, const char* ifaceId, const char* attachedMac,
         const char* mark) {
        auto& x = *static_cast<Ctx*>(c);
        if (std::strcmp(mark, ovsdb::kMetadataPortMarkValue) == 0) {
          auto& kv = x.ids[port];
          kv[ovsdb::kMetadataPortMarkKey] = mark;
          if (*ifaceId != '\0') kv["iface-id"] = ifaceId;
          if (*attachedMac != '\0') kv["attached-mac"] = attachedMac;
        } else if (*ifaceId != '\0' && *attachedMac != '\0') {
          x.vms.insert(ifaceId);
        }
      },
      &ctx);
  return std::move(ctx.ids);
}

// The bridges named in `names` (those that exist), with their ports and what ovs-vswitchd made
// of them.
ovsdb::ObservedOvs readBridges(okna_ovs_idl* idl, const std::set<std::string>& names) {
  struct Ctx {
    const std::set<std::string>& names;
    ovsdb::ObservedOvs out;
  } ctx{names, {}};
  okna_ovs_idl_foreach_bridge(
      idl,
      [](void* c, const char* name, const char* datapathType) {
        auto& x = *static_cast<Ctx*>(c);
        if (x.names.count(name)) x.out.bridges[name].datapathType = datapathType;
      },
      &ctx);
  okna_ovs_idl_foreach_bridge_port(
      idl,
      [](void* c, const char* bridge, const char* port) {
        auto& x = *static_cast<Ctx*>(c);
        if (x.names.count(bridge)) x.out.bridges[bridge].ports.push_back(port);
      },
      &ctx);
  okna_ovs_idl_foreach_iface_status(
      idl,
      [](void* c, const char* bridge, const char* port, const char*, int hasOfport,
         long long ofport, const char* error) {
        auto& x = *static_cast<Ctx*>(c);
        if (!x.names.count(bridge)) return;
        auto& b = x.out.bridges[bridge];
        if (*error != '\0' || (hasOfport && ofport == -1))
          b.failedPorts[port] = *error != '\0' ? error : "ofport -1";
        else if (!hasOfport)
          b.pendingPorts.insert(port);
      },
      &ctx);
  return std::move(ctx.out);
}

// The rows of the chassis view the metadata service uses (not synced-ness: settle()'s). The
// rows stay shared with the published views unless they changed.
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
        port.problem = ovsdb::sbPortProblem(port);
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

SouthboundParticipant::SouthboundParticipant(std::chrono::milliseconds livenessDelayMax)
    : livenessDelayMax_(livenessDelayMax) {}

void SouthboundParticipant::submit(std::shared_ptr<const ovsdb::DesiredMetadataOvs> desired,
                                   std::uint64_t generation) {
  {
    std::lock_guard lock(mutex_);
    pending_ = std::move(desired);
    pendingGeneration_ = generation;
  }
  wake();
}

ovsdb::Monitors SouthboundParticipant::monitors() const {
  ovsdb::Monitors m;
  m.openVswitch = {{"Open_vSwitch", {"external_ids", "bridges"}},
                   {"Bridge", {"name", "datapath_type", "ports"}},
                   {"Port", {"name", "interfaces"}},
                   // The metadata ports' iface-id and mark, the VMs' iface-id and attached-mac.
                   {"Interface", {"name", "external_ids", "error", "ofport"}}};
  m.southbound = {{"Chassis", {"name"}},
                  {"Chassis_Private", {"name", "external_ids"}},
                  {"SB_Global", {"nb_cfg"}},
                  {"Datapath_Binding", {"external_ids"}},
                  {"Port_Binding",
                   {"logical_port", "type", "chassis", "additional_chassis", "datapath", "mac",
                    "external_ids"}}};
  return m;
}

bool SouthboundParticipant::takeDesired() {
  std::lock_guard lock(mutex_);
  if (pendingGeneration_ == generation_) return false;
  // New wanted ports are diffed against a fresh read at once (also when the integration
  // bridge, whose interface ids are read, changed): few reads, since the loop hands them on in
  // a window that grows to 500 ms during a burst.
  desired_ = pending_;
  generation_ = pendingGeneration_;
  return true;
}

void SouthboundParticipant::southboundReopened() {
  const auto version = view_.sb.version;
  view_.sb = SbMetadataView{};
  view_.sb.version = version + 1;
  hostedDatapaths_.clear();
  chassisUuid_.clear();
}

void SouthboundParticipant::observe(const ovsdb::PassContext& pass) {
  view_.systemId = pass.status->chassisName;
  view_.connected = pass.status->connected;
  if (pass.ovsChanged) observeOvs(pass);
  SbMetadataView& view = view_.sb;
  if (!pass.sb) return;
  char own[37];
  chassisUuid_ = okna_sb_idl_own_chassis_uuid(pass.sb, own) != 0 ? own : "";
  if (!enabled()) {
    if (view.enabled) {
      const auto version = view.version;
      view = SbMetadataView{};
      view.version = version + 1;
      hostedDatapaths_.clear();
    }
    return;
  }
  if (pass.status->sbSynced && (pass.sbChanged || !view.enabled)) {
    readMetadataView(pass.sb, view);
    // ovn-controller's way (update_sb_monitors): the conditions follow what the replica says
    // this chassis hosts. One step reaches the fixpoint: the hosted datapaths come from the
    // ports bound here, which the datapath clauses do not change.
    hostedDatapaths_ = hostedDatapaths(view.rows->ports);
  }
  view.enabled = true;
}

void SouthboundParticipant::observeOvs(const ovsdb::PassContext& pass) {
  std::map<std::string, std::string> ids;
  okna_ovs_idl_foreach_external_id(
      pass.ovs,
      [](void* ctx, const char* k, const char* v) {
        if (std::strcmp(k, "ovn-bridge") == 0)
          (*static_cast<std::map<std::string, std::string>*>(ctx))[k] = v;
      },
      &ids);
  ovnBridge_ = ovsdb::valueIn(ids, "ovn-bridge");
  view_.bridge = ovnBridge_.empty() ? "br-int" : ovnBridge_;
  const std::string wanted = desired_ ? desired_->bridge : view_.bridge;
  ports_ = readBridges(pass.ovs, {view_.bridge, wanted});
  std::set<std::string> portSet;
  std::set<std::string> created;
  if (const auto b = ports_.bridges.find(view_.bridge); b != ports_.bridges.end()) {
    portSet.insert(b->second.ports.begin(), b->second.ports.end());
    for (const auto& port : portSet)
      if (!b->second.pendingPorts.count(port) && !b->second.failedPorts.count(port))
        created.insert(port);
  }
  view_.bridgePorts.set(std::move(portSet));
  view_.createdPorts.set(std::move(created));
  std::set<std::string> vmIfaceIds;
  ifaceIds_ = enabled() ? readIfaceIds(pass.ovs, wanted, vmIfaceIds) : ObservedBridgeIfaceIds{};
  view_.vmIfaceIds.set(std::move(vmIfaceIds));
}

std::vector<TableCondition> SouthboundParticipant::southboundConditions(
    const std::string& chassisName) const {
  // Like ovn-controller with ovn-monitor-all=false: what the agent receives grows with what
  // this chassis hosts, not with the size of the cloud.
  std::vector<TableCondition> out = {
      {"Chassis", false, {{"name", Clause::Function::Equal, chassisName}}},
      {"Chassis_Private", false, {{"name", Clause::Function::Equal, chassisName}}},
      {"SB_Global", true, {}},
      {"Port_Binding", false, {}},
      {"Datapath_Binding", false, {}}};
  if (!enabled()) return out;
  auto& ports = out[3].anyOf;
  auto& datapaths = out[4].anyOf;
  if (!chassisUuid_.empty()) {
    ports.push_back({"chassis", Clause::Function::Equal, chassisUuid_});
    ports.push_back({"additional_chassis", Clause::Function::Includes, chassisUuid_});
  }
  for (const auto& dp : hostedDatapaths_) {
    ports.push_back({"datapath", Clause::Function::Equal, dp});
    datapaths.push_back({"_uuid", Clause::Function::Equal, dp});
  }
  return out;
}

void SouthboundParticipant::settle(const ovsdb::PassContext& pass) {
  SbMetadataView& view = view_.sb;
  if (!pass.sb || !view.enabled) return;
  const ovsdb::TransportStatus& t = *pass.status;
  view.chassisUuid = chassisUuid_;
  std::string reason;
  if (!t.sbConnected)
    reason = "not connected to the Southbound DB at " + t.sbRemote;
  else if (!t.sbSynced)
    reason = "waiting for the first Southbound contents";
  else if (chassisUuid_.empty())
    reason = "chassis " + t.chassisName + " is not registered in the Southbound DB";
  else if (!pass.sbConditionsAcked)
    reason = "waiting for the Southbound to apply the monitor conditions";
  view.synced = reason.empty();
  view.notSyncedReason = reason;
  if (!view.synced) return;
  if (!view.hasChassisPrivate) {
    // A re-created row (ovn-controller re-registered) gets its first echo at once again.
    chassisPrivateSeen_ = false;
    liveness_ = {};
  } else if (!chassisPrivateSeen_) {
    // ovn-controller 23.03 exits, without a log line, when Chassis_Private.external_ids is
    // written right after it (re)registered its chassis (a fresh or emptied Southbound;
    // reproduced with ovn-sbctl alone, metadata/README.md). The first write waits a moment.
    chassisPrivateSeen_ = true;
    settleUntil_ = std::max(settleUntil_, pass.now + kLivenessSettle);
  }
}

// Neutron's liveness keys on this chassis' Chassis_Private row, as its metadata agent (master)
// keeps them: the agent id (set once, never overwritten), the integration bridge
// (neutron:ovn-bridge, Neutron master's VIF bridge), nb_cfg echoed on every change (after a
// random delay but the first), and none of the keys of the OVN Neutron agent
// (neutron:ovn-neutron-agent-*), which Neutron's server prefers: left by an agent this one
// replaced on the host, they would make the host look dead.
ovsdb::SbOps SouthboundParticipant::southboundOps(const ovsdb::PassContext& pass) {
  const SbMetadataView& view = view_.sb;
  if (!view.enabled || !view.synced || !view.hasChassisPrivate || pass.readOnly) return {};
  if (pass.now < settleUntil_) return {};
  ovsdb::NeutronLivenessInputs in;
  in.ids = view.chassisPrivateIds;
  in.nbCfg = view.nbCfg;
  in.chassisName = pass.status->chassisName;
  in.bridge = ovnBridge_;
  in.now = pass.now;
  in.randomDelay = std::chrono::milliseconds(0);
  if (livenessDelayMax_.count() > 0)
    in.randomDelay = std::chrono::milliseconds(
        std::uniform_int_distribution<long long>(0, livenessDelayMax_.count())(random_));
  const ovsdb::NeutronLivenessPlan plan = ovsdb::planNeutronLiveness(in, liveness_);
  auto log = core::logger("ovsdb");
  if (plan.scheduled)
    log->debug(
        "nb_cfg {}: echoed to Chassis_Private {} in {} ms (a random 0-{} ms, as Neutron's "
        "agent spreads it)",
        view.nbCfg, in.chassisName, plan.scheduled->count(), livenessDelayMax_.count());
  if (plan.set.empty() && plan.remove.empty()) {
    liveness_ = plan.next;
    return {};
  }
  if (!plan.remove.empty())
    log->info(
        "removing the OVN Neutron agent's keys from Chassis_Private {} (this agent "
        "serves the host's metadata now; Neutron's server reads those keys first)",
        in.chassisName);
  // Not sent (the row went): the echo stays pending, due at once.
  livenessIfNotSent_ = ovsdb::NeutronLivenessState{liveness_.echoed, in.now};
  liveness_ = plan.next;
  ovsdb::SbOps ops;
  ops.setChassisPrivateIds.insert(plan.set.begin(), plan.set.end());
  ops.deleteChassisPrivateIds = plan.remove;
  ops.what = "metadata agent liveness";
  return ops;
}

void SouthboundParticipant::southboundTxnEnded(ovsdb::TxnOutcome outcome) {
  if (outcome == ovsdb::TxnOutcome::NotSent) liveness_ = livenessIfNotSent_;
}

ovsdb::OvsOps SouthboundParticipant::ovsOps(const ovsdb::PassContext&) {
  if (!desired_) return {};
  // Emits nothing for a bridge that is not there, so the ports can never block the chassis
  // ops that share the transaction.
  ovsdb::OvsOps ops;
  ops.ops = ovsdb::diffMetadataPorts(*desired_, ports_, ifaceIds_);
  if (ops.ops.empty()) view_.convergedGeneration = generation_;
  return ops;
}

void SouthboundParticipant::publish(const ovsdb::PassContext&) {
  if (!publish_ || (published_ && *published_ == view_)) return;
  published_ = std::make_shared<const SouthboundView>(view_);
  publish_(published_);
}

std::optional<ovsdb::PassContext::TimePoint> SouthboundParticipant::wakeAt() const {
  std::optional<ovsdb::PassContext::TimePoint> at;
  if (chassisPrivateSeen_) at = settleUntil_;
  if (liveness_.echoDueAt && (!at || *liveness_.echoDueAt < *at)) at = liveness_.echoDueAt;
  return at;
}

}  // namespace okna::metadata
