#pragma once
// Tests of the Placement applier alone: plan its section the way the agent does (agent/plan.h,
// once per change) and hand it over.

#include <vector>

#include "k8s/objects.h"
#include "placement/reconciler.h"

namespace okna::testing {

inline void planAndUpdate(placement::Reconciler& r, const k8s::NodeInfo& node,
                          const std::vector<k8s::PodInfo>& pods) {
  r.setNode(node.name, node.uid);
  r.update(placement::planPlacement(r.config(), node, pods));
}

}  // namespace okna::testing
