#pragma once
// Kubernetes required node affinity (nodeSelectorTerms), evaluated exactly as the scheduler
// does: terms are ORed, the requirements of a term ANDed, and an empty term matches nothing.

#include <string>
#include <vector>

#include "core/result.h"
#include "k8s/objects.h"

namespace okna::agent {

struct SelectorRequirement {
  std::string key;
  // In, NotIn, Exists, DoesNotExist, Gt, Lt.
  std::string op;
  std::vector<std::string> values;
};

struct SelectorTerm {
  std::vector<SelectorRequirement> matchExpressions;
  // Only metadata.name with In / NotIn, as the API server allows.
  std::vector<SelectorRequirement> matchFields;
};

/** Rejects what the API server's validation rejects; `path` names the field in messages. */
core::Status validateSelectorTerms(const std::vector<SelectorTerm>& terms, const std::string& path);

/** True when the node matches at least one term. Terms must have passed validation. */
bool matchesSelectorTerms(const std::vector<SelectorTerm>& terms, const k8s::StringMap& labels,
                          const std::string& nodeName);

/** A Kubernetes label key: [prefix/]name, prefix a DNS subdomain, name 1-63 chars. */
bool isValidLabelKey(const std::string& key);

}  // namespace okna::agent
