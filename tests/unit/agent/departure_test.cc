// decideDeparture over every kind of stop (departure.h), and the departure: section's parsing.
#include "agent/departure.h"

#include <gtest/gtest.h>

#include "agent/config.h"

namespace okna::agent {
namespace {

using Roles = std::set<std::string>;

DepartureConfig podFor(Roles roles, Roles metadataRoles = {"compute", "network"}) {
  DepartureConfig c;
  c.roles = std::move(roles);
  c.metadataRoles = std::move(metadataRoles);
  return c;
}

RolesAtStop read(Roles roles) {
  return {std::move(roles), "the API server"};
}

TEST(DecideDeparture, WithoutDepartureRolesEveryStopKeepsTheHost) {
  const DepartureDecision d = decideDeparture(DepartureConfig{}, read({}));
  EXPECT_FALSE(d.finish);
  EXPECT_NE(d.reason.find("departure.roles is empty"), std::string::npos) << d.reason;
}

TEST(DecideDeparture, UnknownRolesKeepTheHostAndSayHowToFinishByHand) {
  const DepartureDecision d =
      decideDeparture(podFor({"compute"}), {std::nullopt, "the Node is deleted"});
  EXPECT_FALSE(d.finish);
  EXPECT_NE(d.reason.find("the Node is deleted"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("--cleanup"), std::string::npos) << d.reason;
}

// A rollout, a node drain, a kubelet restart: the role is still there.
TEST(DecideDeparture, ARoleOfThePodStillOnTheNodeIsARestart) {
  for (const Roles& now : {Roles{"compute"}, Roles{"compute", "network"}}) {
    const DepartureDecision d = decideDeparture(podFor({"compute"}), read(now));
    EXPECT_FALSE(d.finish) << d.reason;
    EXPECT_NE(d.reason.find("still has the role compute"), std::string::npos) << d.reason;
  }
  // One DaemonSet for both roles: losing one of them is the live agent's business.
  EXPECT_FALSE(decideDeparture(podFor({"compute", "network"}), read({"network"})).finish);
}

// The -nocompute pod is replaced when its node gains the compute role: a handover, not a loss.
TEST(DecideDeparture, ANetworkPodWhoseNodeGainedComputeLeavesTheHostForItsSuccessor) {
  EXPECT_FALSE(decideDeparture(podFor({"network"}), read({"compute", "network"})).finish);
}

TEST(DecideDeparture, ComputeLostOnANodeThatKeepsTheNetworkRole) {
  // Two DaemonSets, metadata on compute nodes only: nobody serves the namespaces any more.
  DepartureDecision d = decideDeparture(podFor({"compute"}, {"compute"}), read({"network"}));
  EXPECT_TRUE(d.finish);
  EXPECT_TRUE(d.retireMetadata);
  EXPECT_EQ(d.lost, Roles{"compute"});
  EXPECT_NE(d.reason.find("no longer has the role compute"), std::string::npos) << d.reason;
  // metadata.onNetworkNodes: the network role's agent serves them: they stay for it.
  d = decideDeparture(podFor({"compute"}, {"compute", "network"}), read({"network"}));
  EXPECT_TRUE(d.finish);
  EXPECT_FALSE(d.retireMetadata);
  EXPECT_NE(d.reason.find("stay for the role still here"), std::string::npos) << d.reason;
}

TEST(DecideDeparture, EveryRoleLostFinishesEverything) {
  const DepartureDecision d = decideDeparture(podFor({"compute", "network"}), read({"storage"}));
  EXPECT_TRUE(d.finish);
  EXPECT_TRUE(d.retireMetadata);
  EXPECT_EQ(d.lost, (Roles{"compute", "network"}));
}

TEST(DecideDeparture, TheSourceOfTheRolesIsInTheReason) {
  const DepartureDecision d = decideDeparture(
      podFor({"network"}), {Roles{}, "the last watched Node; the API server: timed out"});
  EXPECT_TRUE(d.finish);
  EXPECT_NE(d.reason.find("the last watched Node"), std::string::npos) << d.reason;
}

TEST(DepartureConfig, ParsedWithEveryKeyAndDefaults) {
  auto c = parseConfig(
      "departure:\n  roles: [compute]\n  metadataRoles: [compute]\n  timeoutSeconds: 100\n"
      "  readTimeoutSeconds: 2.5\n",
      "agent.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->departure.roles, Roles{"compute"});
  EXPECT_EQ(c->departure.metadataRoles, Roles{"compute"});
  EXPECT_EQ(c->departure.timeout, std::chrono::seconds(100));
  EXPECT_EQ(c->departure.readTimeout, std::chrono::milliseconds(2500));
  auto defaults = parseConfig("{}", "agent.yaml");
  ASSERT_TRUE(defaults);
  EXPECT_TRUE(defaults->departure.roles.empty());
  EXPECT_EQ(defaults->departure.metadataRoles, (Roles{"compute", "network"}));
}

TEST(DepartureConfig, ATypoInARoleIsAnErrorNamingTheField) {
  auto c = parseConfig("departure:\n  roles: [compte]\n", "agent.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("departure.roles"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("unknown role"), std::string::npos) << c.error().message;
  EXPECT_FALSE(parseConfig("departure: {timeoutSeconds: 0}\n", "agent.yaml"));
  EXPECT_FALSE(parseConfig("departure: {role: [compute]}\n", "agent.yaml"));
}

}  // namespace
}  // namespace okna::agent
