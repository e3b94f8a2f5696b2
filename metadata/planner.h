#pragma once
// Which networks get a metadata namespace on this chassis, and which VM port each client IP of a
// network belongs to. Pure: the Southbound chassis view in, the plan out.
//
// As Neutron's ML2/OVN metadata agent (Zed) decides it, plus what it misses:
//   - a network needs metadata here when a VIF Port_Binding (type "" or "external") of its
//     datapath is bound to this chassis (chassis) OR lists it in additional_chassis (the target
//     of a live migration: metadata must answer the moment the VM lands);
//   - network id = Datapath_Binding external_ids:name with "neutron-" removed;
//   - the metadata port is the datapath's localport Port_Binding: MAC = first token of mac[0],
//     addresses = the IPv4 entries of external_ids:neutron:cidrs, plus 169.254.169.254/32 (and,
//     with IPv6 on, fe80::a9fe:a9fe/64). No localport, no MAC or no IPv4 cidr: no namespace (and
//     a warning), as Neutron tears it down;
//   - client IP -> port: the VIFs of the network bound here whose mac[0] lists that IP. Only
//     local VIFs can reach the localport, so a spoofed IP of a remote VM finds nothing.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/shared_value.h"
#include "ovsdb/metadata_ports.h"

namespace okna::metadata {

inline constexpr const char* kMetadataIpv4 = "169.254.169.254";
inline constexpr const char* kMetadataIpv6 = "fe80::a9fe:a9fe";

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
  // False while the Southbound view is not complete: then nothing may be torn down.
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
  std::vector<std::string> warnings;
};

MetadataPlan planMetadata(const ovsdb::SbMetadataView& view, bool ipv6);

/** The index key of a VIF's MAC (IPv6 clients are found by the MAC of their EUI-64 address). */
std::string macIndexKey(const std::string& mac);

/** Neutron's names: ovnmeta-<id>, tap<id[:10]>0 and tap<id[:10]>1. */
std::string namespaceNameFor(const std::string& networkId);
std::string vethNameFor(const std::string& networkId, int end);

/** The network id of a datapath name ("neutron-<uuid>" -> "<uuid>"), as Neutron's
 *  get_network_name_from_datapath (every "neutron-" removed). */
std::string networkIdFromDatapathName(const std::string& name);

}  // namespace okna::metadata
