#include "agent/dry_run_metadata.h"

#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "chassis/chassis_participant.h"
#include "core/clock.h"
#include "core/health.h"
#include "metadata/namespace_decision.h"
#include "metadata/sb_participant.h"
#include "netns/netlink.h"
#include "ovsdb/idl_thread.h"

namespace okna::agent {

namespace {

// What the decisions need of the views is there.
bool complete(const Observation& o, bool metadata) {
  if (!o.chassis) return false;
  const ovsdb::Snapshot& s = *o.chassis;
  if (!s.connected || !s.ovs->hasRoot) return false;
  if (metadata && !(o.metadata && o.metadata->sb.synced)) return false;
  // The gateway drain reads the Southbound's chassisredirect bindings when it can.
  return s.sb.remote.empty() || s.systemId.empty() || s.sb.synced;
}

}  // namespace

core::Result<Observation> observeOnce(const ovsdb::OvsConfig& ovs, bool metadata,
                                      std::chrono::milliseconds timeout) {
  ovsdb::OvsConfig readOnly = ovs;
  readOnly.readOnly = true;
  core::HealthRegistry health;
  boost::asio::io_context io;  // for the clock's type only: nothing runs on it
  core::AsioClock clock(io);
  std::mutex mutex;
  std::condition_variable changed;
  Observation last;
  // The live agent's participants on a read-only transport of their own; no desired chassis
  // state is submitted (the chassis participant then computes no ops), the metadata one only
  // asks for the Southbound rows.
  ovsdb::IdlThread idl(readOnly, health, clock);
  idl.add(
      std::make_shared<ovsdb::ChassisParticipant>([&](std::shared_ptr<const ovsdb::Snapshot> s) {
        const std::lock_guard lock(mutex);
        last.chassis = std::move(s);
        changed.notify_all();
      }));
  std::shared_ptr<metadata::SouthboundParticipant> southbound;
  if (metadata) {
    southbound = std::make_shared<metadata::SouthboundParticipant>(readOnly.livenessDelayMax);
    southbound->setPublish([&](std::shared_ptr<const metadata::SouthboundView> v) {
      const std::lock_guard lock(mutex);
      last.metadata = std::move(v);
      changed.notify_all();
    });
    idl.add(southbound);
  }
  idl.start();
  if (southbound) {
    ovsdb::DesiredMetadataOvs wanted;
    wanted.enabled = true;  // monitor the metadata rows; no ports, no pruning: nothing to write
    southbound->submit(std::make_shared<const ovsdb::DesiredMetadataOvs>(std::move(wanted)), 1);
  }
  Observation seen;
  {
    std::unique_lock lock(mutex);
    changed.wait_for(lock, timeout, [&] { return complete(last, metadata); });
    seen = last;
  }
  idl.stop();
  if (!seen.chassis || !seen.chassis->connected)
    return core::makeError("--ovsdb " + ovs.remote + ": not connected after " +
                           std::to_string(timeout.count()) + " ms" +
                           (seen.chassis && !seen.chassis->connectionError.empty()
                                ? " (" + seen.chassis->connectionError + ")"
                                : std::string()));
  if (metadata && !(seen.metadata && seen.metadata->sb.synced))
    return core::makeError(
        "metadata: the Southbound view is not complete after " + std::to_string(timeout.count()) +
        " ms: " + (seen.metadata ? seen.metadata->sb.notSyncedReason : std::string("no view")));
  return seen;
}

core::Result<std::set<std::string>> listMetadataNamespaces() {
  netns::NetlinkImpl netlink;
  auto existing = netlink.listNamespaces("ovnmeta-");
  if (!existing) return existing.error();
  return std::set<std::string>(existing->begin(), existing->end());
}

nlohmann::json decideMetadataOnce(const metadata::SouthboundView& view,
                                  const metadata::MetadataConfig& config, bool active,
                                  const std::set<std::string>& namespaces, bool retired) {
  metadata::MetadataDecisionInputs in;
  in.active = active;
  in.retired = retired;
  in.ipv6 = config.ipv6;
  // A new agent process: no previous plan; the VM interfaces on the integration bridge (as the
  // live metadata service takes it) judge the Southbound.
  in.local = {view.vmIfaceIds, nullptr, view.bridge};
  in.namespaces = namespaces;
  const metadata::MetadataDecision decision = metadata::decideMetadata(view.sb, in);
  const metadata::MetadataPlan& plan = decision.plan;

  nlohmann::json out;
  out["chassis"] = view.systemId;
  out["southbound"] = plan.synced ? "synced" : plan.notSyncedReason;
  out["decisions"] = metadata::decisionsToJson(decision.namespaces);
  out["namespaces"] = nlohmann::json::array();
  out["remove"] = nlohmann::json::array();
  out["hold"] = nlohmann::json::array();
  for (const auto& d : decision.namespaces) {
    using A = metadata::NamespaceAction;
    if (d.action == A::Remove) {
      out["remove"].push_back(d.namespaceName);
      continue;
    }
    const auto planned = plan.networks.find(d.networkId);
    if (d.action == A::Hold || planned == plan.networks.end()) {
      out["hold"].push_back(d.namespaceName);
      continue;
    }
    const metadata::NetworkPlan& network = *planned->second;
    nlohmann::json vms = nlohmann::json::array();
    if (const auto it = plan.index.find(d.networkId); it != plan.index.end())
      for (const auto& [key, ports] : it->second)
        if (key.rfind("mac/", 0) != 0) vms.push_back(key);  // client IPs, not the IPv6 MAC keys
    out["namespaces"].push_back({{"network", d.networkId},
                                 {"namespace", network.namespaceName},
                                 {"action", metadata::actionName(d.action)},
                                 {"reason", d.reason},
                                 {"mac", network.mac},
                                 {"addresses", network.addresses},
                                 {"metadataPort", network.metadataPort},
                                 {"hostInterface", network.hostIface},
                                 {"vmAddresses", vms}});
  }
  out["warnings"] = plan.warnings;
  return out;
}

std::string metadataPlanToText(const nlohmann::json& plan) {
  std::string out = "metadata (chassis " + plan["chassis"].get<std::string>() + "):";
  if (plan["decisions"].empty()) out += " no network needs metadata here";
  out += "\n";
  for (const auto& n : plan["namespaces"]) {
    out += "  " + n["action"].get<std::string>() + " " + n["namespace"].get<std::string>() +
           " mac " + n["mac"].get<std::string>() + " addresses";
    for (const auto& a : n["addresses"]) out += " " + a.get<std::string>();
    out += " port " + n["hostInterface"].get<std::string>() + " (iface-id " +
           n["metadataPort"].get<std::string>() + "), " + std::to_string(n["vmAddresses"].size()) +
           " VM address(es)\n";
  }
  for (const auto& d : plan["decisions"]) {
    const std::string action = d["action"].get<std::string>();
    if (action == "remove" || action == "hold")
      out += "  " + action + " " + d["namespace"].get<std::string>() + ": " +
             d["reason"].get<std::string>() + "\n";
  }
  if (const auto sb = plan.value("southbound", "synced"); sb != "synced")
    out += "  nothing removed: " + sb + "\n";
  for (const auto& w : plan["warnings"]) out += "  warning: " + w.get<std::string>() + "\n";
  return out;
}

}  // namespace okna::agent
