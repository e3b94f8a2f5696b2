// Device pools (placement.devices, issue #29 § 1) against the real Placement: children created
// with their class, traits and fixed inventories; resized with allocatable; reserved by a non-VM
// pod; what Nova's scheduler gets for an SR-IOV port's request; removed while a VM holds a
// device (lowered to the allocation, deleted once it is gone).

#include "tests/integration/placement/placement_it.h"

namespace okna::placement {
namespace {

constexpr const char* kVf = "intel.com/sriov_physnet1";
constexpr const char* kGpu = "nvidia.com/GA102GL_A10";
constexpr const char* kPci = "devices.kubevirt.io/pci-10de-2236";

class DevicesIT : public PlacementIT {
 protected:
  void SetUp() override {
    PlacementIT::SetUp();
    if (IsSkipped()) return;
    config_.devices = {
        {kVf,
         "SRIOV_NET_VF",
         "",
         {"CUSTOM_PHYSNET_PHYSNET1", "HW_NIC_SRIOV", "CUSTOM_VNIC_TYPE_DIRECT"},
         {{"NET_BW_EGR_KILOBIT_PER_SEC", 10000000}, {"NET_BW_IGR_KILOBIT_PER_SEC", 10000000}}},
        {kGpu, "PGPU", "gpu0", {}, {}},
        {kPci, "CUSTOM_PCI_10DE_2236", "", {}, {}}};
    // No hugepage children: a plain MEMORY_MB request lands on the root only.
    node_.allocatable.erase("hugepages-1Gi");
    node_.allocatable.erase("hugepages-2Mi");
    node_.allocatable[kVf] = "8";
    node_.allocatable[kGpu] = "2";
    node_.allocatable[kPci] = "1";
  }
  std::string vf() const { return childUuid(uid_, kVf); }
  std::string gpu() const { return childUuid(uid_, kGpu); }
  std::string pci() const { return childUuid(uid_, kPci); }
};

TEST_F(DevicesIT, ChildrenCreatedResizedAndReserved) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  EXPECT_TRUE(health_.ready());
  const json vfp = get("/resource_providers/" + vf());
  EXPECT_EQ(vfp["name"], name_ + ":intel.com_sriov_physnet1");
  EXPECT_EQ(vfp["parent_provider_uuid"], uid_);
  json inv = inventories(vf());
  EXPECT_EQ(inv["SRIOV_NET_VF"]["total"], 8);
  EXPECT_EQ(inv["SRIOV_NET_VF"]["reserved"], 0);
  EXPECT_EQ(inv["NET_BW_EGR_KILOBIT_PER_SEC"]["total"], 10000000);
  EXPECT_EQ(traits(vf()), (std::set<std::string>{"CUSTOM_PHYSNET_PHYSNET1",
                                                 "CUSTOM_VNIC_TYPE_DIRECT", "HW_NIC_SRIOV"}));
  EXPECT_EQ(get("/resource_providers/" + gpu())["name"], name_ + ":gpu0");
  EXPECT_EQ(inventories(gpu())["PGPU"]["total"], 2);
  EXPECT_EQ(inventories(pci())["CUSTOM_PCI_10DE_2236"]["total"], 1) << "custom class created";

  // Two VFs fail and leave the device plugin's count: at once.
  node_.allocatable[kVf] = "6";
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(
      testing::runUntil(io_, [&] { return inventories(vf())["SRIOV_NET_VF"]["total"] == 6; }));
  // A DPDK pod takes two VFs: reserved, after the debounce window.
  k8s::PodInfo dpdk = makePod(name_, "dpdk", "1", "1Gi");
  dpdk.containers[0].requests[kVf] = "2";
  okna::testing::planAndUpdate(*r, node_, {dpdk});
  ASSERT_TRUE(
      testing::runUntil(io_, [&] { return inventories(vf())["SRIOV_NET_VF"]["reserved"] == 2; }));
  EXPECT_EQ(r->failedPasses(), 0u);
}

// What Nova's scheduler asks for an SR-IOV port (a numbered request group from Neutron's port,
// the flavor's resources unnumbered): this node's root with its VF child.
TEST_F(DevicesIT, AllocationCandidatesForAVfRequestAreTheRootAndItsVfChild) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  const auto reply = op_.call("GET",
                              "/allocation_candidates?resources=VCPU:2,MEMORY_MB:2048"
                              "&resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYSNET_PHYSNET1"
                              "&group_policy=isolate",
                              nullptr, "1.36");
  ASSERT_EQ(reply.status, 200) << reply.body.dump();
  bool found = false;
  for (const auto& req : reply.body["allocation_requests"]) {
    const json& a = req["allocations"];
    if (!a.contains(uid_)) continue;
    EXPECT_EQ(a.size(), 2u) << a.dump();
    ASSERT_TRUE(a.contains(vf())) << a.dump();
    EXPECT_EQ(a[uid_]["resources"], (json{{"VCPU", 2}, {"MEMORY_MB", 2048}}));
    EXPECT_EQ(a[vf()]["resources"], (json{{"SRIOV_NET_VF", 1}}));
    EXPECT_EQ(req["mappings"]["1"], json::array({vf()}));
    found = true;
  }
  EXPECT_TRUE(found) << reply.body.dump(2);
  // For the record (issue #29's closing note): what Nova's scheduler gets.
  std::cout << "allocation candidates for an SR-IOV request: " << reply.body.dump() << "\n";
  EXPECT_TRUE(reply.body["provider_summaries"].contains(vf()));
  // A physnet this node does not have: no candidate here.
  const auto none = op_.call("GET",
                             "/allocation_candidates?resources=VCPU:2"
                             "&resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYSNET_PHYSNET2"
                             "&group_policy=isolate",
                             nullptr, "1.36");
  EXPECT_FALSE(none.body["provider_summaries"].contains(uid_)) << none.body.dump();
}

TEST_F(DevicesIT, RemovedPoolIsLoweredToItsAllocationThenDeleted) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  const std::string vm = testing::randomUuid();
  ASSERT_EQ(op_.call("PUT", "/allocations/" + vm, allocation(gpu(), {{"PGPU", 1}}), "1.28").status,
            204);
  // The GPU's entry leaves the config, the node is cordoned in the same change.
  config_.devices.erase(config_.devices.begin() + 1);
  r.reset();
  node_.unschedulable = true;
  r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(
      testing::runUntil(io_, [&] { return traits(uid_).count("COMPUTE_STATUS_DISABLED") == 1; }));
  ASSERT_TRUE(testing::runUntil(io_, [&] {
    const json inv = inventories(gpu());
    return inv.contains("PGPU") && inv["PGPU"]["total"] == 1 && inv["PGPU"]["reserved"] == 1;
  })) << inventories(gpu()).dump();
  ASSERT_TRUE(testing::runUntil(io_, [&] {
    return placementDetail(health_).find("cannot delete " + name_ +
                                         ":gpu0 (retried): in use (PGPU 1)") != std::string::npos;
  })) << placementDetail(health_);
  EXPECT_TRUE(health_.ready());
  EXPECT_EQ(op_.call("PUT", "/allocations/" + testing::randomUuid(),
                     allocation(gpu(), {{"PGPU", 1}}), "1.28")
                .status,
            409)
      << "closed to new claims";
  ASSERT_EQ(op_.call("DELETE", "/allocations/" + vm).status, 204);
  ASSERT_TRUE(testing::runUntil(
      io_, [&] { return op_.call("GET", "/resource_providers/" + gpu()).status == 404; }));
  ASSERT_TRUE(testing::runUntil(
      io_, [&] { return placementDetail(health_).find("cannot delete") == std::string::npos; }));
  EXPECT_EQ(r->failedPasses(), 0u);
}

}  // namespace
}  // namespace okna::placement
