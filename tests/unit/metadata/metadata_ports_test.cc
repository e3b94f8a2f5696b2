#include "metadata/metadata_ports.h"

#include <gtest/gtest.h>

namespace okna::ovsdb {
namespace {

using Kind = OvsOp::Kind;

ObservedOvs bridgeWith(std::vector<std::string> ports) {
  ObservedOvs o;
  o.hasRoot = true;
  o.bridges["br-int"] = ObservedBridge{"netdev", std::move(ports)};
  return o;
}

DesiredMetadataOvs wanting(std::map<std::string, std::string> ports, bool prune = true) {
  DesiredMetadataOvs d;
  d.enabled = true;
  d.ports = std::move(ports);
  d.prune = prune;
  return d;
}

const std::map<std::string, std::string> kMarked = {{"iface-id", "md-port"},
                                                    {"openkeel-node-agent", "metadata"}};

TEST(MetadataPorts, VmInterfacesAreThoseOsVifPlugsNotMetadataPorts) {
  // What the metadata planner judges a Southbound that lost this chassis's bindings by.
  const ObservedBridgeIfaceIds ids = {
      {"tapvm1", {{"iface-id", "vm-port-1"}, {"attached-mac", "fa:16:3e:00:00:11"}}},
      {"tapvm2", {{"iface-id", "vm-port-2"}, {"attached-mac", "fa:16:3e:00:00:12"}}},
      // The agent's metadata port, and one Neutron's agent plugged (no attached-mac).
      {"tapabc0", kMarked},
      {"tapdef0", {{"iface-id", "other-md-port"}}},
      // A port without an iface-id (a patch port, a tunnel) names no logical port.
      {"tapx", {{"attached-mac", "fa:16:3e:00:00:13"}}},
      {"tapy", {{"iface-id", ""}, {"attached-mac", "fa:16:3e:00:00:14"}}},
  };
  EXPECT_EQ(vmIfaceIdsOf(ids), (std::set<std::string>{"vm-port-1", "vm-port-2"}));
  auto markedVm = ids;
  markedVm["tapvm1"]["openkeel-node-agent"] = "metadata";
  EXPECT_EQ(vmIfaceIdsOf(markedVm), (std::set<std::string>{"vm-port-2"}));
  EXPECT_TRUE(vmIfaceIdsOf({}).empty());
}

TEST(MetadataPorts, MissingPortIsAddedWithIfaceIdAndMark) {
  const auto ops = diffMetadataPorts(wanting({{"tapabc0", "md-port"}}), bridgeWith({"br-int"}), {});
  ASSERT_EQ(ops.size(), 1U);
  EXPECT_EQ(ops[0], (OvsOp{Kind::AddIfacePort, "br-int", "tapabc0",
                           "iface-id=md-port,openkeel-node-agent=metadata"}));
}

TEST(MetadataPorts, CorrectPortNeedsNothing) {
  EXPECT_TRUE(diffMetadataPorts(wanting({{"tapabc0", "md-port"}}), bridgeWith({"tapabc0"}),
                                {{"tapabc0", kMarked}})
                  .empty());
}

TEST(MetadataPorts, PortLeftByNeutronsAgentIsAdoptedNotRecreated) {
  const auto ops = diffMetadataPorts(wanting({{"tapabc0", "md-port"}}), bridgeWith({"tapabc0"}),
                                     {{"tapabc0", {{"iface-id", "md-port"}}}});
  ASSERT_EQ(ops.size(), 1U);
  EXPECT_EQ(ops[0].kind, Kind::SetIfaceExternalIds);
}

TEST(MetadataPorts, WrongIfaceIdIsRepaired) {
  auto ids = kMarked;
  ids["iface-id"] = "old";
  const auto ops = diffMetadataPorts(wanting({{"tapabc0", "md-port"}}), bridgeWith({"tapabc0"}),
                                     {{"tapabc0", ids}});
  ASSERT_EQ(ops.size(), 1U);
  EXPECT_EQ(ops[0].c, "iface-id=md-port,openkeel-node-agent=metadata");
}

TEST(MetadataPorts, OnlyMarkedPortsArePrunedAndOnlyWhenAllowed) {
  const auto observed = bridgeWith({"tapold0", "vm-tap", "tapneutron0"});
  const ObservedBridgeIfaceIds ids = {{"tapold0", kMarked},
                                      {"vm-tap", {{"iface-id", "vm-port"}}},
                                      {"tapneutron0", {{"iface-id", "md-x"}}}};
  auto ops = diffMetadataPorts(wanting({}), observed, ids);
  ASSERT_EQ(ops.size(), 1U);
  EXPECT_EQ(ops[0], (OvsOp{Kind::DeletePort, "br-int", "tapold0", ""}));
  EXPECT_TRUE(diffMetadataPorts(wanting({}, false), observed, ids).empty());
}

TEST(MetadataPorts, UnmarkedPortsDiffTheSameWhetherTheirIdsAreObservedOrNot) {
  // The IDL thread keeps only marked ports' ids (marksTheAgentsPort): this is why it may.
  const auto observed = bridgeWith({"tapabc0", "vm-tap", "tapold0"});
  const auto desired = wanting({{"tapabc0", "md-port"}});
  const ObservedBridgeIfaceIds all = {{"tapabc0", {{"iface-id", "md-port"}}},
                                      {"vm-tap", {{"iface-id", "vm-port"}}},
                                      {"tapold0", kMarked}};
  ObservedBridgeIfaceIds marked = all;
  std::erase_if(marked, [](const auto& p) { return !marksTheAgentsPort(p.second); });
  ASSERT_EQ(marked.size(), 1U);
  const auto ops = diffMetadataPorts(desired, observed, all);
  EXPECT_EQ(ops, diffMetadataPorts(desired, observed, marked));
  ASSERT_EQ(ops.size(), 2U);
  EXPECT_EQ(ops[0].kind, Kind::SetIfaceExternalIds);
  EXPECT_EQ(ops[1], (OvsOp{Kind::DeletePort, "br-int", "tapold0", ""}));
  EXPECT_FALSE(marksTheAgentsPort({{"iface-id", "md-port"}}));
  EXPECT_FALSE(marksTheAgentsPort({{kMetadataPortMarkKey, "other"}}));
  EXPECT_TRUE(marksTheAgentsPort(kMarked));
}

TEST(MetadataPorts, NothingWithoutTheBridgeOrWhenDisabled) {
  ObservedOvs none;
  none.hasRoot = true;
  EXPECT_TRUE(diffMetadataPorts(wanting({{"tapabc0", "md-port"}}), none, {}).empty());
  auto d = wanting({{"tapabc0", "md-port"}});
  d.enabled = false;
  EXPECT_TRUE(diffMetadataPorts(d, bridgeWith({}), {}).empty());
}

TEST(MetadataPorts, NeutronAgentIdIsUuid5AsNeutronComputesIt) {
  // Values from Python: uuid.uuid5(uuid.uuid5(NS, name) or uuid.UUID(name), 'metadata_agent').
  EXPECT_EQ(neutronMetadataAgentId("lab-1"), "2d36cb50-25a3-5e37-b707-cf501dc28d2b");
  EXPECT_EQ(neutronMetadataAgentId("4B1A0CC0-7C2D-4E6A-9A9B-1A2B3C4D5E6F"),
            "fe69c5c7-d3d8-5180-a526-1f5a7c65182d");
}

TEST(MetadataPorts, ParseUuidAcceptsPythonsForms) {
  const std::string canon = "4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f";
  EXPECT_EQ(parseUuid("4B1A0CC0-7C2D-4E6A-9A9B-1A2B3C4D5E6F"), canon);
  EXPECT_EQ(parseUuid("{4b1a0cc07c2d4e6a9a9b1a2b3c4d5e6f}"), canon);
  EXPECT_EQ(parseUuid("urn:uuid:" + canon), canon);
  EXPECT_EQ(parseUuid("lab-1"), "");
  EXPECT_EQ(parseUuid(canon + "0"), "");
}

}  // namespace
}  // namespace okna::ovsdb
