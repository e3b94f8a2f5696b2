#include "metadata/planner.h"

#include <arpa/inet.h>

#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include "core/listener_guard.h"
#include "metadata/sb_values.h"

namespace okna::metadata {

namespace {

std::vector<std::string> splitSpaces(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string token; in >> token;) out.push_back(token);
  return out;
}

bool isVif(const ovsdb::SbPort& p) {
  return p.type.empty() || p.type == "external";
}

// Neutron's MAC_PATTERN, anchored at the start of the token.
bool isMac(const std::string& s) {
  static const std::regex kMac("^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$");
  return std::regex_match(s, kMac);
}

bool isMetadataPort(const ovsdb::SbPort& p) {
  return p.type == "localport" && p.deviceOwner == kMetadataPortOwner;
}

// mac[0] is "MAC IP...": whether one of the IPs is IPv6.
bool hasIpv6Address(const std::string& mac0) {
  const auto tokens = splitSpaces(mac0);
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    in6_addr a{};
    if (inet_pton(AF_INET6, tokens[i].c_str(), &a) == 1) return true;
  }
  return false;
}

bool isIpv4Cidr(const std::string& cidr) {
  const auto slash = cidr.find('/');
  const std::string ip = cidr.substr(0, slash);
  in_addr a{};
  if (inet_pton(AF_INET, ip.c_str(), &a) != 1) return false;
  if (slash == std::string::npos) return true;
  const std::string len = cidr.substr(slash + 1);
  if (len.empty() || len.size() > 2 || len.find_first_not_of("0123456789") != std::string::npos)
    return false;
  return std::stoi(len) <= 32;
}

}  // namespace

// The prefix only: removing every "neutron-" (Python's str.replace in Neutron) would give
// "neutron-a-neutron-b" and "neutron-a-b" one id, so one namespace and one client index.
std::string networkIdFromDatapathName(const std::string& name) {
  static const std::string kPrefix = "neutron-";
  return name.starts_with(kPrefix) ? name.substr(kPrefix.size()) : name;
}

std::string macIndexKey(const std::string& mac) {
  std::string lower;
  for (const char c : mac) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "mac/" + lower;
}

std::string namespaceNameFor(const std::string& networkId) {
  return "ovnmeta-" + networkId;
}

std::string vethNameFor(const std::string& networkId, int end) {
  return "tap" + networkId.substr(0, 10) + std::to_string(end);
}

MetadataPlan planMetadata(const ovsdb::SbMetadataView& view, bool ipv6) {
  return planMetadata(view, ipv6, LocalEvidence{});
}

MetadataPlan planMetadata(const ovsdb::SbMetadataView& view, bool ipv6,
                          const LocalEvidence& local) {
  MetadataPlan plan;
  plan.rows = view.rows;
  plan.synced = view.enabled && view.synced;
  plan.notSyncedReason = view.enabled ? view.notSyncedReason : "metadata is not active";

  std::set<std::string> hosted;
  for (const auto& p : view.rows->ports)
    if (isVif(p) && (p.onChassis || p.onAdditional) && !p.datapath.empty())
      hosted.insert(p.datapath);

  // The metadata port: the localport Neutron created as it (device_owner network:distributed),
  // as Neutron master's get_metadata_port selects it. A datapath can hold other localports
  // (ovn-octavia's health-monitor port): taking the first by uuid gave the namespace that port's
  // MAC, address and iface-id (Neutron bug 2038091). Several: the first by uuid (rows sorted).
  std::map<std::string, const ovsdb::SbPort*> localports;
  for (const auto& p : view.rows->ports)
    if (isMetadataPort(p) && hosted.count(p.datapath) && !localports.count(p.datapath))
      localports[p.datapath] = &p;

  // The datapaths with a VM port here that has an IPv6 address: an IPv6-only network is served
  // on fe80::a9fe:a9fe (Neutron master's any_ip6).
  std::set<std::string> withIpv6Vm;
  for (const auto& p : view.rows->ports)
    if (isVif(p) && (p.onChassis || p.onAdditional) && hasIpv6Address(p.mac0))
      withIpv6Vm.insert(p.datapath);

  std::map<std::string, std::string> networkOfDatapath;
  for (const auto& dp : hosted) {
    const auto name = view.rows->datapathNames.find(dp);
    if (name == view.rows->datapathNames.end() || name->second.empty()) {
      // Not a Neutron network (or its row is not in the replica yet): nothing to serve.
      if (plan.synced && name == view.rows->datapathNames.end())
        plan.warnings.push_back("datapath " + dp + " hosts a VM port but has no Datapath_Binding");
      continue;
    }
    const std::string networkId = networkIdFromDatapathName(name->second);
    if (!ovsdb::isSafeNetworkId(networkId)) {
      // It would name a file under /run/netns and two interfaces: never from unchecked bytes.
      plan.warnings.push_back("datapath " + dp + ": network id \"" +
                              core::escapeForLog(networkId, 80) +
                              "\" is not 1 to 64 of [A-Za-z0-9_-]; no metadata namespace");
      continue;
    }
    networkOfDatapath[dp] = networkId;
    const auto lp = localports.find(dp);
    if (lp == localports.end()) {
      plan.warnings.push_back("network " + networkId +
                              ": no metadata port (localport with neutron:device_owner " +
                              kMetadataPortOwner + ") in the Southbound; no metadata namespace");
      continue;
    }
    const ovsdb::SbPort& port = *lp->second;
    if (!port.problem.empty()) {
      plan.warnings.push_back("network " + networkId + ": metadata port " +
                              core::escapeForLog(port.logicalPort, 80) + ": " + port.problem +
                              "; no metadata namespace");
      continue;
    }
    const auto macTokens = splitSpaces(port.mac0);
    if (macTokens.empty() || !isMac(macTokens[0])) {
      plan.warnings.push_back("network " + networkId + ": metadata port " + port.logicalPort +
                              " has no MAC address; no metadata namespace");
      continue;
    }
    NetworkPlan n;
    n.networkId = networkId;
    n.datapath = dp;
    n.metadataPort = port.logicalPort;
    n.mac = macTokens[0];
    std::set<std::string> addresses;
    for (const auto& cidr : splitSpaces(port.cidrs))
      if (isIpv4Cidr(cidr))
        addresses.insert(cidr.find('/') == std::string::npos ? cidr + "/32" : cidr);
    const bool ipv6Only = addresses.empty();
    if (ipv6Only && !(ipv6 && withIpv6Vm.count(dp))) {
      plan.warnings.push_back(
          "network " + networkId + ": metadata port " + port.logicalPort +
          " has no IPv4 address (neutron:cidrs)" +
          (ipv6 ? " and no VM port here has an IPv6 address" : " and metadata.ipv6 is off") +
          "; no metadata namespace");
      continue;
    }
    // An IPv6-only network keeps 169.254.169.254/32 too, as Neutron master does: the listener
    // set stays the same for every network.
    addresses.insert(std::string(kMetadataIpv4) + "/32");
    if (ipv6) addresses.insert(std::string(kMetadataIpv6) + "/64");
    n.addresses.assign(addresses.begin(), addresses.end());
    n.namespaceName = namespaceNameFor(networkId);
    n.hostIface = vethNameFor(networkId, 0);
    n.innerIface = vethNameFor(networkId, 1);
    plan.networks[networkId] = std::make_shared<const NetworkPlan>(std::move(n));
  }

  bool anyBoundHere = false;
  for (const auto& p : plan.rows->ports) {
    if (!isVif(p) || !(p.onChassis || p.onAdditional)) continue;
    anyBoundHere = true;
    const auto net = networkOfDatapath.find(p.datapath);
    if (net == networkOfDatapath.end() || !plan.networks.count(net->second)) continue;
    plan.vms[net->second].push_back(&p);
  }

  const std::set<std::string>& vmIfaces = *local.vmIfaceIds;
  // The Southbound says no VM is here, br-int says some are: emptied or replaced, not yet
  // rebuilt by ovn-northd and re-claimed by ovn-controller.
  if (plan.synced && !anyBoundHere && !vmIfaces.empty()) {
    plan.synced = false;
    std::string ids;
    std::size_t shown = 0;
    for (const auto& id : vmIfaces) {
      if (shown++ == 3) {
        ids += ", ...";
        break;
      }
      ids += (ids.empty() ? "" : ", ") + core::escapeForLog(id, 80);
    }
    plan.notSyncedReason =
        "no VM port is bound to this chassis in the Southbound, but " +
        std::to_string(vmIfaces.size()) + " VM interface(s) are on " + local.bridge +
        " (iface-id " + ids +
        "): the Southbound was emptied or replaced; nothing is removed until ovn-northd and "
        "ovn-controller have restored the bindings";
  }

  // The previous plan's VM ports the view lost (no row at all) whose interface is still here.
  if (local.previous) {
    std::set<std::string> inView;
    for (const auto& p : plan.rows->ports) inView.insert(p.logicalPort);
    std::set<std::string> networksInView;
    for (const auto& [dp, id] : networkOfDatapath) networksInView.insert(id);
    std::vector<std::pair<std::string, const ovsdb::SbPort*>> carry;
    for (const auto& [id, ports] : local.previous->vms) {
      const auto before = local.previous->networks.find(id);
      if (before == local.previous->networks.end()) continue;
      // In the view but not planned (its metadata port broken): the Southbound says so.
      if (networksInView.count(id) && !plan.networks.count(id)) continue;
      for (const ovsdb::SbPort* p : ports)
        if (!inView.count(p->logicalPort) && vmIfaces.count(p->logicalPort))
          carry.emplace_back(id, p);
    }
    if (!carry.empty()) {
      auto kept = std::make_shared<std::vector<ovsdb::SbPort>>();
      kept->reserve(carry.size());  // the index points into it: no reallocation
      std::map<std::string, std::string> lostPorts;
      for (const auto& [id, p] : carry) {
        kept->push_back(*p);
        plan.vms[id].push_back(&kept->back());
        auto& names = lostPorts[id];
        names += (names.empty() ? "" : ", ") + core::escapeForLog(p->logicalPort, 80);
      }
      for (const auto& [id, names] : lostPorts) {
        const bool whole = !plan.networks.count(id);
        if (whole) plan.networks[id] = local.previous->networks.at(id);
        plan.lost[id] = (whole ? "kept " : "") + namespaceNameFor(id) + ": VM port(s) " + names +
                        " still on " + local.bridge + " but not in the Southbound" +
                        (whole ? "" : "; served from the last view");
      }
      plan.carriedPorts = std::move(kept);
    }
  }

  for (const auto& [id, ports] : plan.vms) {
    for (const ovsdb::SbPort* p : ports) {
      const auto tokens = splitSpaces(p->mac0);
      if (tokens.empty()) continue;
      auto& byKey = plan.index[id];
      for (std::size_t i = 1; i < tokens.size(); ++i) byKey[tokens[i]].push_back(p);
      // IPv6 metadata: the client's address is its link-local one, derived from the MAC.
      if (isMac(tokens[0])) byKey[macIndexKey(tokens[0])].push_back(p);
    }
  }
  return plan;
}

}  // namespace okna::metadata
