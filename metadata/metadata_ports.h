#pragma once
// The OVSDB side of the metadata service, as data: what the IDL thread reads from the
// Southbound chassis view (ovs_metadata_glue.h) and the metadata ports the agent keeps on the
// integration bridge. Pure: the diff turns desired ports into ops against the observed bridge.
//
// A metadata port is the host end of an ovnmeta namespace's veth (tap<10 chars of network>0),
// plugged into the integration bridge with Interface external_ids:iface-id = the network's
// metadata (localport) Port_Binding, as Neutron's agent plugs it, plus the agent's mark
// external_ids:openkeel-node-agent=metadata. Only marked ports are ever removed; a port left by
// Neutron's agent with the right name is adopted (marked, iface-id repaired), not re-created.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/shared_value.h"
#include "ovsdb/ovs_ops.h"

namespace okna::ovsdb {

inline constexpr const char* kMetadataPortMarkKey = "openkeel-node-agent";
inline constexpr const char* kMetadataPortMarkValue = "metadata";

/** One Port_Binding of the chassis view. */
struct SbPort {
  std::string uuid;
  std::string logicalPort;
  std::string type;
  // The Datapath_Binding UUID.
  std::string datapath;
  // Bound to this chassis (chassis), or this chassis is a live-migration target
  // (additional_chassis).
  bool onChassis = false;
  bool onAdditional = false;
  std::string mac0;
  std::string cidrs;
  std::string deviceId;
  std::string projectId;
  // external_ids:neutron:device_owner: "network:distributed" marks a network's metadata port
  // (a localport); other localports (ovn-octavia's health monitor ports) are not it. Only
  // compared with that constant: never sent, never logged.
  std::string deviceOwner;
  // Why this port is not served (a value failed metadata/sb_values.h's checks); "" when it may be.
  std::string problem;
  bool operator==(const SbPort&) const = default;
};

/** The rows of the chassis view: thousands at scale, shared between snapshots while unchanged. */
struct SbRows {
  // Sorted by uuid.
  std::vector<SbPort> ports;
  // Datapath_Binding uuid -> external_ids:name.
  std::map<std::string, std::string> datapathNames;
  bool operator==(const SbRows&) const = default;
};

/** What the metadata service sees of the Southbound. */
struct SbMetadataView {
  // The IDL thread monitors the metadata rows (the service is active).
  bool enabled = false;
  // The replica holds the full snapshot for the current conditions: connected, the conditions
  // acknowledged, and this chassis' Chassis row present. Until then nothing is torn down.
  bool synced = false;
  // Why not synced, for /readyz?verbose.
  std::string notSyncedReason;
  std::string chassisUuid;
  core::SharedValue<SbRows> rows;
  // SB_Global.nb_cfg, -1 when unknown.
  long long nbCfg = -1;
  bool hasChassisPrivate = false;
  std::map<std::string, std::string> chassisPrivateIds;
  // Incremented by the IDL thread whenever the rows changed (cheap change detection).
  std::uint64_t version = 0;
  bool operator==(const SbMetadataView&) const = default;
};

/** The metadata ports the agent wants on the integration bridge. */
struct DesiredMetadataOvs {
  // Monitor the metadata rows of the Southbound and keep Neutron's liveness keys.
  bool enabled = false;
  std::string bridge = "br-int";
  // Port name -> iface-id (the metadata Port_Binding's logical_port): only networks whose
  // namespace and veth exist.
  std::map<std::string, std::string> ports;
  // Remove the marked ports not in `ports` (only once the Southbound view is synced).
  bool prune = false;
  bool operator==(const DesiredMetadataOvs&) const = default;
};

/** The observed Interface external_ids of the integration bridge's ports that carry the agent's
 *  mark (see marksTheAgentsPort). */
using ObservedBridgeIfaceIds = std::map<std::string, std::map<std::string, std::string>>;

/** Whether a port's interface ids must be observed: only when they carry the agent's mark. The
 *  diff treats a port whose ids are not observed exactly like an unmarked one (it is re-marked
 *  if wanted, never pruned), so the IDL thread keeps no copy of the others' (on a hypervisor:
 *  every VM's iface-id, attached-mac, vm-uuid, ... of ovn-controller and Nova). */
bool marksTheAgentsPort(const std::map<std::string, std::string>& ids);

/** The iface-ids of the VM interfaces among a bridge's Interface external_ids: those with
 *  iface-id and attached-mac, as os-vif (Nova) plugs a VIF, and not the agent's mark (a
 *  metadata port, Neutron's included, has no attached-mac). The metadata planner keeps a
 *  network while one of its VMs' interfaces is here (planner.h). */
std::set<std::string> vmIfaceIdsOf(const ObservedBridgeIfaceIds& ids);

/** Ops that make `observedPorts` (the bridge's ports and their interface ids) what `desired`
 *  says. No op when the bridge does not exist (ovn-controller creates it). */
std::vector<OvsOp> diffMetadataPorts(const DesiredMetadataOvs& desired, const ObservedOvs& observed,
                                     const ObservedBridgeIfaceIds& ifaceIds);

/** Neutron's agent id for this chassis (uuid5 as neutron.agent.ovn.metadata.agent computes it):
 *  the chassis name parsed as a UUID, else uuid5(d34bf9f6-da32-4871-9af8-15a4626b41ab, name);
 *  then uuid5(that, "metadata_agent"). */
std::string neutronMetadataAgentId(const std::string& chassisName);

/** RFC 4122 name-based UUID, version 5 (SHA-1), as Python's uuid.uuid5. */
std::string uuid5(const std::string& namespaceUuid, const std::string& name);

/** Python's uuid.UUID(text) accepted forms (hex digits with optional hyphens, braces,
 *  "urn:uuid:"), canonical lower-case; "" when `text` is not a UUID. */
std::string parseUuid(const std::string& text);

}  // namespace okna::ovsdb
