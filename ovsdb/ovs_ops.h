#pragma once
// The local Open_vSwitch database as the participants (participant.h) see it and change it:
// its rows as read from the replica (ObservedOvs), and the primitive operations the transport's
// C glue applies (ovs_chassis_glue.h, okna_ovs_op). Pure data.

#include <map>
#include <set>
#include <string>
#include <vector>

namespace okna::ovsdb {

struct ObservedBridge {
  // Bridge.datapath_type ("" = system).
  std::string datapathType;
  // Port names, including the bridge's own internal port.
  std::vector<std::string> ports;
  // Ports with an Interface that ovs-vswitchd failed to create: port -> why (Interface.error,
  // or "ofport -1").
  std::map<std::string, std::string> failedPorts = {};
  // Ports with an Interface ovs-vswitchd has not numbered yet (no ofport): in the database but
  // not yet in the datapath. Empty at rest; a burst of new ports passes through it.
  std::set<std::string> pendingPorts = {};
  bool operator==(const ObservedBridge&) const = default;
};

/** The part of the local Open_vSwitch database the agent monitors. */
struct ObservedOvs {
  // False until the Open_vSwitch row exists (ovs-vsctl init, or ovs-vswitchd's first start).
  bool hasRoot = false;
  std::map<std::string, std::string> externalIds;
  std::map<std::string, ObservedBridge> bridges;
  bool operator==(const ObservedOvs&) const = default;
};

struct OvsOp {
  enum class Kind {
    SetExternalId,
    DeleteExternalId,
    AddBridge,
    AddPort,
    DeletePort,
    DeleteBridge,
    AddIfacePort,
    SetIfaceExternalIds,
    SetBridgeDatapathType
  };
  Kind kind;
  // SetExternalId: key, value. DeleteExternalId: key. AddBridge: bridge, datapath_type.
  // AddPort / DeletePort: bridge, port. DeleteBridge: bridge.
  // AddIfacePort / SetIfaceExternalIds: bridge, port, Interface external_ids "k=v,k=v".
  // SetBridgeDatapathType: bridge, datapath_type.
  std::string a;
  std::string b;
  std::string c = {};
  bool operator==(const OvsOp&) const = default;
};

/** "set external_ids:ovn-cms-options=a,b", "add bridge br-ex (datapath_type netdev)", ... */
std::string describe(const OvsOp& op);

}  // namespace okna::ovsdb
