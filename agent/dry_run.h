#pragma once
// --dry-run: the planners on a node dump (and optionally its pods), printing the plan and
// touching nothing.

#include <iosfwd>
#include <string>

#include "agent/config.h"

namespace okna::agent {

struct DryRunOptions {
  // `kubectl get node NAME -o json|yaml`.
  std::string nodeFile;
  // `kubectl get pods -A --field-selector spec.nodeName=NAME -o json` (a PodList); optional.
  std::string podsFile;
  // "text" or "json".
  std::string output = "text";
  // --cleanup: what cleaning the node would do (the Node as if it had no role and no annotation,
  // every metadata namespace retired, the provider closed, the state files removed).
  bool cleanup = false;
};

/** Prints the plan to `out`, or an error naming the file and the problem to `err`. Exit code. */
int runDryRun(const AgentConfig& config, const DryRunOptions& options, std::ostream& out,
              std::ostream& err);
/** Same; with a non-empty `ovsdb` remote it also reads that live database and prints the diff
 *  it would apply ("ovs": {"diff": {"ops", "notes"}}), still writing nothing. */
int runDryRun(const AgentConfig& config, const DryRunOptions& options, const std::string& ovsdb,
              std::ostream& out, std::ostream& err);

}  // namespace okna::agent
