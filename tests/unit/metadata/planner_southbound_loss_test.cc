// The planner when the Southbound loses this chassis's bindings while the VMs are still here
// (issue 27, point 1): removal is proven by the VM interfaces on br-int, never inferred from the
// view's silence (planner.h, LocalEvidence).
#include <gtest/gtest.h>

#include "tests/unit/metadata/sb_ports.h"

#include "metadata/planner.h"

namespace okna::metadata {
namespace {

using ovsdb::SbMetadataView;
using ovsdb::SbPort;
using sb_rows::localport;

constexpr const char* kNetA = "net-a";
constexpr const char* kNetB = "net-b";

SbPort vif(const std::string& name, const std::string& dp, const std::string& mac0) {
  SbPort p;
  p.uuid = "uuid-" + name;
  p.logicalPort = "lsp-" + name;
  p.datapath = dp;
  p.onChassis = true;
  p.mac0 = mac0;
  p.deviceId = "instance-" + name;
  p.projectId = "proj";
  return p;
}

// Network A (datapath dp-a) with VM a1 and network B (dp-b) with VM b1, both bound here; what
// `drop` names (a datapath or a VM) is not in the view, as after a Southbound loss.
SbMetadataView view(const std::set<std::string>& drop = {}) {
  SbMetadataView v;
  v.enabled = true;
  v.synced = true;
  auto& rows = v.rows.mutableCopy();
  if (!drop.count("dp-a")) {
    rows.datapathNames["dp-a"] = std::string("neutron-") + kNetA;
    rows.ports.push_back(localport("dp-a", "fa:16:3e:00:0a:02 10.0.0.2", "10.0.0.2/24"));
    if (!drop.count("a1")) rows.ports.push_back(vif("a1", "dp-a", "fa:16:3e:00:0a:11 10.0.0.11"));
    if (!drop.count("a2")) rows.ports.push_back(vif("a2", "dp-a", "fa:16:3e:00:0a:12 10.0.0.12"));
  }
  if (!drop.count("dp-b")) {
    rows.datapathNames["dp-b"] = std::string("neutron-") + kNetB;
    rows.ports.push_back(localport("dp-b", "fa:16:3e:00:0b:02 10.1.0.2", "10.1.0.2/24"));
    rows.ports.push_back(vif("b1", "dp-b", "fa:16:3e:00:0b:11 10.1.0.11"));
  }
  return v;
}

LocalEvidence onBrInt(std::set<std::string> ifaceIds, const MetadataPlan* previous) {
  return {std::move(ifaceIds), previous, "br-int"};
}

const SbPort* onlyPort(const MetadataPlan& plan, const std::string& net, const std::string& ip) {
  const auto& found = plan.index.at(net).at(ip);
  return found.size() == 1 ? found[0] : nullptr;
}

const std::set<std::string> kAllHere = {"lsp-a1", "lsp-a2", "lsp-b1"};

TEST(MetadataPlannerSouthboundLoss, WithoutLossTheEvidenceChangesNothing) {
  const auto alone = planMetadata(view(), false);
  const auto prev = planMetadata(view(), false, onBrInt(kAllHere, nullptr));
  const auto next = planMetadata(view(), false, onBrInt(kAllHere, &prev));
  for (const auto* plan : {&prev, &next}) {
    EXPECT_TRUE(plan->synced);
    EXPECT_EQ(plan->networks.size(), alone.networks.size());
    EXPECT_TRUE(plan->lost.empty());
    EXPECT_EQ(plan->carriedPorts, nullptr);
    EXPECT_EQ(plan->vms.at(kNetA).size(), 2u);
    EXPECT_EQ(plan->vms.at(kNetB).size(), 1u);
  }
}

TEST(MetadataPlannerSouthboundLoss, ANetworkTheViewDroppedIsKeptWhileItsVmIsOnBrInt) {
  const auto prev = planMetadata(view(), false, onBrInt(kAllHere, nullptr));
  const auto next = planMetadata(view({"dp-b"}), false, onBrInt(kAllHere, &prev));
  EXPECT_TRUE(next.synced);
  ASSERT_EQ(next.networks.count(kNetB), 1u);
  EXPECT_EQ(next.networks.at(kNetB), prev.networks.at(kNetB)) << "the same plan, not rebuilt";
  const SbPort* b1 = onlyPort(next, kNetB, "10.1.0.11");
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(b1->deviceId, "instance-b1") << "its VM is answered from the last view";
  EXPECT_EQ(onlyPort(next, kNetB, macIndexKey("fa:16:3e:00:0b:11")), b1);
  EXPECT_EQ(next.lost.at(kNetB),
            "kept ovnmeta-net-b: VM port(s) lsp-b1 still on br-int but not in the Southbound");
  EXPECT_EQ(next.lost.count(kNetA), 0u);
}

TEST(MetadataPlannerSouthboundLoss, ItGoesOnceItsVmLeavesBrIntToo) {
  const auto prev = planMetadata(view(), false, onBrInt(kAllHere, nullptr));
  const auto kept = planMetadata(view({"dp-b"}), false, onBrInt(kAllHere, &prev));
  ASSERT_EQ(kept.networks.count(kNetB), 1u);
  const auto gone = planMetadata(view({"dp-b"}), false, onBrInt({"lsp-a1", "lsp-a2"}, &kept));
  EXPECT_EQ(gone.networks.count(kNetB), 0u);
  EXPECT_EQ(gone.index.count(kNetB), 0u);
  EXPECT_TRUE(gone.lost.empty());
  EXPECT_TRUE(gone.synced);
  // Gone for good: its VM back on br-int later does not bring it back without the Southbound.
  const auto after = planMetadata(view({"dp-b"}), false, onBrInt(kAllHere, &gone));
  EXPECT_EQ(after.networks.count(kNetB), 0u);
}

TEST(MetadataPlannerSouthboundLoss, KeptAcrossPlansFromTheCarriedValuesAlone) {
  auto first =
      std::make_unique<MetadataPlan>(planMetadata(view(), false, onBrInt(kAllHere, nullptr)));
  auto second = std::make_unique<MetadataPlan>(
      planMetadata(view({"dp-b"}), false, onBrInt(kAllHere, first.get())));
  first.reset();  // the third plan must not point into the first one's rows
  const auto third = planMetadata(view({"dp-b"}), false, onBrInt(kAllHere, second.get()));
  second.reset();
  ASSERT_EQ(third.networks.count(kNetB), 1u);
  const SbPort* b1 = onlyPort(third, kNetB, "10.1.0.11");
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(b1->deviceId, "instance-b1");
  EXPECT_EQ(third.vms.at(kNetB).size(), 1u);
  // The copy of a plan shares the carried rows: its index stays valid.
  const MetadataPlan copy = third;
  EXPECT_EQ(onlyPort(copy, kNetB, "10.1.0.11")->deviceId, "instance-b1");
}

TEST(MetadataPlannerSouthboundLoss, BackInTheViewItIsTheViewsAgain) {
  const auto prev = planMetadata(view(), false, onBrInt(kAllHere, nullptr));
  const auto kept = planMetadata(view({"dp-b"}), false, onBrInt(kAllHere, &prev));
  const auto back = planMetadata(view(), false, onBrInt(kAllHere, &kept));
  EXPECT_TRUE(back.lost.empty());
  EXPECT_EQ(back.carriedPorts, nullptr);
  EXPECT_EQ(*back.networks.at(kNetB), *prev.networks.at(kNetB));
  EXPECT_EQ(onlyPort(back, kNetB, "10.1.0.11"), &back.rows->ports[4]) << "the view's row";
}

TEST(MetadataPlannerSouthboundLoss, AVmOfANetworkStillInTheViewIsServedFromTheLastView) {
  const auto prev = planMetadata(view(), false, onBrInt(kAllHere, nullptr));
  const auto next = planMetadata(view({"a2"}), false, onBrInt(kAllHere, &prev));
  EXPECT_TRUE(next.synced);
  EXPECT_EQ(*next.networks.at(kNetA), *prev.networks.at(kNetA));
  EXPECT_EQ(onlyPort(next, kNetA, "10.0.0.12")->deviceId, "instance-a2");
  EXPECT_EQ(onlyPort(next, kNetA, "10.0.0.11")->deviceId, "instance-a1");
  EXPECT_EQ(next.lost.at(kNetA),
            "ovnmeta-net-a: VM port(s) lsp-a2 still on br-int but not in the Southbound; served "
            "from the last view");
  // Its interface gone as well: no longer served, nothing lost.
  const auto gone = planMetadata(view({"a2"}), false, onBrInt({"lsp-a1", "lsp-b1"}, &next));
  EXPECT_EQ(gone.index.at(kNetA).count("10.0.0.12"), 0u);
  EXPECT_TRUE(gone.lost.empty());
}

TEST(MetadataPlannerSouthboundLoss, ACarriedAddressAnotherPortNowHoldsIsAmbiguousNotGuessed) {
  const auto prev = planMetadata(view(), false, onBrInt(kAllHere, nullptr));
  auto v = view({"a2"});
  v.rows.mutableCopy().ports.push_back(vif("a3", "dp-a", "fa:16:3e:00:0a:13 10.0.0.12"));
  const auto next = planMetadata(v, false, onBrInt(kAllHere, &prev));
  EXPECT_EQ(next.index.at(kNetA).at("10.0.0.12").size(), 2u) << "404, never the wrong VM";
}

TEST(MetadataPlannerSouthboundLoss, APortTheViewShowsBoundElsewhereHasMovedAndIsNotKept) {
  // A live migration away: the row is there, bound to another chassis; the source's interface
  // may linger on br-int a moment. The Southbound says where it is: proof enough.
  const auto prev = planMetadata(view(), false, onBrInt(kAllHere, nullptr));
  auto v = view();
  for (auto& p : v.rows.mutableCopy().ports)
    if (p.logicalPort == "lsp-b1") p.onChassis = false;
  const auto next = planMetadata(v, false, onBrInt(kAllHere, &prev));
  EXPECT_EQ(next.networks.count(kNetB), 0u);
  EXPECT_TRUE(next.lost.empty());
}

TEST(MetadataPlannerSouthboundLoss, ANetworkTheViewHasButCannotServeIsNotKept) {
  // Its metadata port lost its MAC: the Southbound says so, as Neutron tears it down.
  const auto prev = planMetadata(view(), false, onBrInt(kAllHere, nullptr));
  auto v = view();
  for (auto& p : v.rows.mutableCopy().ports)
    if (p.logicalPort == "md-dp-b") p.mac0 = "unknown";
  const auto next = planMetadata(v, false, onBrInt(kAllHere, &prev));
  EXPECT_EQ(next.networks.count(kNetB), 0u);
  EXPECT_TRUE(next.lost.empty());
  EXPECT_EQ(next.warnings.size(), 1u);
}

TEST(MetadataPlannerSouthboundLoss, AMigrationTargetWhoseVmNeverArrivedIsNotKept) {
  auto v = view();
  for (auto& p : v.rows.mutableCopy().ports)
    if (p.logicalPort == "lsp-b1") p.onChassis = false, p.onAdditional = true;
  const auto prev = planMetadata(v, false, onBrInt({"lsp-a1", "lsp-a2"}, nullptr));
  ASSERT_EQ(prev.networks.count(kNetB), 1u);
  const auto next = planMetadata(view({"dp-b"}), false, onBrInt({"lsp-a1", "lsp-a2"}, &prev));
  EXPECT_EQ(next.networks.count(kNetB), 0u);
}

TEST(MetadataPlannerSouthboundLoss, AVmInterfaceAloneNeverCreatesANetwork) {
  // Nothing was served for it: the interface of an unknown port is no reason for a namespace.
  const auto plan = planMetadata(view({"dp-b"}), false, onBrInt(kAllHere, nullptr));
  EXPECT_EQ(plan.networks.count(kNetB), 0u);
  EXPECT_TRUE(plan.lost.empty());
}

TEST(MetadataPlannerSouthboundLoss, NoVmBoundHereWhileVmsAreOnBrIntIsNotSynced) {
  // The Southbound emptied (or replaced) and not rebuilt yet: ovn-controller has registered the
  // chassis again, nothing is bound to it.
  const auto prev = planMetadata(view(), false, onBrInt(kAllHere, nullptr));
  const auto emptied = planMetadata(view({"dp-a", "dp-b"}), false, onBrInt(kAllHere, &prev));
  EXPECT_FALSE(emptied.synced);
  EXPECT_EQ(emptied.notSyncedReason,
            "no VM port is bound to this chassis in the Southbound, but 3 VM interface(s) are on "
            "br-int (iface-id lsp-a1, lsp-a2, lsp-b1): the Southbound was emptied or replaced; "
            "nothing is removed until ovn-northd and ovn-controller have restored the bindings");
  // Both networks kept (and served from the last view).
  EXPECT_EQ(emptied.networks.size(), 2u);
  EXPECT_EQ(emptied.lost.size(), 2u);
  EXPECT_EQ(onlyPort(emptied, kNetA, "10.0.0.11")->deviceId, "instance-a1");

  // The same after a restart (no previous plan): not synced, so nothing is pruned either.
  const auto restarted = planMetadata(view({"dp-a", "dp-b"}), false, onBrInt(kAllHere, nullptr));
  EXPECT_FALSE(restarted.synced);
  EXPECT_TRUE(restarted.networks.empty());

  // A long list is cut after three.
  const auto many = planMetadata(view({"dp-a", "dp-b"}), false,
                                 onBrInt({"lsp-1", "lsp-2", "lsp-3", "lsp-4"}, nullptr));
  EXPECT_NE(many.notSyncedReason.find("4 VM interface(s) are on br-int (iface-id lsp-1, lsp-2, "
                                      "lsp-3, ...)"),
            std::string::npos)
      << many.notSyncedReason;
}

TEST(MetadataPlannerSouthboundLoss, NoVmHereAnywhereOrOneBoundHereIsSynced) {
  // A chassis with no VM at all: the empty view is the truth.
  EXPECT_TRUE(planMetadata(view({"dp-a", "dp-b"}), false, onBrInt({}, nullptr)).synced);
  // One VM bound here: the Southbound is not empty for this chassis (what it lacks is judged
  // per network, above).
  EXPECT_TRUE(planMetadata(view({"dp-b"}), false, onBrInt(kAllHere, nullptr)).synced);
  // A live-migration target counts as bound here.
  auto v = view({"dp-a"});
  for (auto& p : v.rows.mutableCopy().ports)
    if (p.logicalPort == "lsp-b1") p.onChassis = false, p.onAdditional = true;
  EXPECT_TRUE(planMetadata(v, false, onBrInt(kAllHere, nullptr)).synced);
  // A view that is not synced keeps its own reason.
  auto disconnected = view({"dp-a", "dp-b"});
  disconnected.synced = false;
  disconnected.notSyncedReason = "not connected";
  EXPECT_EQ(planMetadata(disconnected, false, onBrInt(kAllHere, nullptr)).notSyncedReason,
            "not connected");
}

TEST(MetadataPlannerSouthboundLoss, AnIfaceIdIsEscapedInTheReason) {
  const auto plan = planMetadata(view({"dp-a", "dp-b"}), false, onBrInt({"x\ny"}, nullptr));
  EXPECT_EQ(plan.notSyncedReason.find('\n'), std::string::npos) << plan.notSyncedReason;
}

TEST(MetadataPlannerSouthboundLoss, TheBridgeIsNamedAsConfigured) {
  const auto prev = planMetadata(view(), false, {kAllHere, nullptr, "br-vm"});
  const auto next = planMetadata(view({"dp-b"}), false, {kAllHere, &prev, "br-vm"});
  EXPECT_NE(next.lost.at(kNetB).find("still on br-vm"), std::string::npos);
}

}  // namespace
}  // namespace okna::metadata
