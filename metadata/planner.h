#pragma once
// Which networks get a metadata namespace on this chassis, and which VM port each client IP of a
// network belongs to. Pure: the Southbound chassis view in, the plan out.
//
// As Neutron's ML2/OVN metadata agent (Zed) decides it, plus what it misses:
//   - a network needs metadata here when a VIF Port_Binding (type "" or "external") of its
//     datapath is bound to this chassis (chassis) OR lists it in additional_chassis (the target
//     of a live migration: metadata must answer the moment the VM lands);
//   - network id = Datapath_Binding external_ids:name with "neutron-" removed;
//   - the metadata port is the datapath's localport Port_Binding whose
//     external_ids:neutron:device_owner is network:distributed (Neutron master; Zed took any
//     localport, an ovn-octavia health-monitor port included): MAC = first token of mac[0],
//     addresses = the IPv4 entries of external_ids:neutron:cidrs, plus 169.254.169.254/32 (and,
//     with IPv6 on, fe80::a9fe:a9fe/64). No such port or no MAC: no namespace (and a warning),
//     as Neutron tears it down. No IPv4 cidr (an IPv6-only network): a namespace only when IPv6
//     is on and a VM port of the network here has an IPv6 address;
//   - VIFs are Neutron's OVN_VIF_PORT_TYPES: "" and "external" (SR-IOV direct and baremetal
//     ports, bound by ovn-controller to the chassis that hosts their HA chassis group, usually a
//     network node: served there like any VM port);
//   - client IP -> port: the VIFs of the network bound here whose mac[0] lists that IP. Only
//     local VIFs can reach the localport, so a spoofed IP of a remote VM finds nothing.
//
// What it adds (issue 27): the Southbound's silence is not proof that a VM left. An emptied
// Southbound, one restored from an older backup, ovn-northd resyncing from a restored
// Northbound all drop Port_Bindings of VMs that still run here. With the local evidence
// (LocalEvidence: the VM interfaces on br-int, the previous plan):
//   - a VM port the previous plan served whose Port_Binding is gone from the view (no row at
//     all: a row bound elsewhere is proof it moved) while an interface on br-int still carries
//     its iface-id is carried over, with its last values, and its network with it: the
//     namespace goes only once the view has no VM of it AND br-int has none of its interfaces;
//   - a synced view with no VM port bound to this chassis while br-int has VM interfaces is not
//     synced (nothing is removed, nor pruned, until the bindings are back).

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/shared_value.h"
#include "metadata/metadata_ports.h"

namespace okna::metadata {

inline constexpr const char* kMetadataIpv4 = "169.254.169.254";
inline constexpr const char* kMetadataIpv6 = "fe80::a9fe:a9fe";
// neutron:device_owner of a network's metadata port (Neutron's DEVICE_OWNER_DISTRIBUTED).
inline constexpr const char* kMetadataPortOwner = "network:distributed";

/** One network's namespace, as Neutron names it. */
struct NetworkPlan {
  std::string networkId;
  std::string datapath;
  // The metadata (localport) Port_Binding's logical_port: the host veth's iface-id.
  std::string metadataPort;
  std::string mac;
  // On the inner veth: the metadata port's IPv4 cidrs, 169.254.169.254/32 [, fe80::a9fe:a9fe/64].
  std::vector<std::string> addresses;
  // ovnmeta-<network id>, tap<network id[:10]>0 (host, in the integration bridge), ...1 (inside).
  std::string namespaceName;
  std::string hostIface;
  std::string innerIface;
  bool operator==(const NetworkPlan&) const = default;
};

struct MetadataPlan {
  // False while the Southbound view is not complete, or says no VM is bound here while br-int
  // has VM interfaces: then nothing may be torn down.
  bool synced = false;
  std::string notSyncedReason;
  // By network id. Shared: a network set up keeps the plan it was set up from, and a new plan
  // equal to it takes that one (Reconciler), so 1,000 networks are not held twice.
  std::map<std::string, std::shared_ptr<const NetworkPlan>> networks;
  // The Southbound rows the index points into: the view's, shared (never changed in place).
  core::SharedValue<ovsdb::SbRows> rows;
  // network id -> client IP (and macIndexKey(MAC)) -> the bound VIFs listing it (one expected),
  // rows of `rows`: a VM with an IPv4, an IPv6 and a MAC key is not copied three times.
  std::map<std::string, std::map<std::string, std::vector<const ovsdb::SbPort*>>> index;
  // network id -> its VM ports (VIFs bound here or migrating here, and those carried over):
  // rows of `rows` or of `carriedPorts`. What the next plan judges removal by.
  std::map<std::string, std::vector<const ovsdb::SbPort*>> vms;
  // VM ports of the previous plan gone from the view while their interface is still on br-int,
  // with their last values (shared, never changed in place).
  std::shared_ptr<const std::vector<ovsdb::SbPort>> carriedPorts;
  // network id -> what the Southbound lost of it that br-int still has ("kept ovnmeta-<id>:
  // ..."), for /readyz: metadata is not ok while the view lacks VMs that are here.
  std::map<std::string, std::string> lost;
  std::vector<std::string> warnings;
};

/** What the planner judges the Southbound's silence by: the local Open_vSwitch database. */
struct LocalEvidence {
  // external_ids:iface-id of the VM interfaces on the integration bridge
  // (ovsdb::vmIfaceIdsOf: os-vif's iface-id with attached-mac).
  core::SharedValue<std::set<std::string>> vmIfaceIds;
  // The plan before this one (its networks and the VM ports each served); nullptr: none.
  const MetadataPlan* previous = nullptr;
  // The integration bridge's name, for the texts.
  std::string bridge = "br-int";
};

/** The Southbound view alone: what the view says, nothing carried over (the dry run, tests). */
MetadataPlan planMetadata(const ovsdb::SbMetadataView& view, bool ipv6);
MetadataPlan planMetadata(const ovsdb::SbMetadataView& view, bool ipv6, const LocalEvidence& local);

/** The index key of a VIF's MAC (IPv6 clients are found by the MAC of their EUI-64 address). */
std::string macIndexKey(const std::string& mac);

/** Neutron's names: ovnmeta-<id>, tap<id[:10]>0 and tap<id[:10]>1. */
std::string namespaceNameFor(const std::string& networkId);
std::string vethNameFor(const std::string& networkId, int end);

/** The network id of a datapath name ("neutron-<uuid>" -> "<uuid>"): the "neutron-" prefix
 *  removed, and only it (Neutron's get_network_name_from_datapath removes every "neutron-",
 *  which maps two names to one id; for Neutron's own names, a UUID after the prefix, both agree).
 */
std::string networkIdFromDatapathName(const std::string& name);

}  // namespace okna::metadata
