#pragma once
// Configuration of the OVN chassis layer: where the local Open_vSwitch database and the OVN
// Southbound database are, and how the planned gateway failover behaves (YAML section `ovs:`).

#include <chrono>
#include <optional>
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
  // Where ovs-vswitchd keeps its pid file and unixctl socket (vswitchd_probe.h): while it does
  // not answer there, the chassis is not ready (OVSDB still shows the stale ports). "": no check
  // (tcp:/ssl: remotes, or a database without ovs-vswitchd). nullopt (the key left out): the
  // directory of a unix: remote, resolved at the agent's start by resolveVswitchdRunDir; until
  // then (in-process users of this struct) no check.
  std::optional<std::string> vswitchdRunDir;
  // How often that is checked.
  std::chrono::milliseconds vswitchdCheckInterval{2000};
  // Each nb_cfg change after the first is echoed into Chassis_Private
  // external_ids:neutron:ovn-metadata-sb-cfg after a random delay of 0 to this long, as Neutron's
  // metadata agent spreads it (max(min(agent_down_time // 3, 10), 3) s: 10 s with Neutron's
  // defaults), so that a fleet does not write the Southbound at the same instant after each
  // bump (bench/metadata RESULTS.md, measure 8). 0: at once.
  std::chrono::milliseconds livenessDelayMax{10000};
  // The bridge that gets the external NIC when no bridge mapping names one.
  std::string defaultExternalBridge = "br-ex";
  // --dry-run: read both databases, never write (no transaction, no Neutron liveness keys).
  // Not a config key.
  bool readOnly = false;
};

/** Parses the `ovs:` section (its presence enables the layer unless `enabled: false`). Throws
 *  core::ConfigError naming the field, like every other section's parser. */
OvsConfig parseOvsConfig(const core::YamlField& section);

/** ovs.vswitchdRunDir as given, else (nullopt) the directory of a unix: remote, else "". */
std::string resolveVswitchdRunDir(const OvsConfig& config);

/** The run directory of a "unix:PATH" remote (PATH's directory); "" for tcp: and ssl: remotes,
 *  whose ovs-vswitchd is on another host. */
std::string runDirOfRemote(const std::string& remote);

/** True for names OVS accepts as a bridge or port on the Linux system datapath: 1 to 15
 *  characters (IFNAMSIZ - 1) of [A-Za-z0-9._-]. */
bool isValidOvsIfaceName(const std::string& name);

}  // namespace okna::ovsdb
