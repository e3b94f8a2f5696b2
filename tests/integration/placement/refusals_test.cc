// "One refusal never blocks the rest" (issue #29 § 3), against the real Placement: a class that
// must leave while VMs use it, a child renamed by an operator, a child whose name is taken, a
// re-created Node whose old provider has children. In each case the cordon
// (COMPUTE_STATUS_DISABLED) still reaches Placement, and the operator is told what to do.

#include "tests/integration/placement/placement_it.h"

namespace okna::placement {
namespace {

bool hasEvent(const std::vector<std::pair<std::string, std::string>>& events,
              const std::string& reason, const std::string& text) {
  for (const auto& [r, m] : events)
    if (r == reason && m.find(text) != std::string::npos) return true;
  return false;
}

// A pinned VM holds PCPU; the dedicated-cpus annotation goes (and the node is cordoned in the
// same change): Placement answers 409 inventory.inuse to an inventory without PCPU. The agent
// keeps PCPU closed at what is used, the cordon's trait goes out anyway, and PCPU leaves once
// the VM is gone.
TEST_F(PlacementIT, ClassInUseIsKeptClosedAndTheCordonStillGoesOut) {
  node_.annotations["placement.openkeel.io/dedicated-cpus"] = "4";
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  ASSERT_EQ(inventories(uid_)["PCPU"]["total"], 4);
  const std::string vm = testing::randomUuid();
  ASSERT_EQ(op_.call("PUT", "/allocations/" + vm, allocation(uid_, {{"PCPU", 2}}), "1.28").status,
            204);

  node_.annotations.erase("placement.openkeel.io/dedicated-cpus");
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(
      testing::runUntil(io_, [&] { return traits(uid_).count("COMPUTE_STATUS_DISABLED") == 1; }));
  ASSERT_TRUE(testing::runUntil(io_, [&] { return inventories(uid_)["VCPU"]["total"] == 16; }));
  const json inv = inventories(uid_);
  ASSERT_TRUE(inv.contains("PCPU")) << inv.dump();
  EXPECT_EQ(inv["PCPU"]["total"], 2) << "lowered to what the VM uses";
  EXPECT_EQ(inv["PCPU"]["reserved"], 2) << "closed: nothing new lands there";
  // Placement itself now refuses a new PCPU claim.
  EXPECT_EQ(op_.call("PUT", "/allocations/" + testing::randomUuid(),
                     allocation(uid_, {{"PCPU", 1}}), "1.28")
                .status,
            409);
  ASSERT_TRUE(testing::runUntil(io_, [&] {
    return placementDetail(health_).find("keeping PCPU (2 in use)") != std::string::npos;
  })) << placementDetail(health_);
  EXPECT_TRUE(health_.ready());
  EXPECT_TRUE(hasEvent(events_, "PlacementClassInUse", "keeping PCPU (2 in use) on " + name_));

  // The VM goes: the retry removes PCPU.
  ASSERT_EQ(op_.call("DELETE", "/allocations/" + vm).status, 204);
  ASSERT_TRUE(testing::runUntil(io_, [&] { return !inventories(uid_).contains("PCPU"); }))
      << inventories(uid_).dump();
  ASSERT_TRUE(testing::runUntil(
      io_, [&] { return placementDetail(health_).find("PCPU") == std::string::npos; }));
  EXPECT_EQ(r->failedPasses(), 0u);
}

// The agent's child is recognised by its uuid after an operator renamed it, and named back; a
// cordon in the same pass still goes out.
TEST_F(PlacementIT, RenamedChildIsRecognisedByUuidAndNamedBack) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  r.reset();
  const std::string child = uuid5(uid_ + "/hugepages-1Gi");
  ASSERT_EQ(op_.call("PUT", "/resource_providers/" + child,
                     {{"name", "renamed-" + name_}, {"parent_provider_uuid", uid_}})
                .status,
            200);
  node_.unschedulable = true;
  r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  EXPECT_EQ(traits(uid_).count("COMPUTE_STATUS_DISABLED"), 1u);
  EXPECT_EQ(get("/resource_providers/" + child)["name"], name_ + ":hugepages-1Gi");
  EXPECT_EQ(get("/resource_providers?in_tree=" + uid_)["resource_providers"].size(), 3u)
      << "no second child was made";
  EXPECT_EQ(r->failedPasses(), 0u);
}

// A child's name taken by another provider: reported with the holder's uuid, and the root (its
// cordon) and the other child are still brought up to date.
TEST_F(PlacementIT, ChildNameTakenIsReportedAndHoldsNothingBack) {
  const std::string squatter = testing::randomUuid();
  ASSERT_EQ(op_.call("POST", "/resource_providers",
                     {{"name", name_ + ":hugepages-1Gi"}, {"uuid", squatter}})
                .status,
            200);
  node_.unschedulable = true;
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  EXPECT_TRUE(health_.ready());
  EXPECT_EQ(traits(uid_).count("COMPUTE_STATUS_DISABLED"), 1u);
  EXPECT_EQ(inventories(uuid5(uid_ + "/hugepages-2Mi"))["MEMORY_MB"]["total"], 512);
  const std::string detail = placementDetail(health_);
  EXPECT_NE(detail.find("cannot create " + name_ + ":hugepages-1Gi"), std::string::npos) << detail;
  EXPECT_NE(detail.find("taken by resource provider " + squatter), std::string::npos) << detail;
  EXPECT_TRUE(hasEvent(events_, "PlacementProviderNameTaken", squatter));
  // The operator deletes the squatter: the retry creates the child.
  ASSERT_EQ(op_.call("DELETE", "/resource_providers/" + squatter).status, 204);
  ASSERT_TRUE(testing::runUntil(io_, [&] {
    return op_.call("GET", "/resource_providers/" + uuid5(uid_ + "/hugepages-1Gi")).status == 200;
  }));
  ASSERT_TRUE(testing::runUntil(
      io_, [&] { return placementDetail(health_).find("cannot create") == std::string::npos; }));
}

// The Node was re-created: the old provider keeps its name, and the message names the children
// an operator must delete before it (Placement refuses to delete a root with children).
TEST_F(PlacementIT, ProviderNameTakenNamesTheChildrenToDeleteFirst) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  r.reset();
  const std::string oldUid = uid_;
  node_.uid = testing::randomUuid();
  r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return r->failedPasses() >= 1; }));
  const std::string detail = placementDetail(health_);
  EXPECT_NE(detail.find("delete its children first (" + name_ + ":hugepages-1Gi " +
                        uuid5(oldUid + "/hugepages-1Gi")),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find(name_ + ":hugepages-2Mi " + uuid5(oldUid + "/hugepages-2Mi")),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("openstack resource provider delete " + oldUid), std::string::npos);
  EXPECT_TRUE(hasEvent(events_, "PlacementProviderNameTaken", name_ + ":hugepages-1Gi"));
}

}  // namespace
}  // namespace okna::placement
