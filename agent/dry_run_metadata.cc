#include "agent/dry_run_metadata.h"

#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "core/clock.h"
#include "core/health.h"
#include "metadata/planner.h"
#include "metadata/sb_participant.h"
#include "netns/netlink.h"
#include "ovsdb/idl_thread.h"

namespace okna::agent {

core::Result<nlohmann::json> readMetadataPlanOnce(const ovsdb::OvsConfig& ovs,
                                                  const metadata::MetadataConfig& config,
                                                  std::chrono::milliseconds timeout) {
  ovsdb::OvsConfig readOnly = ovs;
  readOnly.readOnly = true;
  core::HealthRegistry health;
  boost::asio::io_context io;  // for the clock's type only: nothing runs on it
  core::AsioClock clock(io);
  std::mutex mutex;
  std::condition_variable changed;
  std::shared_ptr<const metadata::SouthboundView> last;
  auto southbound = std::make_shared<metadata::SouthboundParticipant>(readOnly.livenessDelayMax);
  southbound->setPublish([&](std::shared_ptr<const metadata::SouthboundView> v) {
    const std::lock_guard lock(mutex);
    last = std::move(v);
    changed.notify_all();
  });
  ovsdb::IdlThread idl(readOnly, health, clock);
  idl.add(southbound);
  ovsdb::DesiredMetadataOvs wanted;
  wanted.enabled = true;  // monitor the metadata rows; no ports, no pruning: nothing to write
  idl.start();
  southbound->submit(std::make_shared<const ovsdb::DesiredMetadataOvs>(std::move(wanted)), 1);
  std::shared_ptr<const metadata::SouthboundView> snapshot;
  {
    std::unique_lock lock(mutex);
    changed.wait_for(lock, timeout, [&] { return last && last->sb.synced; });
    snapshot = last;
  }
  idl.stop();
  if (!snapshot || !snapshot->connected)
    return core::makeError("metadata: no answer from the Open_vSwitch database " + ovs.remote);
  const auto& view = snapshot->sb;
  if (!view.synced)
    return core::makeError("metadata: the Southbound view is not complete after " +
                           std::to_string(timeout.count()) + " ms: " + view.notSyncedReason);

  // With the VM interfaces on br-int, as the agent plans: a Southbound with nothing bound here
  // while VMs are on br-int (emptied, replaced) is not a reason to remove anything.
  const metadata::MetadataPlan plan =
      metadata::planMetadata(view, config.ipv6, {snapshot->vmIfaceIds, nullptr, "br-int"});
  netns::NetlinkImpl netlink;
  auto existing = netlink.listNamespaces("ovnmeta-");
  if (!existing) return existing.error();
  const std::set<std::string> present(existing->begin(), existing->end());

  nlohmann::json out;
  out["chassis"] = snapshot->systemId;
  out["southbound"] = plan.synced ? "synced" : plan.notSyncedReason;
  out["namespaces"] = nlohmann::json::array();
  std::set<std::string> wantedNames;
  for (const auto& [id, planned] : plan.networks) {
    const metadata::NetworkPlan& network = *planned;
    wantedNames.insert(network.namespaceName);
    nlohmann::json vms = nlohmann::json::array();
    if (const auto it = plan.index.find(id); it != plan.index.end())
      for (const auto& [key, ports] : it->second)
        if (key.rfind("mac/", 0) != 0) vms.push_back(key);  // client IPs, not the IPv6 MAC keys
    out["namespaces"].push_back(
        {{"network", id},
         {"namespace", network.namespaceName},
         {"action", present.count(network.namespaceName) ? "keep" : "create"},
         {"mac", network.mac},
         {"addresses", network.addresses},
         {"metadataPort", network.metadataPort},
         {"hostInterface", network.hostIface},
         {"vmAddresses", vms}});
  }
  out["remove"] = nlohmann::json::array();
  for (const auto& name : present)
    if (plan.synced && !wantedNames.count(name)) out["remove"].push_back(name);
  out["warnings"] = plan.warnings;
  return out;
}

std::string metadataPlanToText(const nlohmann::json& plan) {
  std::string out = "metadata (chassis " + plan["chassis"].get<std::string>() + "):";
  if (plan["namespaces"].empty() && plan["remove"].empty())
    out += " no network needs metadata here";
  out += "\n";
  for (const auto& n : plan["namespaces"]) {
    out += "  " + n["action"].get<std::string>() + " " + n["namespace"].get<std::string>() +
           " mac " + n["mac"].get<std::string>() + " addresses";
    for (const auto& a : n["addresses"]) out += " " + a.get<std::string>();
    out += " port " + n["hostInterface"].get<std::string>() + " (iface-id " +
           n["metadataPort"].get<std::string>() + "), " + std::to_string(n["vmAddresses"].size()) +
           " VM address(es)\n";
  }
  for (const auto& r : plan["remove"]) out += "  remove " + r.get<std::string>() + "\n";
  if (const auto sb = plan.value("southbound", "synced"); sb != "synced")
    out += "  nothing removed: " + sb + "\n";
  for (const auto& w : plan["warnings"]) out += "  warning: " + w.get<std::string>() + "\n";
  return out;
}

}  // namespace okna::agent
