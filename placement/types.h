#pragma once
// Value types shared by the planner, the Placement client and the reconciler.

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace okna::placement {

/** One resource class's inventory, with Placement's field meanings. */
struct Inventory {
  std::int64_t total = 0;
  std::int64_t reserved = 0;
  std::int64_t minUnit = 1;
  std::int64_t maxUnit = 0;
  std::int64_t stepSize = 1;
  double allocationRatio = 1.0;
  bool operator==(const Inventory&) const = default;
};

/** By resource class name. */
using Inventories = std::map<std::string, Inventory>;
using Traits = std::set<std::string>;

struct Provider {
  std::string uuid;
  std::string name;
  // Empty for a root provider.
  std::string parentUuid;
  std::string rootUuid;
  std::int64_t generation = 0;
};

}  // namespace okna::placement
