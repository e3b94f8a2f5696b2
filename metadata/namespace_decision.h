#pragma once
// Per network: create, keep, remove or hold its ovnmeta-<network> namespace, and why. Pure: the
// plan (planner.h: the Southbound view judged with the local evidence), whether metadata is
// active on this node (the agent's plan section) and what is known of the namespaces in, the
// decisions out. The live applier (Reconciler) asks decideNamespace before it ensures or removes
// a namespace; `--dry-run --ovsdb` (agent/dry_run_metadata.cc) prints decideMetadata's answer
// for the host's namespaces, so that both decide alike on the same inputs.
//
//   in the plan, active                       -> create (no namespace yet) or keep
//   in the plan, inactive, set up by the agent -> keep (losing the role never cuts running VMs)
//   in the plan, inactive, not set up         -> hold (none is created)
//   not in the plan, the plan not synced      -> hold (the Southbound's silence proves nothing)
//   not in the plan, synced, set up            -> remove
//   not in the plan, synced, a stray, active   -> remove (left by an earlier agent or Neutron's)
//   not in the plan, synced, a stray, inactive -> hold (an inactive agent prunes nothing)
//   retired (any network, synced or not)      -> remove (the agent leaves a node on which no
//                                                role serves metadata any more: departure.h)

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "metadata/planner.h"

namespace okna::metadata {

enum class NamespaceAction { Create, Keep, Remove, Hold };

struct NamespaceDecision {
  std::string networkId;
  std::string namespaceName;
  NamespaceAction action = NamespaceAction::Hold;
  std::string reason;
  bool operator==(const NamespaceDecision&) const = default;
};

/** What is known of one network's namespace. */
struct NamespaceState {
  // ovnmeta-<network> exists on the host.
  bool present = false;
  // This agent process has it in hand (set up, or being set up or removed).
  bool managed = false;
};

/** The decision for one network (O(log networks): the live applier asks it per event).
 *  `retired`: every namespace goes, whatever the plan says. */
NamespaceDecision decideNamespace(const MetadataPlan& plan, bool active,
                                  const std::string& networkId, NamespaceState state,
                                  bool retired = false);

/** Every network of the plan, of `present` (ovnmeta-* names on the host) and of `managed`
 *  (network ids), sorted by namespace name. */
std::vector<NamespaceDecision> decideNamespaces(const MetadataPlan& plan, bool active,
                                                const std::set<std::string>& present,
                                                const std::set<std::string>& managed = {},
                                                bool retired = false);

struct MetadataDecisionInputs {
  // The agent's plan section: metadata runs here (compute or network role, metadata.enabled).
  bool active = false;
  bool ipv6 = true;
  // What the Southbound's silence is judged by (planner.h).
  LocalEvidence local;
  // The ovnmeta-* namespaces on the host.
  std::set<std::string> namespaces;
  // No role of the node serves metadata any more (--cleanup): every namespace goes.
  bool retired = false;
};

struct MetadataDecision {
  MetadataPlan plan;
  std::vector<NamespaceDecision> namespaces;
};

/** planMetadata, then decideNamespaces with nothing in hand (a new agent process). */
MetadataDecision decideMetadata(const ovsdb::SbMetadataView& view,
                                const MetadataDecisionInputs& in);

/** "create", "keep", "remove", "hold". */
const char* actionName(NamespaceAction action);
/** [{"network", "namespace", "action", "reason"}]: equal JSON, equal decisions. */
nlohmann::json decisionsToJson(const std::vector<NamespaceDecision>& decisions);

}  // namespace okna::metadata
