#pragma once
// The OVN chassis configuration a Node asks for (seed 000 § 3.2-3.3), computed from its labels,
// annotations and roles. Pure: no I/O, no clock. What is already in OVSDB is chassis_diff's job.
//
// Inputs:
//   network role                          -> ovn-cms-options item enable-chassis-as-gw
//   topology.kubernetes.io/zone=<az>      -> ovn-cms-options item availability-zones=<az>
//                                            (with the network role only: Neutron reads AZs
//                                            from gateway chassis)
//   network.openkeel.io/bridge-mappings   -> ovn-bridge-mappings, one bridge per mapping
//     annotation: native OVN syntax "physnet1:br-ex,physnet2:br-vlan" (wins over the label)
//     label:      the same text with ':' written "_c", ',' written "_s" and '_' written "__"
//                 ("physnet1_cbr-ex_sphysnet2_cbr-vlan"), see decodeMappingsLabel()
//   network.openkeel.io/external-nic=<nic> -> <nic> a port of the first mapping's bridge (or of
//                                            OvsConfig::defaultExternalBridge)

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "chassis/ownership.h"
#include "core/result.h"
#include "k8s/objects.h"
#include "ovsdb/config.h"

namespace okna::ovsdb {

inline constexpr const char* kNetworkRole = "network";
inline constexpr const char* kZoneLabel = "topology.kubernetes.io/zone";
inline constexpr const char* kBridgeMappingsKey = "network.openkeel.io/bridge-mappings";
inline constexpr const char* kExternalNicKey = "network.openkeel.io/external-nic";
// "true": the operator moves the external NIC's address (and default route) to the bridge
// themselves, so the agent may plug a NIC that carries them (see chassis/README.md).
inline constexpr const char* kExternalNicAddressMovesKey =
    "network.openkeel.io/external-nic-address-moves";
// The operator's answer when the ownership record is lost (ownership.h): "true" adopts the items
// the Node asks for that are present, "none" leaves them someone else's. Acts only while lost.
inline constexpr const char* kAdoptOwnershipKey = "chassis.openkeel.io/adopt-ownership";
inline constexpr const char* kCmsOptions = "ovn-cms-options";
inline constexpr const char* kBridgeMappings = "ovn-bridge-mappings";
inline constexpr const char* kGatewayItem = "enable-chassis-as-gw";

struct BridgeMapping {
  std::string physnet;
  std::string bridge;
  /** "physnet:bridge", one item of ovn-bridge-mappings. */
  std::string item() const { return physnet + ":" + bridge; }
  bool operator==(const BridgeMapping&) const = default;
};

struct DesiredBridge {
  std::string name;
  // Ports the agent wants on it (the external NIC), besides the bridge's own internal port.
  std::vector<std::string> ports;
  bool operator==(const DesiredBridge&) const = default;
};

/** A problem with a Node input; `reason` is the Kubernetes Event reason. */
struct ChassisWarning {
  std::string reason;
  std::string message;
  bool operator==(const ChassisWarning&) const = default;
};

struct DesiredChassis {
  // The node has the network role: the gateway items are applied. The reconciler keeps this
  // true while a planned failover drains the node (see chassis_reconciler.h).
  bool gateway = false;
  // The ovn-cms-options items of a gateway (enable-chassis-as-gw, availability-zones=<az>),
  // computed even without the role so that a drain can keep them.
  std::vector<std::string> gatewayCmsItems;
  std::vector<BridgeMapping> bridgeMappings;
  // Every bridge of a mapping, then the external NIC's bridge if no mapping names it.
  std::vector<DesiredBridge> bridges;
  std::vector<ChassisWarning> warnings;
  // Set by the reconciler while a planned gateway failover waits for the router gateways to
  // leave (gateway_drain.h): the mappings, bridges and ports the agent owns stay even when no
  // longer wanted, and a wanted item that would replace one of them waits.
  bool holdOwned = false;
  // That failover's start (unix seconds), kept in the ownership record; 0: none.
  std::int64_t drainSince = 0;
  // Last good: an input is malformed, so what the agent applied for it stays (the owned bridge
  // mappings and bridges; the owned ports; the owned availability-zones item while a gateway).
  bool keepOwnedMappings = false;
  bool keepOwnedPorts = false;
  bool keepOwnedZone = false;
  // From the annotation kAdoptOwnershipKey: what to do when the ownership record is lost.
  AdoptOwnership adoptOwnership = AdoptOwnership::No;
  // Set by the reconciler: the record's copy read from the state file at start (the IDL thread
  // prefers its own memory of the record once it has one).
  OwnershipCopy ownershipCopy;

  /** The ovn-cms-options items the agent owns now: gatewayCmsItems if gateway, else none. */
  std::vector<std::string> cmsItems() const;
  bool operator==(const DesiredChassis&) const = default;
};

DesiredChassis planChassis(const OvsConfig& config, const k8s::NodeInfo& node,
                           const std::set<std::string>& roles);

/** What the host says about the external NIC (host_nics.h reads it). */
struct NicFacts {
  // The host's IPv4 or IPv6 default route goes out of it.
  bool carriesDefaultRoute = false;
  // Its IP addresses (no prefix length).
  std::vector<std::string> addresses;
  bool operator==(const NicFacts&) const = default;
};

/** Refuses to plug the external NIC when it carries the host's default route or an address of
 *  the node's InternalIP (moving it into a bridge would cut the node off from the API server
 *  needed to undo the label), unless the annotation kExternalNicAddressMovesKey is "true": the
 *  NIC is dropped from `desired` (what is plugged now stays) with an UnsafeExternalNic warning. */
void guardExternalNic(DesiredChassis& desired, const k8s::NodeInfo& node, const NicFacts& facts);

/** `"ovs": {"external_ids": {key: value}, "bridges": [{"name", "ports"}]}` of --dry-run: the
 *  values the agent's own items give (foreign items in the live database come on top). */
nlohmann::json toDryRunJson(const DesiredChassis& desired);

/** Parses "physnet1:br-ex,physnet2:br-vlan"; the error says what is wrong, not where. */
core::Result<std::vector<BridgeMapping>> parseBridgeMappings(const std::string& text);
/** Label encoding -> native syntax: "_c" -> ':', "_s" -> ',', "__" -> '_'. */
core::Result<std::string> decodeMappingsLabel(const std::string& label);
/** Native syntax -> label encoding (for messages and docs); may exceed 63 characters. */
std::string encodeMappingsLabel(const std::string& native);

}  // namespace okna::ovsdb
