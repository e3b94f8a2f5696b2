// diffChassis: each input applied and removed, foreign items and keys preserved byte for byte,
// ownership across restarts, conflicts, drift repair, and convergence (applying the ops to a
// simulated database leaves nothing to do).
#include "chassis/chassis_diff.h"
#include "chassis/ownership.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace okna::ovsdb {
namespace {

using Kind = OvsOp::Kind;

// What ovsdb-server + the glue do with the ops, enough to check that the diff converges.
ObservedOvs apply(ObservedOvs db, const ChassisOps& ops) {
  for (const auto& op : ops.ops) {
    switch (op.kind) {
      case Kind::SetExternalId:
        db.externalIds[op.a] = op.b;
        break;
      case Kind::DeleteExternalId:
        db.externalIds.erase(op.a);
        break;
      case Kind::AddBridge:
        db.bridges[op.a] = ObservedBridge{op.b, {op.a}};
        break;
      case Kind::AddPort:
      case Kind::AddIfacePort:
        db.bridges.at(op.a).ports.push_back(op.b);
        break;
      case Kind::SetIfaceExternalIds:
        break;
      case Kind::SetBridgeDatapathType:
        db.bridges.at(op.a).datapathType = op.b;
        break;
      case Kind::DeletePort: {
        auto& ports = db.bridges.at(op.a).ports;
        ports.erase(std::find(ports.begin(), ports.end(), op.b));
        break;
      }
      case Kind::DeleteBridge:
        db.bridges.erase(op.a);
        break;
    }
  }
  return db;
}

// Applies the diff and checks that a second diff is empty.
ObservedOvs converge(const DesiredChassis& d, const ObservedOvs& db) {
  const ObservedOvs after = apply(db, diffChassis(d, db));
  const ChassisOps again = diffChassis(d, after);
  EXPECT_TRUE(again.empty()) << (again.ops.empty() ? "" : describe(again.ops[0]));
  return after;
}

ObservedOvs emptyDb() {
  ObservedOvs db;
  db.hasRoot = true;
  db.externalIds = {{"system-id", "chassis-1"}, {"hostname", "net-1"}};
  db.bridges["br-int"] = {"", {"br-int"}};
  return db;
}

DesiredChassis gateway(std::vector<std::string> items = {"enable-chassis-as-gw"}) {
  DesiredChassis d;
  d.gateway = true;
  d.gatewayCmsItems = std::move(items);
  return d;
}

DesiredChassis mappings(std::vector<BridgeMapping> m, std::string nic = "") {
  DesiredChassis d;
  d.bridgeMappings = std::move(m);
  for (const auto& x : d.bridgeMappings) d.bridges.push_back({x.bridge, {}});
  if (!nic.empty()) d.bridges.front().ports.push_back(nic);
  return d;
}

std::string cms(const ObservedOvs& db) {
  auto it = db.externalIds.find(kCmsOptions);
  return it == db.externalIds.end() ? "<absent>" : it->second;
}

TEST(DiffChassis, NoRootRowMeansNothingToDo) {
  ObservedOvs db;
  const ChassisOps ops = diffChassis(gateway(), db);
  EXPECT_TRUE(ops.empty());
  ASSERT_EQ(ops.notes.size(), 1u);
}

TEST(DiffChassis, NothingDesiredNothingOwnedIsEmpty) {
  EXPECT_TRUE(diffChassis(DesiredChassis{}, emptyDb()).empty());
}

TEST(DiffChassis, GatewayAddedThenRemovedCreatesAndDeletesTheKey) {
  ObservedOvs db = emptyDb();
  const ChassisOps add = diffChassis(gateway(), db);
  ASSERT_EQ(add.ops.size(), 2u);
  EXPECT_EQ(add.ops[0], (OvsOp{Kind::SetExternalId, kCmsOptions, "enable-chassis-as-gw"}));
  EXPECT_EQ(add.ops[1].a, kOwnershipKey);
  EXPECT_TRUE(add.verifyExternalIds);
  EXPECT_EQ(add.owned.cmsItems, std::vector<std::string>{"enable-chassis-as-gw"});
  EXPECT_EQ(add.owned.createdKeys, std::vector<std::string>{kCmsOptions});
  db = converge(gateway(), db);

  const ChassisOps remove = diffChassis(DesiredChassis{}, db);
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(db, emptyDb());  // key and ownership record gone: exactly the starting state
  EXPECT_EQ(remove.ops.back(), (OvsOp{Kind::DeleteExternalId, kOwnershipKey, ""}));
}

TEST(DiffChassis, ForeignItemsSurviveByteForByteAndInPlace) {
  ObservedOvs db = emptyDb();
  const std::string foreign = "enable-chassis-as-extport-host, card-serial-number=AB\"C,,x=1 ";
  db.externalIds[kCmsOptions] = foreign;
  db = converge(gateway({"enable-chassis-as-gw", "availability-zones=az1"}), db);
  EXPECT_EQ(cms(db), foreign + ",enable-chassis-as-gw,availability-zones=az1");
  // A foreign writer adds an item after ours.
  db.externalIds[kCmsOptions] += ",late-item";
  db = converge(gateway({"enable-chassis-as-gw", "availability-zones=az1"}), db);
  EXPECT_EQ(cms(db), foreign + ",enable-chassis-as-gw,availability-zones=az1,late-item");
  // Zone change: replaced in place.
  db = converge(gateway({"enable-chassis-as-gw", "availability-zones=az2"}), db);
  EXPECT_EQ(cms(db), foreign + ",enable-chassis-as-gw,availability-zones=az2,late-item");
  // Removal: only ours go, the key stays (we did not create it).
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(cms(db), foreign + ",late-item");
  EXPECT_EQ(db.externalIds.count(kOwnershipKey), 0u);
}

TEST(DiffChassis, PreExistingEmptyKeyIsLeftEmptyNotDeleted) {
  ObservedOvs db = emptyDb();
  db.externalIds[kCmsOptions] = "";
  db = converge(gateway(), db);
  EXPECT_EQ(cms(db), "enable-chassis-as-gw");
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(cms(db), "");
}

TEST(DiffChassis, ItemSetByAnOperatorBeforeIsNeverOwnedNorRemoved) {
  ObservedOvs db = emptyDb();
  db.externalIds[kCmsOptions] = " enable-chassis-as-gw";  // with a space: still the same item
  const ChassisOps ops = diffChassis(gateway(), db);
  EXPECT_TRUE(ops.owned.cmsItems.empty());
  EXPECT_TRUE(ops.empty());  // nothing to add, nothing owned: not even a record
  db = converge(gateway(), db);
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(cms(db), " enable-chassis-as-gw");
}

TEST(DiffChassis, ForeignItemWithTheSameKeyIsAConflictNotOverridden) {
  ObservedOvs db = emptyDb();
  db.externalIds[kCmsOptions] = "availability-zones=theirs";
  const ChassisOps ops =
      diffChassis(gateway({"enable-chassis-as-gw", "availability-zones=az1"}), db);
  ASSERT_EQ(ops.notes.size(), 1u);
  EXPECT_NE(ops.notes[0].find("availability-zones=theirs"), std::string::npos);
  db = converge(gateway({"enable-chassis-as-gw", "availability-zones=az1"}), db);
  EXPECT_EQ(cms(db), "availability-zones=theirs,enable-chassis-as-gw");

  db.externalIds[kBridgeMappings] = "physnet1:br-theirs";
  db = converge(mappings({{"physnet1", "br-ex"}, {"physnet2", "br-vlan"}}), db);
  EXPECT_EQ(db.externalIds[kBridgeMappings], "physnet1:br-theirs,physnet2:br-vlan");
}

TEST(DiffChassis, OperatorRemovingOurItemIsRepaired) {
  ObservedOvs db = converge(gateway(), emptyDb());
  db.externalIds[kCmsOptions] = "something-else";
  const ChassisOps ops = diffChassis(gateway(), db);
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(ops.ops[0],
            (OvsOp{Kind::SetExternalId, kCmsOptions, "something-else,enable-chassis-as-gw"}));
  // And a key deleted entirely is recreated (and then ours to delete).
  db.externalIds.erase(kCmsOptions);
  db = converge(gateway(), db);
  EXPECT_EQ(cms(db), "enable-chassis-as-gw");
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(cms(db), "<absent>");
}

TEST(DiffChassis, MappingsCreateBridgesWithBrIntsDatapathType) {
  ObservedOvs db = emptyDb();
  db.bridges["br-int"].datapathType = "netdev";
  const DesiredChassis d = mappings({{"physnet1", "br-ex"}, {"physnet2", "br-vlan"}}, "bond1");
  const ChassisOps ops = diffChassis(d, db);
  ASSERT_GE(ops.ops.size(), 4u);
  EXPECT_EQ(ops.ops[0], (OvsOp{Kind::AddBridge, "br-ex", "netdev"}));
  EXPECT_EQ(ops.ops[1], (OvsOp{Kind::AddPort, "br-ex", "bond1"}));
  EXPECT_EQ(ops.ops[2], (OvsOp{Kind::AddBridge, "br-vlan", "netdev"}));
  EXPECT_EQ(ops.ops[3],
            (OvsOp{Kind::SetExternalId, kBridgeMappings, "physnet1:br-ex,physnet2:br-vlan"}));
  EXPECT_TRUE(ops.verifyBridges);
  db = converge(d, db);
  EXPECT_EQ(db.bridges.at("br-ex").ports, (std::vector<std::string>{"br-ex", "bond1"}));

  // The label goes: bridges, port and key go, br-int stays.
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(db, [] {
    ObservedOvs e = emptyDb();
    e.bridges["br-int"].datapathType = "netdev";
    return e;
  }());
}

TEST(DiffChassis, DatapathTypeFollowsOvnBridgeDatapathTypeThenBrInt) {
  ObservedOvs db = emptyDb();
  db.bridges["br-int"].datapathType = "system";
  db.externalIds["ovn-bridge-datapath-type"] = "netdev";  // what ovn-controller uses for br-int
  const DesiredChassis d = mappings({{"physnet1", "br-ex"}});
  EXPECT_EQ(diffChassis(d, db).ops[0], (OvsOp{Kind::AddBridge, "br-ex", "netdev"}));
  // The integration bridge named by external_ids:ovn-bridge.
  ObservedOvs other = emptyDb();
  other.externalIds["ovn-bridge"] = "br-int2";
  other.bridges["br-int2"] = {"netdev", {"br-int2"}};
  EXPECT_EQ(diffChassis(d, other).ops[0], (OvsOp{Kind::AddBridge, "br-ex", "netdev"}));
}

TEST(DiffChassis, OwnedBridgeWithAnotherDatapathTypeIsRepairedForeignOneIsNot) {
  ObservedOvs db = emptyDb();
  const DesiredChassis d = mappings({{"physnet1", "br-ex"}, {"physnet2", "br-op"}});
  db.bridges["br-op"] = {"", {"br-op"}};  // an operator's bridge
  db = converge(d, db);                   // br-ex created as system ("" like br-int)
  // ovn-controller is reconfigured for the userspace datapath.
  db.bridges["br-int"].datapathType = "netdev";
  const ChassisOps ops = diffChassis(d, db);
  ASSERT_EQ(ops.ops.size(), 1u);
  EXPECT_EQ(ops.ops[0], (OvsOp{Kind::SetBridgeDatapathType, "br-ex", "netdev"}));
  EXPECT_TRUE(ops.verifyBridges);
  EXPECT_EQ(describe(ops.ops[0]), "set Bridge br-ex datapath_type=netdev");
  // "system" and "" are the same datapath.
  ObservedOvs same = emptyDb();
  same.bridges["br-int"].datapathType = "system";
  same.bridges["br-ex"] = {"", {"br-ex"}};
  same.externalIds[kOwnershipKey] = R"({"bridges":["br-ex"],"v":1})";
  same.externalIds[kBridgeMappings] = "physnet1:br-ex";
  DesiredChassis one = mappings({{"physnet1", "br-ex"}});
  for (const auto& op : diffChassis(one, same).ops)
    EXPECT_NE(op.kind, Kind::SetBridgeDatapathType) << describe(op);
}

TEST(DiffChassis, ExistingBridgeAndPortOfAnOperatorAreNeverDeleted) {
  ObservedOvs db = emptyDb();
  db.bridges["br-ex"] = {"", {"br-ex", "bond1"}};
  const DesiredChassis d = mappings({{"physnet1", "br-ex"}}, "bond1");
  const ChassisOps ops = diffChassis(d, db);
  EXPECT_TRUE(ops.owned.bridges.empty());
  EXPECT_TRUE(ops.owned.ports.empty());
  db = converge(d, db);
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(db.bridges.at("br-ex").ports, (std::vector<std::string>{"br-ex", "bond1"}));
  EXPECT_EQ(db.externalIds.count(kBridgeMappings), 0u);
}

TEST(DiffChassis, OurPortOnAnOperatorsBridgeIsRemovedAlone) {
  ObservedOvs db = emptyDb();
  db.bridges["br-ex"] = {"", {"br-ex", "patch-x"}};
  db = converge(mappings({{"physnet1", "br-ex"}}, "bond1"), db);
  EXPECT_EQ(db.bridges.at("br-ex").ports, (std::vector<std::string>{"br-ex", "patch-x", "bond1"}));
  // Only the NIC label goes.
  const DesiredChassis noNic = mappings({{"physnet1", "br-ex"}});
  const ChassisOps ops = diffChassis(noNic, db);
  EXPECT_EQ(ops.ops[0], (OvsOp{Kind::DeletePort, "br-ex", "bond1"}));
  db = converge(noNic, db);
  EXPECT_EQ(db.bridges.at("br-ex").ports, (std::vector<std::string>{"br-ex", "patch-x"}));
}

TEST(DiffChassis, OwnedBridgeWithForeignPortsWaitsUntilTheyAreGone) {
  ObservedOvs db = converge(mappings({{"physnet1", "br-ex"}}), emptyDb());
  // ovn-controller's patch port appears on the bridge we created.
  db.bridges["br-ex"].ports.push_back("patch-provnet-1");
  ChassisOps ops = diffChassis(DesiredChassis{}, db);
  EXPECT_EQ(ops.owned.bridges, std::vector<std::string>{"br-ex"});
  ASSERT_EQ(ops.notes.size(), 1u);
  EXPECT_NE(ops.notes[0].find("patch-provnet-1"), std::string::npos);
  for (const auto& op : ops.ops) EXPECT_NE(op.kind, Kind::DeleteBridge);
  db = apply(db, ops);
  EXPECT_EQ(db.externalIds.count(kBridgeMappings), 0u);
  // ovn-controller removes its patch port once the mapping is gone: the bridge goes next.
  db.bridges["br-ex"].ports = {"br-ex"};
  ops = diffChassis(DesiredChassis{}, db);
  EXPECT_EQ(ops.ops[0], (OvsOp{Kind::DeleteBridge, "br-ex", ""}));
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(db, emptyDb());
}

TEST(DiffChassis, OperatorDeletingOurBridgeOrPortIsRepaired) {
  const DesiredChassis d = mappings({{"physnet1", "br-ex"}}, "bond1");
  ObservedOvs db = converge(d, emptyDb());
  db.bridges["br-ex"].ports = {"br-ex"};
  EXPECT_EQ(diffChassis(d, db).ops[0], (OvsOp{Kind::AddPort, "br-ex", "bond1"}));
  db.bridges.erase("br-ex");
  const ChassisOps ops = diffChassis(d, db);
  EXPECT_EQ(ops.ops[0], (OvsOp{Kind::AddBridge, "br-ex", ""}));
  EXPECT_EQ(ops.ops[1], (OvsOp{Kind::AddPort, "br-ex", "bond1"}));
  converge(d, db);
}

TEST(DiffChassis, NicAlreadyOnAnotherBridgeIsNotMoved) {
  ObservedOvs db = emptyDb();
  db.bridges["br-other"] = {"", {"br-other", "bond1"}};
  const DesiredChassis d = mappings({{"physnet1", "br-ex"}}, "bond1");
  const ChassisOps ops = diffChassis(d, db);
  for (const auto& op : ops.ops) EXPECT_NE(op.kind, Kind::AddPort);
  ASSERT_EQ(ops.notes.size(), 1u);
  EXPECT_NE(ops.notes[0].find("br-other"), std::string::npos);
}

TEST(DiffChassis, NicMovesWithTheFirstMapping) {
  ObservedOvs db = converge(mappings({{"physnet1", "br-ex"}}, "bond1"), emptyDb());
  const DesiredChassis moved = mappings({{"physnet2", "br-vlan"}}, "bond1");
  const ChassisOps ops = diffChassis(moved, db);
  // bond1 is still on br-ex (ours, going away with it) when br-vlan wants it: one pass deletes,
  // the next adds, rather than two bridges claiming one NIC in a transaction.
  db = apply(db, ops);
  db = converge(moved, db);
  EXPECT_EQ(db.bridges.count("br-ex"), 0u);
  EXPECT_EQ(db.bridges.at("br-vlan").ports, (std::vector<std::string>{"br-vlan", "bond1"}));
  EXPECT_EQ(db.externalIds.at(kBridgeMappings), "physnet2:br-vlan");
}

// A gateway drain (holdOwned): the gateway items go at once, the owned mappings, bridges and
// NIC stay, the drain's start is recorded; once the hold ends they go.
TEST(DiffChassis, DrainClearsTheGatewayItemsAtOnceAndHoldsTheNetwork) {
  DesiredChassis gw = mappings({{"physnet1", "br-ex"}}, "bond1");
  gw.gateway = true;
  gw.gatewayCmsItems = {"enable-chassis-as-gw", "availability-zones=az1"};
  ObservedOvs db = converge(gw, emptyDb());
  ASSERT_EQ(cms(db), "enable-chassis-as-gw,availability-zones=az1");

  DesiredChassis draining;
  draining.gatewayCmsItems = gw.gatewayCmsItems;
  draining.holdOwned = true;
  draining.drainSince = 1700000000;
  const ChassisOps ops = diffChassis(draining, db);
  for (const auto& op : ops.ops) {
    EXPECT_NE(op.kind, Kind::DeleteBridge) << describe(op);
    EXPECT_NE(op.kind, Kind::DeletePort) << describe(op);
  }
  db = converge(draining, db);
  EXPECT_EQ(cms(db), "<absent>");
  EXPECT_EQ(db.externalIds.at(kBridgeMappings), "physnet1:br-ex");
  EXPECT_EQ(db.bridges.at("br-ex").ports, (std::vector<std::string>{"br-ex", "bond1"}));
  auto record = parseOwnership(db.externalIds.at(kOwnershipKey));
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->drainSince, 1700000000);
  EXPECT_TRUE(record->cmsItems.empty());
  EXPECT_EQ(record->mappings, std::vector<std::string>{"physnet1:br-ex"});
  EXPECT_EQ(record->bridges, std::vector<std::string>{"br-ex"});
  EXPECT_EQ(record->ports, (std::vector<std::pair<std::string, std::string>>{{"br-ex", "bond1"}}));

  // The hold ends: everything of the agent's goes, the record with it.
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(db, emptyDb());
}

TEST(DiffChassis, DrainKeepsWhatTheNodeStillWantsAndAddsNewItemsWithoutReplacingHeldOnes) {
  ObservedOvs db = converge(mappings({{"physnet1", "br-ex"}, {"physnet2", "br-vlan"}}), emptyDb());
  // Compute nodes with distributed floating IPs keep physnet1; physnet2 moves to another bridge
  // and physnet3 is new, during the drain.
  DesiredChassis d = mappings({{"physnet1", "br-ex"}, {"physnet2", "br-v2"}, {"physnet3", "br-3"}});
  d.holdOwned = true;
  d.drainSince = 42;
  const ChassisOps ops = diffChassis(d, db);
  db = converge(d, db);
  EXPECT_EQ(db.externalIds.at(kBridgeMappings), "physnet1:br-ex,physnet2:br-vlan,physnet3:br-3");
  EXPECT_EQ(db.bridges.count("br-vlan"), 1u);
  bool noted = false;
  for (const auto& n : ops.notes) noted = noted || n.find("keeping \"physnet2:br-vlan\"") != n.npos;
  EXPECT_TRUE(noted);
  // Then physnet2 moves.
  d.holdOwned = false;
  d.drainSince = 0;
  db = converge(d, db);
  EXPECT_EQ(db.externalIds.at(kBridgeMappings), "physnet1:br-ex,physnet2:br-v2,physnet3:br-3");
  EXPECT_EQ(db.bridges.count("br-vlan"), 0u);
  EXPECT_EQ(parseOwnership(db.externalIds.at(kOwnershipKey))->drainSince, 0);
}

TEST(DiffChassis, DrainNeverHoldsWhatIsNotTheAgents) {
  ObservedOvs db = emptyDb();
  db.externalIds[kBridgeMappings] = "physnet9:br-op";
  db.bridges["br-op"] = {"", {"br-op"}};
  DesiredChassis d;
  d.holdOwned = true;
  d.drainSince = 42;
  db = converge(d, db);
  EXPECT_EQ(db.externalIds.at(kBridgeMappings), "physnet9:br-op");
  EXPECT_EQ(formatOwnership(*parseOwnership(db.externalIds.at(kOwnershipKey))),
            R"({"drain":42,"v":1})");
}

// Last good: an input that became malformed keeps what the agent applied for it.
TEST(DiffChassis, MalformedInputsKeepWhatTheAgentApplied) {
  DesiredChassis good = mappings({{"physnet1", "br-ex"}}, "bond1");
  good.gateway = true;
  good.gatewayCmsItems = {"enable-chassis-as-gw", "availability-zones=az1"};
  const ObservedOvs applied = converge(good, emptyDb());

  DesiredChassis badMappings = good;
  badMappings.bridgeMappings.clear();
  badMappings.bridges = {{"br-ex", {"bond1"}}};  // the NIC still wants the (default) bridge
  badMappings.keepOwnedMappings = true;
  ObservedOvs db = converge(badMappings, applied);
  EXPECT_EQ(db.externalIds.at(kBridgeMappings), "physnet1:br-ex");

  DesiredChassis badNic = good;
  badNic.bridges = {{"br-ex", {}}};
  badNic.keepOwnedPorts = true;
  db = converge(badNic, applied);
  EXPECT_EQ(db.bridges.at("br-ex").ports, (std::vector<std::string>{"br-ex", "bond1"}));

  DesiredChassis badZone = good;
  badZone.gatewayCmsItems = {"enable-chassis-as-gw"};
  badZone.keepOwnedZone = true;
  db = converge(badZone, applied);
  EXPECT_EQ(cms(db), "enable-chassis-as-gw,availability-zones=az1");
  // ... but only with the gateway: losing the role takes the zone with the flag.
  badZone.gateway = false;
  db = converge(badZone, applied);
  EXPECT_EQ(cms(db), "<absent>");

  // Nothing owned: nothing to keep, nothing added.
  DesiredChassis fresh;
  fresh.keepOwnedMappings = fresh.keepOwnedPorts = fresh.keepOwnedZone = true;
  EXPECT_TRUE(diffChassis(fresh, emptyDb()).empty());
}

TEST(DiffChassis, NoBridgeForAMappingAForeignEntryBlocks) {
  ObservedOvs db = emptyDb();
  db.externalIds[kBridgeMappings] = "physnet1:br-op";
  const DesiredChassis d = mappings({{"physnet1", "br-ex"}, {"physnet2", "br-vlan"}});
  const ChassisOps ops = diffChassis(d, db);
  db = converge(d, db);
  EXPECT_EQ(db.bridges.count("br-ex"), 0u) << "physnet1 is someone else's: no bridge for it";
  EXPECT_EQ(db.bridges.count("br-vlan"), 1u);
  EXPECT_EQ(db.externalIds.at(kBridgeMappings), "physnet1:br-op,physnet2:br-vlan");
  ASSERT_FALSE(ops.notes.empty());
  // Nor is the NIC plugged into a bridge that would serve no physnet.
  ObservedOvs db2 = emptyDb();
  db2.externalIds[kBridgeMappings] = "physnet1:br-op";
  const DesiredChassis nic = mappings({{"physnet1", "br-ex"}}, "bond1");
  db2 = converge(nic, db2);
  EXPECT_EQ(db2.bridges.count("br-ex"), 0u);
  // An existing bridge is used as before.
  ObservedOvs db3 = emptyDb();
  db3.externalIds[kBridgeMappings] = "physnet1:br-op";
  db3.bridges["br-ex"] = {"", {"br-ex"}};
  db3 = converge(nic, db3);
  EXPECT_EQ(db3.bridges.at("br-ex").ports, (std::vector<std::string>{"br-ex", "bond1"}));
}

TEST(DiffChassis, OwnershipSurvivesARestartBecauseItLivesInTheDatabase) {
  // A first agent run writes; a "new process" sees only the database.
  ObservedOvs db = emptyDb();
  db.externalIds[kCmsOptions] = "foreign";
  db = converge(gateway(), db);
  const auto record = parseOwnership(db.externalIds.at(kOwnershipKey));
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->cmsItems, std::vector<std::string>{"enable-chassis-as-gw"});
  EXPECT_TRUE(record->createdKeys.empty());
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(cms(db), "foreign");
}

OwnershipCopy copyOf(const OwnershipRecord& r) {
  return {OwnershipCopy::State::Known, r, "state file /s", ""};
}

OwnershipCopy noCopy() {
  return {OwnershipCopy::State::None, {}, "state file /s", ""};
}

TEST(DiffChassis, UnreadableRecordWithNoCopyIsReplacedByALostMarkerNotDeleted) {
  ObservedOvs db = emptyDb();
  db.externalIds[kCmsOptions] = "enable-chassis-as-gw";
  db.externalIds[kOwnershipKey] = "garbage";
  DesiredChassis noRole = gateway();
  noRole.gateway = false;
  const ChassisOps ops = diffChassis(noRole, db, noCopy());
  EXPECT_EQ(ops.ownership.kind, OwnershipOutcome::Kind::Lost);
  EXPECT_NE(ops.ownership.message.find("unreadable"), std::string::npos);
  EXPECT_NE(ops.ownership.message.find("enable-chassis-as-gw"), std::string::npos)
      << ops.ownership.message;
  EXPECT_NE(ops.ownership.message.find(kAdoptOwnershipKey), std::string::npos);
  // Nothing is removed; the garbage is replaced by a record that keeps the loss known.
  ASSERT_EQ(ops.ops.size(), 1u);
  EXPECT_EQ(ops.ops[0], (OvsOp{Kind::SetExternalId, kOwnershipKey, R"({"lost":true,"v":1})"}));
  // And the loss is still reported on the next pass (a new process too).
  db = apply(db, ops);
  const ChassisOps again = diffChassis(noRole, db, noCopy());
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(again.ownership.kind, OwnershipOutcome::Kind::Lost);
}

TEST(DiffChassis, DeletedOrGarbledRecordIsRecoveredFromTheCopy) {
  ObservedOvs db = converge(mappings({{"physnet1", "br-ex"}}, "bond1"), emptyDb());
  const OwnershipRecord owned = *parseOwnership(db.externalIds.at(kOwnershipKey));
  ASSERT_FALSE(owned.empty());
  for (const std::string garbled : {"", "{\"v\":1,\"cms\":", "deleted"}) {
    ObservedOvs broken = db;
    if (garbled == "deleted") {
      broken.externalIds.erase(kOwnershipKey);
    } else {
      broken.externalIds[kOwnershipKey] = garbled;
    }
    // Still wanted: the record is rewritten and nothing else changes.
    ChassisOps ops = diffChassis(mappings({{"physnet1", "br-ex"}}, "bond1"), broken, copyOf(owned));
    EXPECT_EQ(ops.ownership.kind, OwnershipOutcome::Kind::Recovered) << garbled;
    ASSERT_EQ(ops.ops.size(), 1u) << garbled;
    EXPECT_EQ(ops.ops[0], (OvsOp{Kind::SetExternalId, kOwnershipKey, formatOwnership(owned)}));
    // No longer wanted: what the copy lists is removed.
    ops = diffChassis(DesiredChassis{}, broken, copyOf(owned));
    const ObservedOvs after = apply(broken, ops);
    EXPECT_EQ(after.externalIds.count(kBridgeMappings), 0u) << garbled;
    EXPECT_EQ(after.bridges.count("br-ex"), 0u) << garbled;
    EXPECT_EQ(after.externalIds.count(kOwnershipKey), 0u) << garbled;
  }
}

TEST(DiffChassis, MissingRecordIsALossOnlyWhenTheCopyIsUnreadable) {
  ObservedOvs db = emptyDb();
  db.externalIds[kCmsOptions] = "foreign,enable-chassis-as-gw";
  DesiredChassis noRole = gateway();
  noRole.gateway = false;
  // No copy: a first start on a node set up by hand; the flag is an operator's.
  ChassisOps ops = diffChassis(noRole, db, noCopy());
  EXPECT_EQ(ops.ownership.kind, OwnershipOutcome::Kind::Recorded);
  EXPECT_TRUE(ops.empty());
  // A copy saying the agent owns nothing: the same.
  ops = diffChassis(noRole, db, copyOf({}));
  EXPECT_EQ(ops.ownership.kind, OwnershipOutcome::Kind::Recorded);
  EXPECT_TRUE(ops.empty());
  // An unreadable copy and no record: a loss, kept in a marker; the flag stays.
  ops =
      diffChassis(noRole, db, {OwnershipCopy::State::Unreadable, {}, "state file /s", "not JSON"});
  EXPECT_EQ(ops.ownership.kind, OwnershipOutcome::Kind::Lost);
  EXPECT_NE(ops.ownership.message.find("not JSON"), std::string::npos);
  EXPECT_NE(ops.ownership.message.find("enable-chassis-as-gw"), std::string::npos)
      << ops.ownership.message;
  EXPECT_EQ(ops.ops,
            (std::vector<OvsOp>{{Kind::SetExternalId, kOwnershipKey, R"({"lost":true,"v":1})"}}));
}

TEST(DiffChassis, AdoptionTakesWhatTheNodeAsksForThenTheRoleRemovalRemovesIt) {
  ObservedOvs db = emptyDb();
  db.externalIds[kCmsOptions] = "foreign,enable-chassis-as-gw";
  db.externalIds[kBridgeMappings] = "physnet1:br-ex";
  db.bridges["br-ex"] = {"", {"br-ex", "bond1"}};
  db.externalIds[kOwnershipKey] = R"({"lost":true,"v":1})";
  DesiredChassis d = mappings({{"physnet1", "br-ex"}}, "bond1");
  d.gateway = true;
  d.gatewayCmsItems = {"enable-chassis-as-gw"};
  EXPECT_EQ(diffChassis(d, db, noCopy()).ownership.kind, OwnershipOutcome::Kind::Lost);
  d.adoptOwnership = AdoptOwnership::Adopt;
  ChassisOps ops = diffChassis(d, db, noCopy());
  EXPECT_EQ(ops.ownership.kind, OwnershipOutcome::Kind::Adopted);
  EXPECT_EQ(ops.owned.cmsItems, std::vector<std::string>{"enable-chassis-as-gw"});
  EXPECT_EQ(ops.owned.bridges, std::vector<std::string>{"br-ex"});
  EXPECT_FALSE(ops.owned.lost);
  db = apply(db, ops);
  EXPECT_EQ(diffChassis(d, db, noCopy()).ownership.kind, OwnershipOutcome::Kind::Recorded);
  db = converge(DesiredChassis{}, db);
  EXPECT_EQ(cms(db), "foreign");
  // The mappings key held only adopted items: it goes with them (ovn-cms-options stays).
  EXPECT_EQ(db.externalIds.count(kBridgeMappings), 0u);
  EXPECT_EQ(db.bridges.count("br-ex"), 0u);
  EXPECT_EQ(db.externalIds.count(kOwnershipKey), 0u);
}

TEST(DiffChassis, DisowningClearsTheLossAndOwnsOnlyWhatTheAgentAddedSince) {
  ObservedOvs db = emptyDb();
  db.externalIds[kCmsOptions] = "enable-chassis-as-gw";
  db.externalIds[kOwnershipKey] = R"({"lost":true,"v":1})";
  DesiredChassis d = gateway();
  d.adoptOwnership = AdoptOwnership::Disown;
  const ChassisOps ops = diffChassis(d, db, noCopy());
  EXPECT_EQ(ops.ownership.kind, OwnershipOutcome::Kind::Disowned);
  EXPECT_EQ(ops.ops, (std::vector<OvsOp>{{Kind::DeleteExternalId, kOwnershipKey, ""}}));
}

TEST(DiffChassis, ForeignExternalIdsKeysAreNeverTouched) {
  ObservedOvs db = emptyDb();
  db.externalIds["ovn-remote"] = "tcp:10.0.0.1:6642";
  db.externalIds["ovn-encap-ip"] = "10.0.0.5";
  DesiredChassis all = mappings({{"physnet1", "br-ex"}}, "bond1");
  all.gateway = true;
  all.gatewayCmsItems = {"enable-chassis-as-gw"};
  const ChassisOps ops = diffChassis(all, db);
  for (const auto& op : ops.ops) {
    if (op.kind == Kind::SetExternalId || op.kind == Kind::DeleteExternalId) {
      EXPECT_TRUE(op.a == kCmsOptions || op.a == kBridgeMappings || op.a == kOwnershipKey) << op.a;
    }
  }
  db = converge(all, db);
  db = converge(DesiredChassis{}, db);
  ObservedOvs expected = emptyDb();
  expected.externalIds["ovn-remote"] = "tcp:10.0.0.1:6642";
  expected.externalIds["ovn-encap-ip"] = "10.0.0.5";
  EXPECT_EQ(db, expected);
}

// Every combination of inputs, from every combination, converges in one pass (except a NIC
// moving between bridges, which takes two) and returns to the start when everything goes.
TEST(DiffChassis, AllTransitionsConverge) {
  std::vector<DesiredChassis> states;
  for (int mask = 0; mask < 32; ++mask) {
    DesiredChassis d;
    if (mask & 1) d = mappings({{"physnet1", "br-ex"}});
    if (mask & 2) d = mappings({{"physnet2", "br-vlan"}, {"physnet1", "br-ex"}}, "bond1");
    d.gateway = (mask & 4) != 0;
    d.gatewayCmsItems = {"enable-chassis-as-gw"};
    if (mask & 8) d.gatewayCmsItems.push_back("availability-zones=az" + std::to_string(mask));
    if (mask & 16) {
      d.holdOwned = true;
      d.drainSince = 1000 + mask;
    }
    states.push_back(d);
  }
  ObservedOvs base = emptyDb();
  base.externalIds[kCmsOptions] = "foreign-1";
  base.externalIds["other"] = "x";
  for (const auto& from : states) {
    for (const auto& to : states) {
      ObservedOvs db = converge(from, base);
      db = apply(db, diffChassis(to, db));
      db = apply(db, diffChassis(to, db));
      EXPECT_TRUE(diffChassis(to, db).empty());
      db = apply(db, diffChassis(DesiredChassis{}, db));
      EXPECT_EQ(db, base);
    }
  }
}

TEST(FailedInterfaces, OnlyWhatTheAgentWantsWithOvsVswitchdsReason) {
  ObservedOvs db = emptyDb();
  db.bridges["br-ex"] = {"", {"br-ex", "bond1"}};
  db.bridges["br-ex"].failedPorts = {
      {"bond1", "could not open network device bond1 (No such device)"}};
  db.bridges["br-int"].failedPorts = {{"tap0", "ofport -1"}};  // not the agent's
  db.bridges["br-vlan"] = {"", {"br-vlan"}};
  db.bridges["br-vlan"].failedPorts = {{"br-vlan", "ofport -1 (ovs-vswitchd could not add it)"}};
  const DesiredChassis d = mappings({{"physnet1", "br-ex"}, {"physnet2", "br-vlan"}}, "bond1");
  EXPECT_EQ(failedInterfaces(d, db),
            (std::vector<std::string>{
                "bridge br-ex port bond1: could not open network device bond1 (No such device)",
                "bridge br-vlan port br-vlan: ofport -1 (ovs-vswitchd could not add it)"}));
  EXPECT_TRUE(failedInterfaces(DesiredChassis{}, db).empty());
}

TEST(DescribeOp, ReadsLikeOvsVsctl) {
  EXPECT_EQ(describe({Kind::SetExternalId, "k", "v"}), "set external_ids:k=v");
  EXPECT_EQ(describe({Kind::AddBridge, "br-ex", "netdev"}),
            "add bridge br-ex (datapath_type netdev)");
  EXPECT_EQ(describe({Kind::DeletePort, "br-ex", "bond1"}), "delete port bond1 from bridge br-ex");
}

}  // namespace
}  // namespace okna::ovsdb
