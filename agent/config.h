#pragma once
// The agent's configuration: a YAML file (--config) whose every key is checked, then CLI flags
// that override it. Each later component (OVS, Placement, metadata) adds its own section here.

#include <chrono>
#include <cstddef>
#include <string>

#include "agent/departure.h"
#include "agent/roles.h"
#include "core/backoff.h"
#include "core/logging.h"
#include "core/result.h"
#include "metadata/config.h"
#include "ovsdb/config.h"
#include "placement/config.h"

namespace okna::agent {

struct KubernetesConfig {
  // Empty: $KUBECONFIG if set, else in-cluster credentials.
  std::string kubeconfig;
  // kubeconfig context; empty = current-context.
  std::string context;
  std::chrono::seconds watchTimeoutMin{240};
  std::chrono::seconds watchTimeoutMax{480};
  core::BackoffConfig backoff;
  // An informer failing (no LIST, no WATCH) for this long makes /readyz fail until it recovers.
  std::chrono::seconds failingAfter{60};
};

struct HealthConfig {
  // host:port of /healthz, /livez, /readyz: on every address, where the kubelet probes it. 19874
  // is outside the kubelet's, node-exporter's and OVS/OVN's ports and below the Linux ephemeral
  // range.
  std::string listen = "0.0.0.0:19874";
  // host:port of /metrics and /debug/plan, which name networks, VM addresses and the OVS
  // configuration: loopback unless an operator opens it (e.g. 0.0.0.0:19875 for a scraper);
  // empty: not served.
  std::string adminListen = "127.0.0.1:19875";
  // Open connections per listener, from this host (the kubelet's probes) and, apart, from other
  // hosts; more are closed at accept. Probes and scrapes need a few.
  std::size_t maxConnections = 64;
};

struct AgentConfig {
  // Empty: --node-name, else $NODE_NAME (downward API spec.nodeName).
  std::string nodeName;
  KubernetesConfig kubernetes;
  RolesConfig nodeRoles;
  HealthConfig health;
  core::LogConfig logging;
  // The node's resource provider (active with the compute role).
  placement::PlacementConfig placement;
  // OVN chassis configuration in the local OVSDB (section `ovs:`; off unless present or --ovsdb).
  ovsdb::OvsConfig ovs;
  // The 169.254.169.254 service (section `metadata:`): with the compute or network role and `ovs:`.
  metadata::MetadataConfig metadata;
  // What a stopping agent finishes when its node lost the role its pod runs for (departure.h).
  DepartureConfig departure;
};

/** Parses and validates a config document; errors name file, line, key and reason. */
core::Result<AgentConfig> parseConfig(const std::string& yamlText, const std::string& fileName);
core::Result<AgentConfig> loadConfig(const std::string& path);

/** Splits "host:port" / "[v6]:port" (host: an IP address); the error names `what`. */
core::Result<std::pair<std::string, unsigned short>> parseListenAddress(const std::string& value,
                                                                        const std::string& what);

/** The two listeners of `health` together, as the agent starts them (after the flags): each
 *  address valid and not the same port for both. The error names the key and its flag. */
core::Status checkHealthListeners(const HealthConfig& health);

}  // namespace okna::agent
