#pragma once
// Hands each applier its section of the plan (agent/plan.h), and reports what each applier is
// doing about it for /debug/plan. The appliers run no planner of their own; the agent knows them
// through the one applier contract (core/applier.h) only.

#include <nlohmann/json_fwd.hpp>

#include "agent/plan.h"
#include "core/applier.h"

namespace okna::ovsdb {
struct ChassisSection;
}
namespace okna::placement {
struct PlacementSection;
}

namespace okna::agent {

using ChassisApplier = core::Applier<ovsdb::ChassisSection>;
using PlacementApplier = core::Applier<placement::PlacementSection>;
using MetadataApplier = core::Applier<MetadataIntent>;

/** The live appliers; null: not configured (no ovs: section, metadata off, ...). */
struct PlanAppliers {
  ChassisApplier* chassis = nullptr;
  PlacementApplier* placement = nullptr;
  MetadataApplier* metadata = nullptr;
};

/** The chassis gets plan.chassis (and the Node, for the host's NIC check), Placement its section
 *  with whether the pods are known (`podsKnown`; before, it keeps its previous state), the
 *  metadata service its on/off decision. */
void handPlan(const Plan& plan, const k8s::NodeInfo& node, bool podsKnown,
              const PlanAppliers& appliers);

/** {"ovs": {...}, "placement": {...}, "metadata": {...}}: each configured applier's own view of
 *  what it does about its section (drain in progress, reservation held back by the step, ...). */
nlohmann::json appliersJson(const PlanAppliers& appliers, bool podsKnown);

}  // namespace okna::agent
