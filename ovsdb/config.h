#pragma once
// Configuration of the OVN chassis layer: where the local Open_vSwitch database and the OVN
// Southbound database are, and how the planned gateway failover behaves (YAML section `ovs:`).

#include <chrono>
#include <string>

namespace okna::core {
class YamlField;
}

namespace okna::ovsdb {

// TLS for "ssl:" remotes: PEM files, given to libopenvswitch's stream-ssl. It holds ONE private
// key, certificate and CA certificate per process, so one block serves both the local Open_vSwitch
// DB and the Southbound DB (as one ovn-controller serves both with its --private-key,
// --certificate and --ca-cert). The files are re-read when they change (certificate rotation).
struct OvsSslConfig {
  std::string privateKeyFile;
  std::string certificateFile;
  std::string caCertFile;
  bool configured() const { return !caCertFile.empty(); }
  bool operator==(const OvsSslConfig&) const = default;
};

struct OvsConfig {
  // Off unless the config has an `ovs:` section (or the agent gets --ovsdb): a node without OVS
  // must still become ready, and /readyz waits for the OVSDB connection when this is on.
  bool enabled = false;
  // The local Open_vSwitch database ("unix:PATH", "tcp:IP:PORT", "ssl:IP:PORT").
  std::string remote = "unix:/var/run/openvswitch/db.sock";
  // The OVN Southbound database, read only to see where router gateways are bound. Empty: the
  // `ovn-remote` external_id of the local Open_vSwitch row (what ovn-controller itself uses).
  std::string sbRemote;
  // Key, certificate and CA for ssl: remotes (both databases); required when either is ssl:.
  OvsSslConfig ssl;
  // How long a node losing the network role keeps the external network it owns (bridge mappings,
  // bridges, NIC) while chassisredirect ports are still bound to it; enable-chassis-as-gw itself
  // goes at once (gateway_drain.h). 0: no wait.
  std::chrono::seconds drainTimeout{120};
  // The copy of the ownership record (ownership_state_file.h) across restarts, on the agent's
  // hostPath state directory (the one of placement.stateFile). "": no copy (memory only).
  std::string stateFile = "/var/lib/openkeel-node-agent/ovs-ownership.json";
  // The bridge that gets the external NIC when no bridge mapping names one.
  std::string defaultExternalBridge = "br-ex";
  // --dry-run: read both databases, never write (no transaction, no Neutron liveness keys).
  // Not a config key.
  bool readOnly = false;
};

/** Parses the `ovs:` section (its presence enables the layer unless `enabled: false`). Throws
 *  core::ConfigError naming the field, like every other section's parser. */
OvsConfig parseOvsConfig(const core::YamlField& section);

/** True for names OVS accepts as a bridge or port on the Linux system datapath: 1 to 15
 *  characters (IFNAMSIZ - 1) of [A-Za-z0-9._-]. */
bool isValidOvsIfaceName(const std::string& name);

}  // namespace okna::ovsdb
