#pragma once
// Availability zones as aggregates (seed 000 § 4.3, issue #29 § 2): the pure planner. From the
// node's zone label, Nova's aggregates (os-aggregates) and the one aggregate this agent joined
// (remembered across restarts), what to do in Nova and which aggregates the root provider has in
// Placement. No I/O. Aggregates the agent did not create or join are never touched.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "k8s/objects.h"

namespace okna::placement {

inline constexpr const char* kZoneLabel = "topology.kubernetes.io/zone";
inline constexpr const char* kZoneAggregatePrefix = "az-";
inline constexpr const char* kAvailabilityZoneKey = "availability_zone";

/** An aggregate as Nova's os-aggregates (microversion 2.41+, which adds the uuid) shows it. */
struct NovaAggregate {
  int id = 0;
  std::string uuid;
  std::string name;
  std::set<std::string> hosts;
  std::map<std::string, std::string> metadata;
  bool operator==(const NovaAggregate&) const = default;
};

/** The zone aggregate this agent joined for its host (persisted: only it is ever left). */
struct JoinedZone {
  std::string name;
  std::string uuid;
  bool operator==(const JoinedZone&) const = default;
};

struct ZonePlan {
  // The zone the node should be in (its label), or none.
  std::optional<std::string> zone;
  // az-<zone>: create it (with availability_zone=<zone>) when missing; a duplicate-name answer
  // from Nova (another agent won the race) means "read it again and join".
  std::string aggregateName;
  bool create = false;
  // The aggregate to add the host to (exists, host not in it yet).
  std::optional<NovaAggregate> join;
  // The aggregate the agent joined earlier and the host must leave (zone changed or gone).
  std::optional<NovaAggregate> leave;
  // What the agent will have joined once the plan is applied (to persist); nullopt: nothing.
  std::optional<JoinedZone> joinedAfter;
  // Nothing to do in Nova.
  bool settled() const { return !create && !join && !leave; }
  // Conditions an operator must resolve (an az-<zone> aggregate set to another zone, the host in
  // a zone aggregate the agent did not join): reported, nothing done about them.
  std::vector<std::string> problems;
};

/** The node's zone label, if it is a usable zone name (else a warning). */
std::optional<std::string> zoneOf(const k8s::NodeInfo& node, std::vector<std::string>& warnings);

ZonePlan planZoneMembership(const std::optional<std::string>& zone, const std::string& host,
                            const std::vector<NovaAggregate>& aggregates,
                            const std::optional<JoinedZone>& joined);

/**
 * The root provider's aggregates in Placement: what the server has, minus the zone aggregate the
 * agent added before (when it changed), plus the current one. Every other aggregate (a shared
 * disk's, flavor or tenant isolation, set by Nova or an operator) is kept.
 */
std::set<std::string> placementAggregates(const std::set<std::string>& have,
                                          const std::optional<std::string>& previousZoneUuid,
                                          const std::optional<std::string>& zoneUuid);

}  // namespace okna::placement
