#pragma once
// Tests of the chassis applier alone: plan its section the way the agent does (agent/plan.h,
// once per change) and hand it over.

#include <set>
#include <string>

#include "chassis/chassis_reconciler.h"
#include "k8s/objects.h"

namespace okna::testing {

inline void planAndUpdate(ovsdb::ChassisReconciler& r, const k8s::NodeInfo& node,
                          const std::set<std::string>& roles) {
  r.update(node, ovsdb::planChassis(r.config(), node, roles));
}

}  // namespace okna::testing
