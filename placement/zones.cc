#include "placement/zones.h"

#include <algorithm>

namespace okna::placement {

std::optional<std::string> zoneOf(const k8s::NodeInfo& node, std::vector<std::string>& warnings) {
  auto it = node.labels.find(kZoneLabel);
  if (it == node.labels.end() || it->second.empty()) return std::nullopt;
  const std::string& z = it->second;
  // A label value is already [A-Za-z0-9._-]{1,63} when the API server accepted it; checked again
  // because the aggregate's name and Nova's zone are built from it. Nova's AZ names may not hold
  // ':' (it separates zone and host in a boot request) and the aggregate name is at most 255.
  const bool ok = z.size() <= 63 && std::all_of(z.begin(), z.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
                  });
  if (!ok) {
    warnings.push_back("label " + std::string(kZoneLabel) + "=\"" + z +
                       "\" is not a usable zone name; no availability zone");
    return std::nullopt;
  }
  return z;
}

ZonePlan planZoneMembership(const std::optional<std::string>& zone, const std::string& host,
                            const std::vector<NovaAggregate>& aggregates,
                            const std::optional<JoinedZone>& joined) {
  ZonePlan plan;
  plan.zone = zone;
  const NovaAggregate* target = nullptr;
  if (zone) {
    plan.aggregateName = kZoneAggregatePrefix + *zone;
    for (const auto& a : aggregates)
      if (a.name == plan.aggregateName) target = &a;
  }
  // The aggregate the agent joined earlier, found by uuid (a rename by an operator keeps it), by
  // name when its uuid was not known yet.
  const NovaAggregate* previous = nullptr;
  if (joined)
    for (const auto& a : aggregates)
      if ((!joined->uuid.empty() && a.uuid == joined->uuid) ||
          (joined->uuid.empty() && a.name == joined->name))
        previous = &a;

  if (target) {
    auto az = target->metadata.find(kAvailabilityZoneKey);
    if (az == target->metadata.end() || az->second != *zone) {
      // Someone else's aggregate under our naming convention: not joined, not changed.
      plan.problems.push_back("aggregate " + target->name + " (id " + std::to_string(target->id) +
                              ") has " + kAvailabilityZoneKey + "=" +
                              (az == target->metadata.end() ? "(unset)" : az->second) + ", not " +
                              *zone + ": not joined; fix or rename it");
      target = nullptr;
    }
  }
  // Nova refuses a host in two zones: a zone aggregate the agent did not join blocks the move.
  for (const auto& a : aggregates) {
    if (!a.hosts.count(host) || &a == previous || &a == target) continue;
    auto az = a.metadata.find(kAvailabilityZoneKey);
    if (zone && az != a.metadata.end() && az->second != *zone)
      plan.problems.push_back("host " + host + " is in aggregate " + a.name + " (id " +
                              std::to_string(a.id) + ", " + kAvailabilityZoneKey + "=" +
                              az->second + "), which the agent did not join; Nova refuses a " +
                              "second zone: remove it from " + a.name + " to join " +
                              plan.aggregateName);
  }

  if (!plan.problems.empty()) {
    // Nothing is done, and nothing left, while an operator decides.
    if (previous) plan.joinedAfter = JoinedZone{previous->name, previous->uuid};
    return plan;
  }
  if (previous && previous != target && previous->hosts.count(host)) plan.leave = *previous;
  if (target) {
    if (!target->hosts.count(host)) plan.join = *target;
    plan.joinedAfter = JoinedZone{target->name, target->uuid};
  } else if (zone) {
    plan.create = true;
    plan.joinedAfter = JoinedZone{plan.aggregateName, ""};
  }
  return plan;
}

std::set<std::string> placementAggregates(const std::set<std::string>& have,
                                          const std::optional<std::string>& previousZoneUuid,
                                          const std::optional<std::string>& zoneUuid) {
  std::set<std::string> out = have;
  if (previousZoneUuid && previousZoneUuid != zoneUuid) out.erase(*previousZoneUuid);
  if (zoneUuid) out.insert(*zoneUuid);
  return out;
}

}  // namespace okna::placement
