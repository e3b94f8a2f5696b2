// decideChassis, table-driven: the external NIC's safety check (what the host says about the
// labelled NIC), the gateway drain's step (ownership record, Southbound, time, the drain so far),
// and what is submitted (the plan with both applied and the record's copy), with the reasons.
#include "chassis/chassis_decision.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace okna::ovsdb::decision_test {
namespace {

using What = GatewayDrainStep::What;
using Strings = std::vector<std::string>;
using namespace std::chrono_literals;

constexpr std::int64_t kNow = 1'700'000'000;
using namespace okna::ovsdb;
const std::set<std::string> kNetwork{"network"};
const std::set<std::string> kCompute{"compute"};

k8s::NodeInfo node(bool nicLabel, bool addressMoves = false) {
  k8s::NodeInfo n;
  n.name = "net-1";
  n.internalIps = {"10.0.0.5"};
  n.annotations[kBridgeMappingsKey] = "physnet1:br-ex";
  if (nicLabel) n.labels[kExternalNicKey] = "eth1";
  if (addressMoves) n.annotations[kExternalNicAddressMovesKey] = "true";
  return n;
}

OwnershipRecord ownsGateway(std::int64_t drainSince = 0) {
  OwnershipRecord r;
  r.cmsItems = {kGatewayItem};
  r.mappings = {"physnet1:br-ex"};
  r.bridges = {"br-ex"};
  r.drainSince = drainSince;
  return r;
}

ChassisObserved observed(std::optional<OwnershipRecord> record, bool sbSynced, Strings ports,
                         std::string systemId = "chassis-1") {
  ChassisObserved o;
  o.hasRoot = true;
  o.systemId = std::move(systemId);
  o.ownership = std::move(record);
  o.sbSynced = sbSynced;
  o.gatewayPorts = std::move(ports);
  return o;
}

const NicFacts kSafe{false, {"192.0.2.7"}};
const NicFacts kDefaultRoute{true, {}};
const NicFacts kInternalIp{false, {"10.0.0.5"}};

struct Case {
  const char* name;
  std::set<std::string> roles;
  k8s::NodeInfo node;
  NicFacts nic;
  std::optional<ChassisObserved> observed;
  GatewayDrainState drain = {};
  bool inFlight = false;
  // Expected:
  bool refused = false;
  bool nicPlugged = false;
  bool submit = false;
  What step = What::None;
  bool hold = false;
  std::int64_t since = 0;
  std::size_t reasons = 0;
};

std::vector<Case> cases() {
  const auto synced = [](Strings ports) { return observed(ownsGateway(), true, std::move(ports)); };
  return {
      {"NoLabelNoReplica", kCompute, node(false), kDefaultRoute, std::nullopt},
      {"SafeNicPluggedNoReplica",
       kCompute,
       node(true),
       kSafe,
       std::nullopt,
       {},
       false,
       false,
       true},
      {"NicWithDefaultRouteRefused",
       kCompute,
       node(true),
       kDefaultRoute,
       std::nullopt,
       {},
       false,
       true,
       false,
       false,
       What::None,
       false,
       0,
       1},
      {"NicWithInternalIpRefused",
       kCompute,
       node(true),
       kInternalIp,
       std::nullopt,
       {},
       false,
       true,
       false,
       false,
       What::None,
       false,
       0,
       1},
      {"AddressMovesAnnotationAllowsIt",
       kCompute,
       node(true, true),
       kDefaultRoute,
       std::nullopt,
       {},
       false,
       false,
       true},
      {"NoRootNoSubmit",
       kCompute,
       node(true),
       kSafe,
       ChassisObserved{},
       {},
       false,
       false,
       true,
       false},
      {"RoleKeptNothingToDrain",
       kNetwork,
       node(true),
       kSafe,
       synced({"cr-lrp-1"}),
       {},
       false,
       false,
       true,
       true},
      {"RoleGoneSouthboundNotSyncedWaits",
       kCompute,
       node(false),
       kSafe,
       observed(ownsGateway(), false, {}),
       {},
       false,
       false,
       false,
       true,
       What::Waiting,
       true,
       kNow,
       1},
      {"RoleGoneGatewaysBoundStarts",
       kCompute,
       node(false),
       kSafe,
       synced({"cr-lrp-1"}),
       {},
       false,
       false,
       false,
       true,
       What::Started,
       true,
       kNow,
       1},
      {"RoleGoneNothingBoundNotNeeded",
       kCompute,
       node(false),
       kSafe,
       synced({}),
       {},
       false,
       false,
       false,
       true,
       What::NotNeeded,
       false,
       0,
       1},
      {"RoleGoneNoChassisNotNeeded",
       kCompute,
       node(false),
       kSafe,
       observed(ownsGateway(), false, {}, ""),
       {},
       false,
       false,
       false,
       true,
       What::NotNeeded,
       false,
       0,
       1},
      {"FlagNotOursNoDrain",
       kCompute,
       node(false),
       kSafe,
       observed(std::nullopt, true, {"cr-1"}),
       {},
       false,
       false,
       false,
       true,
       What::None,
       false,
       0,
       0},
      {"FlagInFlightCountsAsOurs",
       kCompute,
       node(false),
       kSafe,
       observed(std::nullopt, true, {"cr-1"}),
       {},
       true,
       false,
       false,
       true,
       What::Started,
       true,
       kNow,
       1},
      {"RecordedDrainResumes",
       kCompute,
       node(false),
       kSafe,
       observed(ownsGateway(kNow - 30), true, {"cr-1"}),
       {},
       false,
       false,
       false,
       true,
       What::Started,
       true,
       kNow - 30,
       1},
      {"RecordedDrainPastTimeoutEnds",
       kCompute,
       node(false),
       kSafe,
       observed(ownsGateway(kNow - 500), true, {"cr-1"}),
       {},
       false,
       false,
       false,
       true,
       What::TimedOut,
       false,
       0,
       1},
      {"RunningDrainHoldsQuietly", kCompute, node(false), kSafe, synced({"cr-1"}),
       GatewayDrainState{kNow - 10, false, true, false}, false, false, false, true, What::None,
       true, kNow - 10, 1},
      {"RunningDrainGatewaysLeft", kCompute, node(false), kSafe, synced({}),
       GatewayDrainState{kNow - 10, false, true, false}, false, false, false, true, What::Drained,
       false, 0, 1},
      {"RoleBackCancels", kNetwork, node(false), kSafe, synced({"cr-1"}),
       GatewayDrainState{kNow - 10, false, true, false}, false, false, false, true, What::Cancelled,
       false, 0, 0},
      {"RefusedNicAndHoldBothSaid",
       kCompute,
       node(true),
       kDefaultRoute,
       synced({"cr-1"}),
       {},
       false,
       true,
       false,
       true,
       What::Started,
       true,
       kNow,
       2},
  };
}

class DecideChassis : public ::testing::TestWithParam<Case> {};

TEST_P(DecideChassis, Decides) {
  const Case& c = GetParam();
  OvsConfig config;
  const DesiredChassis planned = planChassis(config, c.node, c.roles);
  ChassisDecisionInputs in;
  in.externalNic = c.nic;
  in.observed = c.observed;
  in.drain = c.drain;
  in.gatewayFlagInFlight = c.inFlight;
  in.ownershipCopy = {OwnershipCopy::State::Known, ownsGateway(), "state file", ""};
  in.now = kNow;
  in.drainTimeout = 120s;
  const ChassisDecision d = decideChassis(planned, c.node, in);

  EXPECT_EQ(!d.refusedNic.empty(), c.refused) << d.refusedNic;
  bool plugged = false;
  for (const auto& b : d.effective.bridges)
    for (const auto& p : b.ports) plugged |= p == "eth1";
  EXPECT_EQ(plugged, c.nicPlugged);
  EXPECT_EQ(d.checked.keepOwnedPorts, c.refused || planned.keepOwnedPorts);
  EXPECT_EQ(d.planWarnings, planned.warnings.size());
  EXPECT_EQ(d.checked.warnings.size(), planned.warnings.size() + (c.refused ? 1 : 0));
  EXPECT_EQ(d.submit, c.submit);
  EXPECT_EQ(d.drain.what, c.step) << drainStepName(d.drain.what) << " " << d.drain.why;
  EXPECT_EQ(d.effective.holdOwned, c.hold);
  EXPECT_EQ(d.effective.drainSince, c.since);
  EXPECT_EQ(d.drain.state.since, c.since);
  EXPECT_EQ(d.reasons.size(), c.reasons) << nlohmann::json(d.reasons).dump();
  // What is submitted is the checked plan plus the drain and the copy, nothing else.
  DesiredChassis expected = d.checked;
  expected.holdOwned = c.hold;
  expected.drainSince = c.since;
  expected.ownershipCopy = in.ownershipCopy;
  EXPECT_EQ(d.effective, expected);
  // Pure: the same inputs, the same decision.
  EXPECT_EQ(decisionToJson(decideChassis(planned, c.node, in)).dump(), decisionToJson(d).dump());
}

INSTANTIATE_TEST_SUITE_P(Table, DecideChassis, ::testing::ValuesIn(cases()),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(DecideChassisJson, SaysWhatIsSubmittedAndWhy) {
  OvsConfig config;
  const k8s::NodeInfo n = node(true);
  ChassisDecisionInputs in;
  in.externalNic = kInternalIp;
  in.observed = observed(ownsGateway(kNow - 20), false, {});
  in.now = kNow;
  const auto j = decisionToJson(decideChassis(planChassis(config, n, kCompute), n, in));
  EXPECT_EQ(j["submit"], true);
  EXPECT_NE(j["refusedNic"].get<std::string>().find("the node's InternalIP 10.0.0.5"),
            std::string::npos)
      << j.dump(2);
  EXPECT_EQ(j["drain"]["step"], "Waiting");
  EXPECT_EQ(j["drain"]["since"], kNow - 20);
  EXPECT_EQ(j["drain"]["holdOwned"], true);
  ASSERT_EQ(j["reasons"].size(), 2u);
  EXPECT_NE(j["reasons"][1].get<std::string>().find("Southbound is not synced"), std::string::npos);
  // The deadline, not the time left: the same text whenever it is decided.
  EXPECT_NE(j["reasons"][1].get<std::string>().find("2023-11-14T22:15:"), std::string::npos)
      << j["reasons"][1];
  EXPECT_EQ(j["effective"]["bridges"], nlohmann::json::parse(R"([{"name":"br-ex","ports":[]}])"));
}

TEST(DecideChassisJson, ExternalNicOf) {
  EXPECT_EQ(externalNicOf(node(true)), "eth1");
  EXPECT_EQ(externalNicOf(node(false)), "");
}

}  // namespace
}  // namespace okna::ovsdb::decision_test
