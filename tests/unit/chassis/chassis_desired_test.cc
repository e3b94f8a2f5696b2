// planChassis: each Node input alone and together, the label encoding of bridge mappings, and
// malformed values that must apply nothing for their key.
#include "chassis/chassis_desired.h"

#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

namespace okna::ovsdb {
namespace {

k8s::NodeInfo node(k8s::StringMap labels, k8s::StringMap annotations = {}) {
  k8s::NodeInfo n;
  n.name = "net-1";
  n.labels = std::move(labels);
  n.annotations = std::move(annotations);
  return n;
}

const std::set<std::string> kNetwork{"network"};
const std::set<std::string> kCompute{"compute"};

TEST(PlanChassis, NothingWithoutInputs) {
  const DesiredChassis d = planChassis({}, node({}), kCompute);
  EXPECT_FALSE(d.gateway);
  EXPECT_TRUE(d.cmsItems().empty());
  EXPECT_TRUE(d.bridgeMappings.empty());
  EXPECT_TRUE(d.bridges.empty());
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_EQ(toDryRunJson(d).dump(), R"({"bridges":[],"external_ids":{}})");
}

TEST(PlanChassis, NetworkRoleMakesAGatewayChassis) {
  const DesiredChassis d = planChassis({}, node({}), kNetwork);
  EXPECT_TRUE(d.gateway);
  EXPECT_EQ(d.cmsItems(), std::vector<std::string>{"enable-chassis-as-gw"});
}

TEST(PlanChassis, ZoneIsAGatewayItem) {
  const auto labels = k8s::StringMap{{"topology.kubernetes.io/zone", "zone-a"}};
  const DesiredChassis gw = planChassis({}, node(labels), kNetwork);
  EXPECT_EQ(gw.cmsItems(),
            (std::vector<std::string>{"enable-chassis-as-gw", "availability-zones=zone-a"}));
  // Without the role nothing gateway-related is applied, but a drain can still keep it.
  const DesiredChassis compute = planChassis({}, node(labels), kCompute);
  EXPECT_TRUE(compute.cmsItems().empty());
  EXPECT_EQ(compute.gatewayCmsItems, gw.gatewayCmsItems);
  // An empty zone label is no zone.
  EXPECT_EQ(planChassis({}, node({{"topology.kubernetes.io/zone", ""}}), kNetwork).cmsItems(),
            std::vector<std::string>{"enable-chassis-as-gw"});
}

TEST(PlanChassis, MappingsFromTheAnnotationInNativeSyntax) {
  const DesiredChassis d = planChassis(
      {}, node({}, {{kBridgeMappingsKey, "physnet1:br-ex,physnet2:br-vlan"}}), kCompute);
  ASSERT_EQ(d.bridgeMappings.size(), 2u);
  EXPECT_EQ(d.bridgeMappings[0], (BridgeMapping{"physnet1", "br-ex"}));
  EXPECT_EQ(d.bridgeMappings[1], (BridgeMapping{"physnet2", "br-vlan"}));
  EXPECT_EQ(d.bridges, (std::vector<DesiredBridge>{{"br-ex", {}}, {"br-vlan", {}}}));
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_EQ(toDryRunJson(d)["external_ids"]["ovn-bridge-mappings"],
            "physnet1:br-ex,physnet2:br-vlan");
}

TEST(PlanChassis, MappingsFromTheLabelEncoding) {
  const DesiredChassis d = planChassis(
      {}, node({{kBridgeMappingsKey, "physnet1_cbr-ex_sphys__net.2_cbr_vlan"}}), kCompute);
  // "_v" is not an escape: the whole value is rejected.
  EXPECT_TRUE(d.bridgeMappings.empty());
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0].reason, "InvalidBridgeMappings");
  EXPECT_NE(d.warnings[0].message.find("physnet1_cbr-ex_sphys__net.2_cbr_vlan"), std::string::npos);

  const DesiredChassis ok = planChassis(
      {}, node({{kBridgeMappingsKey, "physnet1_cbr-ex_sphys__net.2_cbr__vlan"}}), kCompute);
  EXPECT_TRUE(ok.warnings.empty());
  EXPECT_EQ(ok.bridgeMappings,
            (std::vector<BridgeMapping>{{"physnet1", "br-ex"}, {"phys_net.2", "br_vlan"}}));
}

TEST(PlanChassis, AnnotationWinsOverTheLabel) {
  const DesiredChassis d = planChassis(
      {},
      node({{kBridgeMappingsKey, "physnet1_cbr-old"}}, {{kBridgeMappingsKey, "physnet1:br-new"}}),
      kCompute);
  EXPECT_EQ(d.bridgeMappings, (std::vector<BridgeMapping>{{"physnet1", "br-new"}}));
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0].reason, "BridgeMappingsLabelIgnored");
  // The same value in both: no warning.
  EXPECT_TRUE(planChassis({},
                          node({{kBridgeMappingsKey, "physnet1_cbr-new"}},
                               {{kBridgeMappingsKey, "physnet1:br-new"}}),
                          kCompute)
                  .warnings.empty());
}

// Last good: a malformed value never tears down a working mapping; the diff keeps what the
// agent applied (keepOwnedMappings) until the value is fixed.
TEST(PlanChassis, MalformedMappingsKeepWhatIsAppliedNow) {
  for (const auto& n : {node({}, {{kBridgeMappingsKey, "physnet1:br-ex,physnet2"}}),
                        node({{kBridgeMappingsKey, "physnet1_xbr-ex"}}),
                        node({}, {{kBridgeMappingsKey, "a:br-ex,b:br-ex"}})}) {
    const DesiredChassis d = planChassis({}, n, kCompute);
    EXPECT_TRUE(d.keepOwnedMappings);
    EXPECT_FALSE(d.keepOwnedPorts);
    ASSERT_EQ(d.warnings.size(), 1u);
    EXPECT_EQ(d.warnings[0].reason, "InvalidBridgeMappings");
    EXPECT_NE(d.warnings[0].message.find("the mappings applied now stay"), std::string::npos)
        << d.warnings[0].message;
  }
  EXPECT_FALSE(planChassis({}, node({}, {{kBridgeMappingsKey, "physnet1:br-ex"}}), kCompute)
                   .keepOwnedMappings);
}

TEST(PlanChassis, BadZoneIsRefusedNotSplitAndTheAppliedZoneStays) {
  for (const std::string& zone :
       std::vector<std::string>{"az1,az2", "az1:az2", "a=b", "a b", std::string(256, 'z')}) {
    const DesiredChassis d =
        planChassis({}, node({{"topology.kubernetes.io/zone", zone}}), kNetwork);
    EXPECT_EQ(d.cmsItems(), std::vector<std::string>{"enable-chassis-as-gw"}) << zone;
    EXPECT_TRUE(d.keepOwnedZone) << zone;
    ASSERT_EQ(d.warnings.size(), 1u) << zone;
    EXPECT_EQ(d.warnings[0].reason, "InvalidZone");
    EXPECT_NE(d.warnings[0].message.find("topology.kubernetes.io/zone"), std::string::npos);
  }
  const DesiredChassis good =
      planChassis({}, node({{"topology.kubernetes.io/zone", "eu-west_1.a"}}), kNetwork);
  EXPECT_FALSE(good.keepOwnedZone);
  EXPECT_TRUE(good.warnings.empty());
}

TEST(PlanChassis, MalformedAnnotationAppliesNoMappingNotEvenTheLabel) {
  const DesiredChassis d = planChassis({},
                                       node({{kBridgeMappingsKey, "physnet1_cbr-ex"}},
                                            {{kBridgeMappingsKey, "physnet1:br-ex,physnet2"}}),
                                       kCompute);
  EXPECT_TRUE(d.bridgeMappings.empty());
  EXPECT_TRUE(d.bridges.empty());
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].message.find("\"physnet1:br-ex,physnet2\""), std::string::npos);
  EXPECT_NE(d.warnings[0].message.find("\"physnet2\" is not PHYSNET:BRIDGE"), std::string::npos)
      << d.warnings[0].message;
}

struct BadMapping {
  std::string text;
  std::string why;
};

class ParseBridgeMappingsBad : public ::testing::TestWithParam<BadMapping> {};

TEST_P(ParseBridgeMappingsBad, IsRejectedWithAReason) {
  auto r = parseBridgeMappings(GetParam().text);
  ASSERT_FALSE(r.ok()) << GetParam().text;
  EXPECT_NE(r.error().message.find(GetParam().why), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    All, ParseBridgeMappingsBad,
    ::testing::Values(
        BadMapping{"physnet1", "not PHYSNET:BRIDGE"},
        BadMapping{"physnet1:br-ex:x", "not PHYSNET:BRIDGE"},
        BadMapping{"physnet1:br-ex,", "empty item"}, BadMapping{",physnet1:br-ex", "empty item"},
        BadMapping{":br-ex", "physical network \"\""},
        BadMapping{"phys net:br-ex", "physical network \"phys net\""},
        BadMapping{"p=1:br-ex", "physical network"}, BadMapping{"physnet1:", "bridge \"\""},
        BadMapping{"physnet1:br-ex-with-long-name", "bridge \"br-ex-with-long-name\""},
        BadMapping{"physnet1:br/ex", "bridge"},
        BadMapping{"physnet1:br-ex,physnet1:br-vlan", "mapped twice"},
        // neutron_lib's parse_mappings(unique_values=True): a bridge serves one physnet.
        BadMapping{"a:br-ex,b:br-ex", "bridge \"br-ex\" is not unique"}));

TEST(ParseBridgeMappings, GoodValues) {
  EXPECT_TRUE(parseBridgeMappings("")->empty());
  EXPECT_EQ(parseBridgeMappings("datacentre:br-ex")->size(), 1u);
  EXPECT_EQ(parseBridgeMappings("a:br-ex,b:br-vlan")->size(), 2u);
}

// Kubernetes' IsValidLabelValue: at most 63 characters, alphanumerics, '-', '_', '.', beginning
// and ending with an alphanumeric (or empty).
bool isValidLabelValue(const std::string& v) {
  static const std::regex re("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?");
  return v.size() <= 63 && std::regex_match(v, re);
}

TEST(MappingsLabel, EncodingRoundTripsAndIsAValidLabelValue) {
  for (const std::string native :
       {"physnet1:br-ex", "physnet1:br-ex,physnet2:br-vlan", "phys_net-1.a:br_x.1", "a__b:c"}) {
    const std::string label = encodeMappingsLabel(native);
    EXPECT_TRUE(isValidLabelValue(label)) << native << " -> " << label;
    EXPECT_EQ(label.find(':'), std::string::npos);
    EXPECT_EQ(label.find(','), std::string::npos);
    auto back = decodeMappingsLabel(label);
    ASSERT_TRUE(back.ok()) << label;
    EXPECT_EQ(*back, native);
  }
  EXPECT_EQ(encodeMappingsLabel("physnet1:br-ex,physnet2:br-vlan"),
            "physnet1_cbr-ex_sphysnet2_cbr-vlan");
}

TEST(MappingsLabel, SomeMappingsHaveNoLabelForm) {
  // A bridge ending in '_' escapes to a value ending in '_', which the API server refuses as a
  // label value: such mappings can only be given as the annotation.
  const std::string label = encodeMappingsLabel("x:y_");
  EXPECT_FALSE(isValidLabelValue(label)) << label;
  EXPECT_EQ(*decodeMappingsLabel(label), "x:y_");
  // And a long one exceeds 63 characters.
  EXPECT_FALSE(isValidLabelValue(
      encodeMappingsLabel("physnet1:br-ex,physnet2:br-vlan,physnet3:br-ext,physnet4:br-tenant")));
}

TEST(MappingsLabel, BadEscapesAndCharactersAreErrors) {
  EXPECT_FALSE(decodeMappingsLabel("physnet1_").ok());
  EXPECT_FALSE(decodeMappingsLabel("physnet1_xbr").ok());
  EXPECT_FALSE(decodeMappingsLabel("physnet1:br-ex").ok());  // native syntax in a label
  EXPECT_NE(decodeMappingsLabel("a:b").error().message.find("annotation"), std::string::npos);
}

TEST(PlanChassis, ExternalNicGoesOnTheFirstMappingsBridge) {
  const DesiredChassis d = planChassis(
      {},
      node({{kExternalNicKey, "bond1"}}, {{kBridgeMappingsKey, "physnet2:br-vlan,physnet1:br-ex"}}),
      kCompute);
  EXPECT_EQ(d.bridges, (std::vector<DesiredBridge>{{"br-vlan", {"bond1"}}, {"br-ex", {}}}));
  EXPECT_EQ(toDryRunJson(d)["bridges"][0].dump(), R"({"name":"br-vlan","ports":["bond1"]})");
}

TEST(PlanChassis, ExternalNicWithoutMappingsGoesOnTheDefaultBridge) {
  OvsConfig config;
  config.defaultExternalBridge = "br-provider";
  const DesiredChassis d = planChassis(config, node({{kExternalNicKey, "eno2"}}), kNetwork);
  EXPECT_EQ(d.bridges, (std::vector<DesiredBridge>{{"br-provider", {"eno2"}}}));
  EXPECT_TRUE(d.bridgeMappings.empty());
}

TEST(PlanChassis, BadExternalNicIsAWarningAndNoPort) {
  for (const std::string nic : {"", "a-very-long-nic-name0", "br-ex"}) {
    const DesiredChassis d = planChassis({}, node({{kExternalNicKey, nic}}), kNetwork);
    EXPECT_TRUE(d.bridges.empty()) << nic;
    ASSERT_EQ(d.warnings.size(), 1u) << nic;
    EXPECT_EQ(d.warnings[0].reason, "InvalidExternalNic");
    EXPECT_TRUE(d.keepOwnedPorts) << nic;  // the NIC plugged now stays
  }
}

// The external NIC must not take the node off the network: refused when it carries the default
// route or the InternalIP, unless the operator says the address moves with it.
TEST(GuardExternalNic, RefusesANicCarryingTheDefaultRouteOrTheInternalIp) {
  k8s::NodeInfo n = node({{kExternalNicKey, "eth0"}}, {{kBridgeMappingsKey, "physnet1:br-ex"}});
  n.internalIps = {"10.0.0.5"};
  struct Case {
    NicFacts facts;
    const char* why;
  };
  for (const auto& c :
       {Case{{true, {}}, "the host's default route"},
        Case{{false, {"192.0.2.1", "10.0.0.5"}}, "the node's InternalIP 10.0.0.5"}}) {
    DesiredChassis d = planChassis({}, n, kNetwork);
    guardExternalNic(d, n, c.facts);
    EXPECT_EQ(d.bridges, (std::vector<DesiredBridge>{{"br-ex", {}}})) << c.why;
    EXPECT_TRUE(d.keepOwnedPorts);
    ASSERT_EQ(d.warnings.size(), 1u);
    EXPECT_EQ(d.warnings[0].reason, "UnsafeExternalNic");
    EXPECT_NE(d.warnings[0].message.find(c.why), std::string::npos) << d.warnings[0].message;
    EXPECT_NE(d.warnings[0].message.find(kExternalNicAddressMovesKey), std::string::npos);
  }
  // Without a mapping the default bridge existed only for the NIC: it goes too.
  k8s::NodeInfo bare = node({{kExternalNicKey, "eth0"}});
  DesiredChassis d = planChassis({}, bare, kNetwork);
  guardExternalNic(d, bare, {true, {}});
  EXPECT_TRUE(d.bridges.empty());
}

TEST(GuardExternalNic, AllowsASafeNicOrAnExplicitMove) {
  k8s::NodeInfo n = node({{kExternalNicKey, "eth1"}}, {{kBridgeMappingsKey, "physnet1:br-ex"}});
  n.internalIps = {"10.0.0.5"};
  DesiredChassis safe = planChassis({}, n, kNetwork);
  guardExternalNic(safe, n, {false, {"192.0.2.1"}});
  EXPECT_EQ(safe.bridges, (std::vector<DesiredBridge>{{"br-ex", {"eth1"}}}));
  EXPECT_TRUE(safe.warnings.empty());
  n.annotations[kExternalNicAddressMovesKey] = "true";
  DesiredChassis moved = planChassis({}, n, kNetwork);
  guardExternalNic(moved, n, {true, {"10.0.0.5"}});
  EXPECT_EQ(moved.bridges, (std::vector<DesiredBridge>{{"br-ex", {"eth1"}}}));
  EXPECT_TRUE(moved.warnings.empty());
}

TEST(PlanChassis, EverythingTogether) {
  const DesiredChassis d = planChassis({},
                                       node({{"topology.kubernetes.io/zone", "az1"},
                                             {kExternalNicKey, "bond1"},
                                             {kBridgeMappingsKey, "physnet1_cbr-ex"}}),
                                       kNetwork);
  EXPECT_EQ(toDryRunJson(d).dump(),
            R"({"bridges":[{"name":"br-ex","ports":["bond1"]}],"external_ids":{)"
            R"("ovn-bridge-mappings":"physnet1:br-ex",)"
            R"("ovn-cms-options":"enable-chassis-as-gw,availability-zones=az1"}})");
}

}  // namespace
}  // namespace okna::ovsdb

namespace okna::ovsdb {
namespace {

TEST(PlanChassis, AdoptOwnershipAnnotation) {
  EXPECT_EQ(planChassis({}, node({}), {}).adoptOwnership, AdoptOwnership::No);
  EXPECT_EQ(planChassis({}, node({}, {{kAdoptOwnershipKey, "true"}}), {}).adoptOwnership,
            AdoptOwnership::Adopt);
  EXPECT_EQ(planChassis({}, node({}, {{kAdoptOwnershipKey, "none"}}), {}).adoptOwnership,
            AdoptOwnership::Disown);
  const DesiredChassis bad = planChassis({}, node({}, {{kAdoptOwnershipKey, "yes"}}), {});
  EXPECT_EQ(bad.adoptOwnership, AdoptOwnership::No);
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_EQ(bad.warnings[0].reason, "InvalidAdoptOwnership");
}

}  // namespace
}  // namespace okna::ovsdb
