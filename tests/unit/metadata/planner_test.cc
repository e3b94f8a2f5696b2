#include "metadata/planner.h"

#include <gtest/gtest.h>

#include "tests/unit/metadata/sb_ports.h"

namespace okna::metadata {
namespace {

using ovsdb::SbMetadataView;
using ovsdb::SbPort;
using sb_rows::localport;

constexpr const char* kNet = "5e0e6b3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
constexpr const char* kDp = "11111111-1111-1111-1111-111111111111";
constexpr const char* kDp2 = "22222222-2222-2222-2222-222222222222";

SbPort vif(const std::string& uuid, const std::string& dp, bool here, const std::string& mac0,
           const std::string& device = "vm-1") {
  SbPort p;
  p.uuid = uuid;
  p.logicalPort = "lsp-" + uuid;
  p.datapath = dp;
  p.onChassis = here;
  p.mac0 = mac0;
  p.deviceId = device;
  p.projectId = "proj";
  return p;
}

SbMetadataView baseView() {
  SbMetadataView v;
  v.enabled = true;
  v.synced = true;
  v.rows.mutableCopy().datapathNames[kDp] = std::string("neutron-") + kNet;
  v.rows.mutableCopy().ports.push_back(localport(kDp, "fa:16:3e:00:00:01 10.0.0.2", "10.0.0.2/24"));
  v.rows.mutableCopy().ports.push_back(vif("a", kDp, true, "fa:16:3e:00:00:10 10.0.0.10"));
  return v;
}

TEST(MetadataPlanner, NetworkWithAVmBoundHereGetsANamespaceNamedAsNeutronNamesIt) {
  const auto plan = planMetadata(baseView(), false);
  ASSERT_TRUE(plan.synced);
  ASSERT_EQ(plan.networks.size(), 1U);
  const NetworkPlan& n = *plan.networks.at(kNet);
  EXPECT_EQ(n.namespaceName, std::string("ovnmeta-") + kNet);
  EXPECT_EQ(n.hostIface, "tap5e0e6b3a-10");
  EXPECT_EQ(n.innerIface, "tap5e0e6b3a-11");
  EXPECT_EQ(n.mac, "fa:16:3e:00:00:01");
  EXPECT_EQ(n.metadataPort, std::string("md-") + kDp);
  EXPECT_EQ(n.addresses, (std::vector<std::string>{"10.0.0.2/24", "169.254.169.254/32"}));
  EXPECT_TRUE(plan.warnings.empty());
}

TEST(MetadataPlanner, ANetworkIdUnfitForAFileNameGetsNoNamespace) {
  // The id names /run/netns/ovnmeta-<id> and two interfaces: never from unchecked bytes.
  for (const std::string name : {"neutron-../../etc", "neutron-a/b", "neutron-a\nb", "neutron-"}) {
    auto v = baseView();
    v.rows.mutableCopy().datapathNames[kDp] = name;
    const auto plan = planMetadata(v, false);
    EXPECT_TRUE(plan.networks.empty()) << name;
    ASSERT_EQ(plan.warnings.size(), 1U) << name;
    EXPECT_EQ(plan.warnings[0].find('\n'), std::string::npos) << "escaped: " << plan.warnings[0];
  }
}

TEST(MetadataPlanner, AMetadataPortThatFailedItsChecksGetsNoNamespace) {
  auto v = baseView();
  v.rows.mutableCopy().ports[0].problem = "logical_port holds a control character";
  const auto plan = planMetadata(v, false);
  EXPECT_TRUE(plan.networks.empty());
  ASSERT_EQ(plan.warnings.size(), 1U);
  EXPECT_NE(plan.warnings[0].find("logical_port holds a control character"), std::string::npos);
}

TEST(MetadataPlanner, AVmPortThatFailedItsChecksIsIndexedWithItsProblem) {
  // Its VM is still bound here: the lookup finds it and the proxy refuses it by name (404).
  auto v = baseView();
  v.rows.mutableCopy().ports[1].problem = "external_ids:neutron:device_id is not a UUID";
  const auto plan = planMetadata(v, false);
  ASSERT_EQ(plan.networks.size(), 1U);
  const auto& found = plan.index.at(kNet).at("10.0.0.10");
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0]->problem, "external_ids:neutron:device_id is not a UUID");
}

TEST(MetadataPlanner, Ipv6AddsTheLinkLocalMetadataAddress) {
  const auto plan = planMetadata(baseView(), true);
  EXPECT_EQ(plan.networks.at(kNet)->addresses,
            (std::vector<std::string>{"10.0.0.2/24", "169.254.169.254/32", "fe80::a9fe:a9fe/64"}));
}

TEST(MetadataPlanner, OnlyIpv4CidrsOfTheMetadataPortAreUsed) {
  auto v = baseView();
  v.rows.mutableCopy().ports[0].cidrs = "10.0.0.2/24 fd00::2/64 192.168.5.3/28";
  const auto plan = planMetadata(v, false);
  EXPECT_EQ(plan.networks.at(kNet)->addresses,
            (std::vector<std::string>{"10.0.0.2/24", "169.254.169.254/32", "192.168.5.3/28"}));
}

TEST(MetadataPlanner, VmBoundToAnotherChassisGivesNoNamespace) {
  auto v = baseView();
  v.rows.mutableCopy().ports[1].onChassis = false;
  EXPECT_TRUE(planMetadata(v, false).networks.empty());
}

TEST(MetadataPlanner, LiveMigrationTargetGetsTheNamespaceBeforeTheVmLands) {
  auto v = baseView();
  v.rows.mutableCopy().ports[1].onChassis = false;
  v.rows.mutableCopy().ports[1].onAdditional = true;
  const auto plan = planMetadata(v, false);
  EXPECT_EQ(plan.networks.count(kNet), 1U);
  EXPECT_EQ(plan.index.at(kNet).at("10.0.0.10").size(), 1U);
}

TEST(MetadataPlanner, ExternalPortsCountAsVifsOtherTypesDoNot) {
  auto v = baseView();
  v.rows.mutableCopy().ports[1].type = "external";
  EXPECT_EQ(planMetadata(v, false).networks.size(), 1U);
  v.rows.mutableCopy().ports[1].type = "chassisredirect";
  EXPECT_TRUE(planMetadata(v, false).networks.empty());
  v.rows.mutableCopy().ports[1].type = "virtual";
  EXPECT_TRUE(planMetadata(v, false).networks.empty());
}

TEST(MetadataPlanner, NoMetadataPortNoMacOrNoIpv4MeansNoNamespaceAndAWarning) {
  auto noPort = baseView();
  auto& rows = noPort.rows.mutableCopy();
  rows.ports.erase(rows.ports.begin());
  auto plan = planMetadata(noPort, false);
  EXPECT_TRUE(plan.networks.empty());
  ASSERT_EQ(plan.warnings.size(), 1U);
  EXPECT_NE(plan.warnings[0].find("no metadata port"), std::string::npos);

  auto noMac = baseView();
  noMac.rows.mutableCopy().ports[0].mac0 = "unknown";
  plan = planMetadata(noMac, false);
  EXPECT_TRUE(plan.networks.empty());
  EXPECT_NE(plan.warnings.at(0).find("no MAC"), std::string::npos);

  auto noCidr = baseView();
  noCidr.rows.mutableCopy().ports[0].cidrs = "fd00::2/64";
  plan = planMetadata(noCidr, false);
  EXPECT_TRUE(plan.networks.empty());
  EXPECT_NE(plan.warnings.at(0).find("no IPv4"), std::string::npos);
}

TEST(MetadataPlanner, OnlyTheNetworkDistributedLocalportIsTheMetadataPort) {
  // ovn-octavia's health-monitor port is a localport of the same datapath; with a smaller uuid
  // it came first and the namespace took its MAC, address and iface-id (Neutron bug 2038091).
  auto v = baseView();
  SbPort octavia = localport(kDp, "fa:16:3e:00:0f:0f 10.0.0.250", "10.0.0.250/24");
  octavia.uuid = "0-before-the-metadata-port";
  octavia.logicalPort = "ovn-lb-hm-subnet";
  octavia.deviceOwner = "network:f5";
  auto& rows = v.rows.mutableCopy();
  rows.ports.insert(rows.ports.begin(), octavia);
  auto plan = planMetadata(v, false);
  ASSERT_EQ(plan.networks.size(), 1U);
  EXPECT_EQ(plan.networks.at(kNet)->metadataPort, std::string("md-") + kDp);
  EXPECT_EQ(plan.networks.at(kNet)->mac, "fa:16:3e:00:00:01");
  EXPECT_EQ(plan.networks.at(kNet)->addresses,
            (std::vector<std::string>{"10.0.0.2/24", "169.254.169.254/32"}));

  // Only the octavia port (or a localport without the key): no namespace, and why.
  rows.ports.erase(rows.ports.begin() + 1);
  plan = planMetadata(v, false);
  EXPECT_TRUE(plan.networks.empty());
  ASSERT_EQ(plan.warnings.size(), 1U);
  EXPECT_NE(plan.warnings[0].find("no metadata port (localport with neutron:device_owner "
                                  "network:distributed)"),
            std::string::npos)
      << plan.warnings[0];
  rows.ports[0].deviceOwner = "";
  EXPECT_TRUE(planMetadata(v, false).networks.empty());
}

TEST(MetadataPlanner, AnIpv6OnlyNetworkIsServedWhenAVmHereHasAnIpv6Address) {
  auto v = baseView();
  auto& rows = v.rows.mutableCopy();
  rows.ports[0].mac0 = "fa:16:3e:00:00:01 fd00::2";
  rows.ports[0].cidrs = "fd00::2/64";
  rows.ports[1].mac0 = "fa:16:3e:00:00:10 fd00::10";
  auto plan = planMetadata(v, true);
  ASSERT_EQ(plan.networks.size(), 1U) << (plan.warnings.empty() ? "" : plan.warnings[0]);
  EXPECT_EQ(plan.networks.at(kNet)->addresses,
            (std::vector<std::string>{"169.254.169.254/32", "fe80::a9fe:a9fe/64"}));
  // The VM is found by the MAC of its EUI-64 link-local address.
  EXPECT_EQ(plan.index.at(kNet).at(macIndexKey("fa:16:3e:00:00:10")).size(), 1U);
  EXPECT_TRUE(plan.warnings.empty());

  // IPv6 metadata off: nothing could serve it.
  plan = planMetadata(v, false);
  EXPECT_TRUE(plan.networks.empty());
  ASSERT_EQ(plan.warnings.size(), 1U);
  EXPECT_NE(plan.warnings[0].find("metadata.ipv6 is off"), std::string::npos) << plan.warnings[0];

  // No VM here with an IPv6 address (a VM bound elsewhere does not count).
  rows.ports[1].mac0 = "fa:16:3e:00:00:10";
  SbPort remote = vif("b", kDp, false, "fa:16:3e:00:00:11 fd00::11");
  rows.ports.push_back(remote);
  plan = planMetadata(v, true);
  EXPECT_TRUE(plan.networks.empty());
  ASSERT_EQ(plan.warnings.size(), 1U);
  EXPECT_NE(plan.warnings[0].find("no VM port here has an IPv6 address"), std::string::npos)
      << plan.warnings[0];

  // A live-migration target counts.
  rows.ports.back().onAdditional = true;
  EXPECT_EQ(planMetadata(v, true).networks.size(), 1U);
}

TEST(MetadataPlanner, ADualStackNetworkKeepsItsIpv4CidrsAndGetsTheIpv6Address) {
  auto v = baseView();
  auto& rows = v.rows.mutableCopy();
  rows.ports[0].cidrs = "10.0.0.2/24 fd00::2/64";
  rows.ports[1].mac0 = "fa:16:3e:00:00:10 10.0.0.10 fd00::10";
  const auto plan = planMetadata(v, true);
  EXPECT_EQ(plan.networks.at(kNet)->addresses,
            (std::vector<std::string>{"10.0.0.2/24", "169.254.169.254/32", "fe80::a9fe:a9fe/64"}));
  EXPECT_EQ(plan.index.at(kNet).at("fd00::10").size(), 1U);
  EXPECT_EQ(plan.index.at(kNet).at("10.0.0.10").size(), 1U);
}

TEST(MetadataPlanner, AnExternalPortBoundHereIsServedAlone) {
  // An SR-IOV direct or baremetal port: type external, bound by ovn-controller to the chassis
  // that hosts its HA chassis group (a network node), no other VM of the network here.
  auto v = baseView();
  auto& rows = v.rows.mutableCopy();
  rows.ports[1].type = "external";
  const auto plan = planMetadata(v, true);
  ASSERT_EQ(plan.networks.size(), 1U);
  const auto& found = plan.index.at(kNet).at("10.0.0.10");
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0]->type, "external");
  EXPECT_EQ(found[0]->deviceId, "vm-1");
  // Hosted by another chassis's HA group: not here.
  rows.ports[1].onChassis = false;
  EXPECT_TRUE(planMetadata(v, true).networks.empty());
}

TEST(MetadataPlanner, MetadataPortChangesShowInThePlan) {
  auto v = baseView();
  const NetworkPlan before = *planMetadata(v, false).networks.at(kNet);
  v.rows.mutableCopy().ports[0].mac0 = "fa:16:3e:00:00:99 10.0.0.3";
  v.rows.mutableCopy().ports[0].cidrs = "10.0.0.3/24";
  const NetworkPlan after = *planMetadata(v, false).networks.at(kNet);
  EXPECT_NE(before, after);
  EXPECT_EQ(after.mac, "fa:16:3e:00:00:99");
  EXPECT_EQ(after.addresses[0], "10.0.0.3/24");
}

TEST(MetadataPlanner, IndexFindsTheBoundVifByIpAndByMac) {
  auto v = baseView();
  v.rows.mutableCopy().ports.push_back(
      vif("b", kDp, true, "fa:16:3e:00:00:11 10.0.0.11 fd00::11", "vm-2"));
  const auto plan = planMetadata(v, false);
  const auto& idx = plan.index.at(kNet);
  EXPECT_EQ(idx.at("10.0.0.10").at(0)->deviceId, "vm-1");
  EXPECT_EQ(idx.at("10.0.0.11").at(0)->deviceId, "vm-2");
  EXPECT_EQ(idx.at("fd00::11").at(0)->deviceId, "vm-2");
  EXPECT_EQ(idx.at(macIndexKey("FA:16:3E:00:00:11")).at(0)->deviceId, "vm-2");
  EXPECT_EQ(idx.count("10.0.0.2"), 0U) << "the metadata port is not a VM";
}

TEST(MetadataPlanner, IndexIgnoresVmsBoundElsewhereAndKeepsDuplicates) {
  auto v = baseView();
  v.rows.mutableCopy().ports.push_back(
      vif("c", kDp, false, "fa:16:3e:00:00:12 10.0.0.12", "remote-vm"));
  v.rows.mutableCopy().ports.push_back(
      vif("d", kDp, true, "fa:16:3e:00:00:13 10.0.0.10", "dup-vm"));
  const auto plan = planMetadata(v, false);
  const auto& idx = plan.index.at(kNet);
  EXPECT_EQ(idx.count("10.0.0.12"), 0U);
  EXPECT_EQ(idx.at("10.0.0.10").size(), 2U);
}

TEST(MetadataPlanner, TwoNetworksAreIndexedApart) {
  auto v = baseView();
  v.rows.mutableCopy().datapathNames[kDp2] = "neutron-other-net";
  v.rows.mutableCopy().ports.push_back(
      localport(kDp2, "fa:16:3e:00:01:01 10.1.0.2", "10.1.0.2/24"));
  v.rows.mutableCopy().ports.push_back(
      vif("e", kDp2, true, "fa:16:3e:00:01:10 10.0.0.10", "vm-other"));
  const auto plan = planMetadata(v, false);
  ASSERT_EQ(plan.networks.size(), 2U);
  EXPECT_EQ(plan.index.at(kNet).at("10.0.0.10").at(0)->deviceId, "vm-1");
  EXPECT_EQ(plan.index.at("other-net").at("10.0.0.10").at(0)->deviceId, "vm-other");
}

TEST(MetadataPlanner, NotSyncedIsCarriedWithItsReason) {
  auto v = baseView();
  v.synced = false;
  v.notSyncedReason = "not connected";
  const auto plan = planMetadata(v, false);
  EXPECT_FALSE(plan.synced);
  EXPECT_EQ(plan.notSyncedReason, "not connected");
}

TEST(MetadataPlanner, DatapathNameWithoutNeutronPrefixIsUsedAsIs) {
  EXPECT_EQ(networkIdFromDatapathName("neutron-abc"), "abc");
  EXPECT_EQ(networkIdFromDatapathName("abc"), "abc");
  // Only the prefix goes: a "neutron-" further in is part of the id.
  EXPECT_EQ(networkIdFromDatapathName("neutron-a-neutron-b"), "a-neutron-b");
  EXPECT_EQ(networkIdFromDatapathName("a-neutron-b"), "a-neutron-b");
}

// Two datapaths, one network id each: removing every "neutron-" made "neutron-a-neutron-b" and
// "neutron-a-b" one network, so one namespace and one client index would have mixed the VMs of
// both (a VM of one could be answered as a VM of the other).
TEST(MetadataPlanner, TwoDatapathNamesNeverMapToOneNetwork) {
  EXPECT_NE(networkIdFromDatapathName("neutron-a-neutron-b"),
            networkIdFromDatapathName("neutron-a-b"));
  EXPECT_NE(networkIdFromDatapathName("neutron-neutron-x"), networkIdFromDatapathName("neutron-x"));
}

}  // namespace
}  // namespace okna::metadata
