// The zone membership plan (issue #29 § 2): join, create, move, leave, and aggregates the agent
// did not create or join kept, in Nova and in Placement.

#include "placement/zones.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "placement/desired.h"

namespace okna::placement {
namespace {

constexpr const char* kHost = "cmp-1";

NovaAggregate agg(int id, const std::string& name, std::set<std::string> hosts,
                  std::map<std::string, std::string> metadata = {}) {
  return {id, "uuid-" + std::to_string(id), name, std::move(hosts), std::move(metadata)};
}

NovaAggregate zoneAgg(int id, const std::string& zone, std::set<std::string> hosts = {}) {
  return agg(id, "az-" + zone, std::move(hosts), {{"availability_zone", zone}});
}

TEST(ZoneLabelTest, UsableNamesOnly) {
  std::vector<std::string> w;
  k8s::NodeInfo n;
  EXPECT_EQ(zoneOf(n, w), std::nullopt);
  n.labels[kZoneLabel] = "";
  EXPECT_EQ(zoneOf(n, w), std::nullopt);
  n.labels[kZoneLabel] = "eu-west-1a";
  EXPECT_EQ(zoneOf(n, w), "eu-west-1a");
  EXPECT_TRUE(w.empty());
  n.labels[kZoneLabel] = "zone:a";
  EXPECT_EQ(zoneOf(n, w), std::nullopt);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("is not a usable zone name"), std::string::npos);
}

TEST(ZonePlanTest, MissingAggregateIsCreated) {
  const auto p = planZoneMembership("a", kHost, {agg(7, "gpu-hosts", {kHost})}, std::nullopt);
  EXPECT_TRUE(p.create);
  EXPECT_EQ(p.aggregateName, "az-a");
  EXPECT_FALSE(p.join);
  EXPECT_FALSE(p.leave) << "gpu-hosts is not the agent's";
  EXPECT_EQ(p.joinedAfter, (JoinedZone{"az-a", ""}));
  EXPECT_TRUE(p.problems.empty());
}

TEST(ZonePlanTest, ExistingAggregateIsJoined) {
  const auto p = planZoneMembership("a", kHost, {zoneAgg(3, "a", {"cmp-2"})}, std::nullopt);
  EXPECT_FALSE(p.create);
  ASSERT_TRUE(p.join);
  EXPECT_EQ(p.join->id, 3);
  EXPECT_EQ(p.joinedAfter, (JoinedZone{"az-a", "uuid-3"}));
}

TEST(ZonePlanTest, AlreadyMemberIsSettled) {
  const auto p =
      planZoneMembership("a", kHost, {zoneAgg(3, "a", {kHost})}, JoinedZone{"az-a", "uuid-3"});
  EXPECT_TRUE(p.settled());
  EXPECT_EQ(p.joinedAfter, (JoinedZone{"az-a", "uuid-3"}));
  // Member by an operator's hand before the agent ran: adopted as the agent's zone, not re-added.
  EXPECT_TRUE(planZoneMembership("a", kHost, {zoneAgg(3, "a", {kHost})}, std::nullopt).settled());
}

TEST(ZonePlanTest, LabelChangeMovesTheHost) {
  const auto p = planZoneMembership("b", kHost, {zoneAgg(3, "a", {kHost}), zoneAgg(4, "b")},
                                    JoinedZone{"az-a", "uuid-3"});
  ASSERT_TRUE(p.leave);
  EXPECT_EQ(p.leave->id, 3);
  ASSERT_TRUE(p.join);
  EXPECT_EQ(p.join->id, 4);
  EXPECT_EQ(p.joinedAfter, (JoinedZone{"az-b", "uuid-4"}));
  // The new zone's aggregate does not exist yet: left, and created.
  const auto q =
      planZoneMembership("c", kHost, {zoneAgg(3, "a", {kHost})}, JoinedZone{"az-a", "uuid-3"});
  EXPECT_TRUE(q.leave);
  EXPECT_TRUE(q.create);
}

TEST(ZonePlanTest, LabelGoneLeaves) {
  const auto p = planZoneMembership(std::nullopt, kHost, {zoneAgg(3, "a", {kHost})},
                                    JoinedZone{"az-a", "uuid-3"});
  ASSERT_TRUE(p.leave);
  EXPECT_EQ(p.leave->id, 3);
  EXPECT_FALSE(p.create);
  EXPECT_FALSE(p.join);
  EXPECT_EQ(p.joinedAfter, std::nullopt);
}

TEST(ZonePlanTest, AggregatesTheAgentDidNotJoinAreNeverLeft) {
  // No zone, and the host is in a zone aggregate and an isolation aggregate an operator set.
  const auto p = planZoneMembership(
      std::nullopt, kHost,
      {zoneAgg(3, "a", {kHost}), agg(9, "tenant-x", {kHost}, {{"filter_tenant_id", "x"}})},
      std::nullopt);
  EXPECT_TRUE(p.settled());
  EXPECT_EQ(p.joinedAfter, std::nullopt);
}

TEST(ZonePlanTest, RenamedJoinedAggregateIsFoundByUuid) {
  NovaAggregate renamed = zoneAgg(3, "a", {kHost});
  renamed.name = "zone-a-old";
  const auto p = planZoneMembership(std::nullopt, kHost, {renamed}, JoinedZone{"az-a", "uuid-3"});
  ASSERT_TRUE(p.leave);
  EXPECT_EQ(p.leave->id, 3);
}

TEST(ZonePlanTest, JoinedAggregateDeletedByAnOperatorIsForgotten) {
  const auto p = planZoneMembership(std::nullopt, kHost, {}, JoinedZone{"az-a", "uuid-3"});
  EXPECT_TRUE(p.settled());
  EXPECT_EQ(p.joinedAfter, std::nullopt);
}

TEST(ZonePlanTest, OurNameWithAnotherZoneIsAProblemNotJoined) {
  const auto p = planZoneMembership(
      "a", kHost, {agg(5, "az-a", {}, {{"availability_zone", "other"}})}, std::nullopt);
  EXPECT_TRUE(p.settled());
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("aggregate az-a (id 5) has availability_zone=other, not a"),
            std::string::npos)
      << p.problems[0];
  const auto q = planZoneMembership("a", kHost, {agg(5, "az-a", {})}, std::nullopt);
  ASSERT_EQ(q.problems.size(), 1u);
  EXPECT_NE(q.problems[0].find("availability_zone=(unset)"), std::string::npos);
}

TEST(ZonePlanTest, HostInAnotherZoneTheAgentDidNotJoinBlocksTheMove) {
  const auto p = planZoneMembership(
      "b", kHost, {agg(8, "manual", {kHost}, {{"availability_zone", "a"}})}, std::nullopt);
  EXPECT_TRUE(p.settled()) << "Nova would refuse a second zone";
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("remove it from manual to join az-b"), std::string::npos)
      << p.problems[0];
  // The same zone under another name is no conflict.
  const auto q = planZoneMembership(
      "a", kHost, {agg(8, "manual", {kHost}, {{"availability_zone", "a"}})}, std::nullopt);
  EXPECT_TRUE(q.problems.empty());
  EXPECT_TRUE(q.create);
}

TEST(ZonePlanTest, AProblemKeepsWhatWasJoined) {
  const auto p = planZoneMembership(
      "b", kHost, {zoneAgg(3, "a", {kHost}), agg(5, "az-b", {}, {{"availability_zone", "x"}})},
      JoinedZone{"az-a", "uuid-3"});
  EXPECT_TRUE(p.settled()) << "not left while the operator decides";
  EXPECT_EQ(p.joinedAfter, (JoinedZone{"az-a", "uuid-3"}));
}

TEST(ZoneConfigTest, PlannedFromTheLabelAndShownInTheDryRun) {
  PlacementConfig c;
  k8s::NodeInfo n;
  n.name = kHost;
  n.uid = "u";
  n.labels[kZoneLabel] = "zone-a";
  const auto t = planPlacement(c, n, {});
  EXPECT_EQ(t.zone, "zone-a");
  EXPECT_EQ(toDryRunJson(t)["availabilityZone"],
            (nlohmann::json{{"zone", "zone-a"}, {"aggregate", "az-zone-a"}}));
  c.availabilityZones.enabled = false;
  EXPECT_EQ(planPlacement(c, n, {}).zone, std::nullopt);
}

TEST(PlacementAggregatesTest, ForeignAggregatesAreKept) {
  const std::set<std::string> have{"shared-disk-az-a", "uuid-3", "isolation"};
  EXPECT_EQ(placementAggregates(have, "uuid-3", "uuid-4"),
            (std::set<std::string>{"shared-disk-az-a", "uuid-4", "isolation"}));
  EXPECT_EQ(placementAggregates(have, "uuid-3", std::nullopt),
            (std::set<std::string>{"shared-disk-az-a", "isolation"}));
  EXPECT_EQ(placementAggregates(have, std::nullopt, "uuid-3"), have) << "already there";
  EXPECT_EQ(placementAggregates({}, std::nullopt, std::nullopt), std::set<std::string>{});
}

}  // namespace
}  // namespace okna::placement
