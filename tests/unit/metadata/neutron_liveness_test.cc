// planNeutronLiveness: the Chassis_Private keys neutron-server reads, as Neutron master's OVN
// metadata agent keeps them (issue 28): the agent id once, neutron:ovn-bridge, the nb_cfg echo
// (the first at once, later ones after the caller's random delay), the OVN Neutron agent's keys
// removed.
#include "metadata/neutron_liveness.h"

#include <gtest/gtest.h>

#include "metadata/metadata_ports.h"

namespace okna::ovsdb {
namespace {

using namespace std::chrono_literals;
using TimePoint = NeutronLivenessState::TimePoint;

const TimePoint kT0{std::chrono::seconds(1000)};

NeutronLivenessInputs inputs(std::map<std::string, std::string> ids, long long nbCfg,
                             TimePoint now = kT0, std::chrono::milliseconds delay = 4000ms) {
  NeutronLivenessInputs in;
  in.ids = std::move(ids);
  in.nbCfg = nbCfg;
  in.chassisName = "hv-1";
  in.now = now;
  in.randomDelay = delay;
  return in;
}

std::map<std::string, std::string> asMap(const NeutronLivenessPlan& p) {
  return {p.set.begin(), p.set.end()};
}

TEST(NeutronLiveness, AFreshRowGetsEveryKeyAtOnce) {
  const auto plan = planNeutronLiveness(inputs({}, 7), {});
  EXPECT_EQ(asMap(plan), (std::map<std::string, std::string>{
                             {"neutron:ovn-metadata-id", neutronMetadataAgentId("hv-1")},
                             {"neutron:ovn-bridge", "br-int"},
                             {"neutron:ovn-metadata-sb-cfg", "7"}}));
  EXPECT_TRUE(plan.remove.empty());
  EXPECT_TRUE(plan.echoesNbCfg);
  EXPECT_FALSE(plan.scheduled) << "the first echo is not delayed (Neutron's first_run)";
  EXPECT_TRUE(plan.next.echoed);
  EXPECT_FALSE(plan.next.echoDueAt);
}

TEST(NeutronLiveness, NothingToWriteWhenInLine) {
  const std::map<std::string, std::string> ids{
      {"neutron:ovn-metadata-id", "kept-as-it-is"},  // never overwritten
      {"neutron:ovn-bridge", "br-int"},
      {"neutron:ovn-metadata-sb-cfg", "7"},
      {"foreign", "x"}};
  const auto plan = planNeutronLiveness(inputs(ids, 7), {true, std::nullopt});
  EXPECT_TRUE(plan.set.empty());
  EXPECT_TRUE(plan.remove.empty());
  // nb_cfg unknown (no SB_Global yet): nothing to echo either.
  EXPECT_TRUE(planNeutronLiveness(inputs(ids, -1), {}).set.empty());
}

TEST(NeutronLiveness, LaterEchoesWaitTheRandomDelayAndABumpMeanwhileIsCarried) {
  std::map<std::string, std::string> ids{{"neutron:ovn-metadata-id", "id"},
                                         {"neutron:ovn-bridge", "br-int"},
                                         {"neutron:ovn-metadata-sb-cfg", "7"}};
  NeutronLivenessState state{true, std::nullopt};
  // nb_cfg 8: scheduled 4 s out, nothing written now.
  auto plan = planNeutronLiveness(inputs(ids, 8, kT0, 4000ms), state);
  EXPECT_TRUE(plan.set.empty());
  ASSERT_TRUE(plan.scheduled);
  EXPECT_EQ(*plan.scheduled, 4000ms);
  ASSERT_TRUE(plan.next.echoDueAt);
  EXPECT_EQ(*plan.next.echoDueAt, kT0 + 4000ms);
  state = plan.next;
  // nb_cfg 9 at +1 s: the pending echo carries it; no new delay is drawn.
  plan = planNeutronLiveness(inputs(ids, 9, kT0 + 1s, 9000ms), state);
  EXPECT_TRUE(plan.set.empty());
  EXPECT_FALSE(plan.scheduled);
  EXPECT_EQ(*plan.next.echoDueAt, kT0 + 4000ms);
  state = plan.next;
  // Due: the latest nb_cfg is written.
  plan = planNeutronLiveness(inputs(ids, 9, kT0 + 4000ms), state);
  EXPECT_EQ(asMap(plan),
            (std::map<std::string, std::string>{{"neutron:ovn-metadata-sb-cfg", "9"}}));
  EXPECT_TRUE(plan.echoesNbCfg);
  EXPECT_FALSE(plan.next.echoDueAt);
  // Written by someone else meanwhile (another agent run): nothing pending any more.
  ids["neutron:ovn-metadata-sb-cfg"] = "10";
  plan = planNeutronLiveness(inputs(ids, 10, kT0 + 5s), {true, kT0 + 9s});
  EXPECT_TRUE(plan.set.empty());
  EXPECT_FALSE(plan.next.echoDueAt);
}

TEST(NeutronLiveness, NoDelayConfiguredEchoesAtOnce) {
  const std::map<std::string, std::string> ids{{"neutron:ovn-metadata-id", "id"},
                                               {"neutron:ovn-bridge", "br-int"},
                                               {"neutron:ovn-metadata-sb-cfg", "7"}};
  const auto plan = planNeutronLiveness(inputs(ids, 8, kT0, 0ms), {true, std::nullopt});
  EXPECT_EQ(asMap(plan),
            (std::map<std::string, std::string>{{"neutron:ovn-metadata-sb-cfg", "8"}}));
}

TEST(NeutronLiveness, TheBridgeFollowsOvnBridge) {
  auto in = inputs({{"neutron:ovn-metadata-id", "id"},
                    {"neutron:ovn-bridge", "br-int"},
                    {"neutron:ovn-metadata-sb-cfg", "7"}},
                   7);
  in.bridge = "br-ovn";
  EXPECT_EQ(asMap(planNeutronLiveness(in, {true, std::nullopt})),
            (std::map<std::string, std::string>{{"neutron:ovn-bridge", "br-ovn"}}));
}

TEST(NeutronLiveness, TheOvnNeutronAgentsKeysAreRemovedOthersKept) {
  // neutron-server reads neutron:ovn-neutron-agent-sb-cfg/-id before the metadata agent's: left
  // by neutron-ovn-agent, a stale value makes the host look dead.
  const std::map<std::string, std::string> ids{
      {"neutron:ovn-metadata-id", "id"},         {"neutron:ovn-bridge", "br-int"},
      {"neutron:ovn-metadata-sb-cfg", "7"},      {"neutron:ovn-neutron-agent-id", "x"},
      {"neutron:ovn-neutron-agent-sb-cfg", "3"}, {"neutron:description-neutron-agent", "d"},
      {"neutron:description-metadata", "kept"}};
  const auto plan = planNeutronLiveness(inputs(ids, 7), {true, std::nullopt});
  EXPECT_TRUE(plan.set.empty());
  EXPECT_EQ(plan.remove, (std::vector<std::string>{"neutron:ovn-neutron-agent-sb-cfg",
                                                   "neutron:ovn-neutron-agent-id",
                                                   "neutron:description-neutron-agent"}));
}

}  // namespace
}  // namespace okna::ovsdb
