#pragma once
// Whether a stopping agent leaves because its node lost the role its pod runs for, and what it
// then finishes before it exits. Pure: the roles of the Node as read at SIGTERM in, the decision
// out (the agent reads the Node and applies it: agent.h, Agent::shutdown).
//
// A DaemonSet's pod is deleted at once when its node stops matching the DaemonSet's placement
// (a role label removed): no agent would ever finish that role's removal (the planned gateway
// failover, closing the node in Placement, the metadata namespaces). Any other SIGTERM (a
// rollout, a node drain, a kubelet restart, helm uninstall) finds the role still on the Node and
// leaves the host exactly as it is, for the next agent to adopt.
//
//   departure.roles empty                    -> stop (the .deb's unit; any stop keeps the host)
//   the Node's roles unknown                  -> stop (nothing proves the role went)
//   a role of departure.roles still there     -> stop (a restart: the next pod takes over)
//   none left                                 -> finish: the plan of the Node as it is now, with
//                                                the metadata namespaces removed when none of
//                                                departure.metadataRoles is left either

#include <chrono>
#include <optional>
#include <set>
#include <string>

#include "core/yaml_field.h"

namespace okna::agent {

struct DepartureConfig {
  // The roles the pod runs for (the chart renders its DaemonSet's node affinity here).
  std::set<std::string> roles;
  // The roles whose agent serves metadata on a node (this pod's successor included): while one
  // is left, the namespaces stay for it.
  std::set<std::string> metadataRoles{"compute", "network"};
  // At most this long to finish, within the pod's terminationGracePeriodSeconds.
  std::chrono::seconds timeout{140};
  // How long the one GET of the Node at SIGTERM may take.
  std::chrono::milliseconds readTimeout{5000};
};

/** `departure:` of the agent's config; errors name the key. */
DepartureConfig parseDepartureConfig(const core::YamlField& f);

/** The Node's roles as the agent knows them at SIGTERM, and where they come from. */
struct RolesAtStop {
  // nullopt: neither the API server nor the watch gave a Node.
  std::optional<std::set<std::string>> roles;
  // "the API server", "the last watched Node (the API server did not answer: ...)".
  std::string source;
};

struct DepartureDecision {
  // Finish the lost roles' removal before exiting; false: stop, the host as it is.
  bool finish = false;
  // Remove every metadata namespace (no role of the node serves metadata any more).
  bool retireMetadata = false;
  // The roles lost, for the log ("compute", "network").
  std::set<std::string> lost;
  // One sentence for the log.
  std::string reason;
  bool operator==(const DepartureDecision&) const = default;
};

DepartureDecision decideDeparture(const DepartureConfig& config, const RolesAtStop& now);

}  // namespace okna::agent
