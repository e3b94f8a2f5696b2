// Device pools (placement.devices, issue #29 § 1): the config section and every mapping rule of
// the planner (missing resource, zero count, reservation by non-VM pods, unknown resource,
// custom class, fixed inventories, names and uuids, the dry-run shape).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/yaml_field.h"
#include "placement/config.h"
#include "placement/desired.h"

namespace okna::placement {
namespace {

using nlohmann::json;

constexpr const char* kUid = "7f1d3c2a-0000-4000-8000-000000000001";

core::Result<PlacementConfig> parse(const std::string& text) {
  return core::catchConfigErrors(
      [&] { return parsePlacementConfig(core::YamlField::root(YAML::Load(text), "agent.yaml")); });
}

PlacementConfig devicesConfig() {
  auto c = parse(R"(
devices:
- resource: intel.com/sriov_physnet1
  resourceClass: SRIOV_NET_VF
  traits: [CUSTOM_PHYSNET_PHYSNET1, HW_NIC_SRIOV, CUSTOM_VNIC_TYPE_DIRECT]
  inventories: {NET_BW_EGR_KILOBIT_PER_SEC: 10000000, NET_BW_IGR_KILOBIT_PER_SEC: 10000000}
- resource: nvidia.com/GA102GL_A10
  resourceClass: PGPU
  name: gpu0
- resource: devices.kubevirt.io/pci-10de-2236
  resourceClass: CUSTOM_PCI_10DE_2236
)");
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? *c : PlacementConfig{};
}

k8s::NodeInfo node() {
  k8s::NodeInfo n;
  n.name = "cmp-1";
  n.uid = kUid;
  n.allocatable = {{"cpu", "16"},
                   {"memory", "64Gi"},
                   {"pods", "110"},
                   {"intel.com/sriov_physnet1", "8"},
                   {"nvidia.com/GA102GL_A10", "2"},
                   {"devices.kubevirt.io/pci-10de-2236", "1"},
                   {"devices.kubevirt.io/kvm", "1k"}};
  return n;
}

k8s::PodInfo podWith(const std::string& name, const std::string& resource, const std::string& n,
                     bool vm = false, const std::string& phase = "Running") {
  k8s::PodInfo p;
  p.namespace_ = "ns";
  p.name = name;
  p.nodeName = "cmp-1";
  p.phase = phase;
  if (vm) p.labels["kubevirt.io"] = "virt-launcher";
  p.containers.push_back({"main", {{resource, n}}, ""});
  return p;
}

const DesiredProvider* child(const DesiredProviderTree& t, const std::string& name) {
  for (const auto& c : t.nested)
    if (c.name == name) return &c;
  return nullptr;
}

bool hasWarning(const DesiredProviderTree& t, const std::string& text) {
  for (const auto& w : t.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

TEST(DevicesConfigTest, TheIssuesShape) {
  const PlacementConfig c = devicesConfig();
  ASSERT_EQ(c.devices.size(), 3u);
  EXPECT_EQ(c.devices[0].resource, "intel.com/sriov_physnet1");
  EXPECT_EQ(c.devices[0].resourceClass, "SRIOV_NET_VF");
  EXPECT_EQ(c.devices[0].name, "");
  EXPECT_EQ(c.devices[0].traits,
            (Traits{"CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_DIRECT", "HW_NIC_SRIOV"}));
  EXPECT_EQ(c.devices[0].inventories.at("NET_BW_EGR_KILOBIT_PER_SEC"), 10000000);
  EXPECT_EQ(c.devices[1].name, "gpu0");
  EXPECT_TRUE(parse("devices: []")->devices.empty());
}

TEST(DevicesConfigTest, MalformedEntriesNameFileLineColumnAndKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"devices:\n- resourceClass: PGPU\n", "agent.yaml:2:3: devices[0]: resource is required"},
      {"devices:\n- {resource: nvidia.com/a}\n", "devices[0]: resourceClass is required"},
      {"devices:\n- resource: gpu\n  resourceClass: PGPU\n",
       "agent.yaml:2:13: devices[0].resource: \"gpu\" is not an extended resource"},
      {"devices:\n- {resource: hugepages-1Gi/x, resourceClass: PGPU}\n",
       "devices[0].resource: \"hugepages-1Gi/x\" is not an extended resource"},
      {"devices:\n- {resource: a.com/b, resourceClass: sriov_net_vf}\n",
       "devices[0].resourceClass: \"sriov_net_vf\" is not a resource class name"},
      {"devices:\n- {resource: a.com/b, resourceClass: VCPU}\n",
       "devices[0].resourceClass: VCPU is a class of the root provider"},
      {"devices:\n- {resource: a.com/b, resourceClass: PGPU, traits: [physnet1]}\n",
       "devices[0].traits: \"physnet1\" is not a trait name"},
      {"devices:\n- {resource: a.com/b, resourceClass: PGPU, inventories: {PGPU: 2}}\n",
       "devices[0].inventories.PGPU: PGPU is the pool's own class"},
      {"devices:\n- {resource: a.com/b, resourceClass: PGPU, inventories: {X_Y: 0}}\n",
       "devices[0].inventories.X_Y: 0 is out of range"},
      {"devices:\n- {resource: a.com/b, resourceClass: PGPU, count: 2}\n",
       "devices[0].count: unknown key"},
      {"devices:\n- {resource: a.com/b, resourceClass: PGPU}\n- {resource: a.com/b, "
       "resourceClass: VGPU}\n",
       "devices[1]: resource a.com/b is mapped twice"},
      {"devices:\n- {resource: a.com/b, resourceClass: PGPU, name: p}\n- {resource: a.com/c, "
       "resourceClass: VGPU, name: p}\n",
       "devices[1]: name \"p\" is used twice"},
      {"devices: {resource: a.com/b}\n", "agent.yaml:1:10: devices: expected a list"},
  };
  for (const auto& [text, want] : cases) {
    auto c = parse(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.error().message.find(want), std::string::npos)
        << text << " -> " << c.error().message;
  }
}

TEST(DevicesPlanTest, EachMappedResourceIsAChildWithClassTraitsAndFixedInventories) {
  const auto t = planPlacement(devicesConfig(), node(), {});
  ASSERT_EQ(t.nested.size(), 3u);
  const auto* vf = child(t, "cmp-1:intel.com_sriov_physnet1");
  ASSERT_NE(vf, nullptr);
  EXPECT_EQ(vf->uuid, childUuid(kUid, "intel.com/sriov_physnet1"));
  EXPECT_EQ(vf->inventories.at("SRIOV_NET_VF"), (Inventory{8, 0, 1, 8, 1, 1.0}));
  EXPECT_EQ(vf->inventories.at("NET_BW_EGR_KILOBIT_PER_SEC"),
            (Inventory{10000000, 0, 1, 10000000, 1, 1.0}));
  EXPECT_EQ(vf->traits,
            (Traits{"CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_DIRECT", "HW_NIC_SRIOV"}));
  EXPECT_EQ(vf->reservedFromPods, "SRIOV_NET_VF");
  // The operator's name comes after the node's (provider names are cluster-wide).
  const auto* gpu = child(t, "cmp-1:gpu0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->inventories.at("PGPU").total, 2);
  const auto* pci = child(t, "cmp-1:devices.kubevirt.io_pci-10de-2236");
  ASSERT_NE(pci, nullptr);
  EXPECT_EQ(pci->inventories.at("CUSTOM_PCI_10DE_2236").total, 1);
  EXPECT_TRUE(t.unmappedResources.empty()) << "devices.kubevirt.io/kvm is KubeVirt's own";
}

TEST(DevicesPlanTest, UuidsAreNameBasedAndStable) {
  // Derived from the node's uid and the resource, not from the (renamable) name.
  EXPECT_EQ(childUuid(kUid, "intel.com/sriov_physnet1"),
            uuid5(std::string(kUid) + "/intel.com/sriov_physnet1"));
  PlacementConfig renamed = devicesConfig();
  renamed.devices[0].name = "ens1f0";
  EXPECT_EQ(planPlacement(renamed, node(), {}).nested.at(0).uuid,
            planPlacement(devicesConfig(), node(), {}).nested.at(0).uuid);
}

TEST(DevicesPlanTest, ReservedIsWhatNonVmPodsRequest) {
  k8s::PodInfo dpdk = podWith("dpdk", "intel.com/sriov_physnet1", "2");
  // An init container and a sidecar follow Kubernetes' rule, as for CPU and memory.
  dpdk.initContainers.push_back({"init", {{"intel.com/sriov_physnet1", "3"}}, ""});
  const auto t =
      planPlacement(devicesConfig(), node(),
                    {dpdk, podWith("vm", "intel.com/sriov_physnet1", "4", true),
                     podWith("done", "intel.com/sriov_physnet1", "1", false, "Succeeded"),
                     podWith("gpu-job", "nvidia.com/GA102GL_A10", "1")});
  EXPECT_EQ(child(t, "cmp-1:intel.com_sriov_physnet1")->inventories.at("SRIOV_NET_VF").reserved, 3)
      << "max(apps 2, init 3); the VM's VFs are Nova's allocations; a Succeeded pod holds none";
  EXPECT_EQ(child(t, "cmp-1:gpu0")->inventories.at("PGPU").reserved, 1);
}

TEST(DevicesPlanTest, ReservedAboveTheCountIsClampedWithAWarning) {
  const auto t =
      planPlacement(devicesConfig(), node(), {podWith("hog", "nvidia.com/GA102GL_A10", "5")});
  EXPECT_EQ(child(t, "cmp-1:gpu0")->inventories.at("PGPU"), (Inventory{2, 2, 1, 2, 1, 1.0}));
  EXPECT_TRUE(hasWarning(t, "nvidia.com/GA102GL_A10 reserved 5"));
}

TEST(DevicesPlanTest, MissingOrZeroResourceIsNoChildButAFormerOne) {
  auto n = node();
  n.allocatable.erase("nvidia.com/GA102GL_A10");
  n.allocatable["intel.com/sriov_physnet1"] = "0";
  const auto t = planPlacement(devicesConfig(), n, {});
  ASSERT_EQ(t.nested.size(), 1u);
  EXPECT_EQ(t.nested[0].name, "cmp-1:devices.kubevirt.io_pci-10de-2236");
  // Its child, if the node had one, is emptied down to its allocations and deleted.
  EXPECT_EQ(t.formerChildren.at(childUuid(kUid, "intel.com/sriov_physnet1")),
            "device intel.com/sriov_physnet1");
  EXPECT_EQ(t.formerChildren.at(childUuid(kUid, "nvidia.com/GA102GL_A10")),
            "device nvidia.com/GA102GL_A10");
  EXPECT_FALSE(t.formerChildren.count(childUuid(kUid, "devices.kubevirt.io/pci-10de-2236")));
  EXPECT_TRUE(t.warnings.empty()) << "a node without that card is not an error";
}

TEST(DevicesPlanTest, ShrinkingFollowsAllocatable) {
  auto n = node();
  n.allocatable["intel.com/sriov_physnet1"] = "5";  // three VFs failed and left the plugin
  const auto t = planPlacement(devicesConfig(), n, {});
  EXPECT_EQ(child(t, "cmp-1:intel.com_sriov_physnet1")->inventories.at("SRIOV_NET_VF").total, 5);
}

TEST(DevicesPlanTest, UnmappedResourceIsIgnoredWithAHint) {
  auto n = node();
  n.allocatable["xilinx.com/fpga-u250"] = "2";
  const auto t = planPlacement(devicesConfig(), n, {});
  EXPECT_EQ(t.unmappedResources, (std::vector<std::string>{"xilinx.com/fpga-u250"}));
  // An entry that left the config: its child, if any, is emptied and goes.
  EXPECT_EQ(t.formerChildren.at(childUuid(kUid, "xilinx.com/fpga-u250")),
            "device xilinx.com/fpga-u250");
  EXPECT_TRUE(
      hasWarning(t, "allocatable xilinx.com/fpga-u250: no placement.devices entry maps it"));
  EXPECT_TRUE(hasWarning(t, "resourceClass: CUSTOM_XILINX_COM_FPGA_U250"));
  EXPECT_EQ(t.nested.size(), 3u);
}

TEST(DevicesPlanTest, DryRunShowsTheChildren) {
  PlacementConfig c = devicesConfig();
  c.devices.resize(1);
  c.capabilityTraits = {};
  const json got = toDryRunJson(planPlacement(c, node(), {}))["nested"];
  const json want = json::parse(R"([{
    "name": "cmp-1:intel.com_sriov_physnet1",
    "uuid": ")" + childUuid(kUid, "intel.com/sriov_physnet1") +
                                R"(",
    "inventories": {
      "NET_BW_EGR_KILOBIT_PER_SEC": {"total": 10000000, "reserved": 0, "min_unit": 1, "max_unit": 10000000, "step_size": 1, "allocation_ratio": 1.0},
      "NET_BW_IGR_KILOBIT_PER_SEC": {"total": 10000000, "reserved": 0, "min_unit": 1, "max_unit": 10000000, "step_size": 1, "allocation_ratio": 1.0},
      "SRIOV_NET_VF": {"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8, "step_size": 1, "allocation_ratio": 1.0}},
    "traits": ["CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_DIRECT", "HW_NIC_SRIOV"]}])");
  EXPECT_EQ(got, want) << got.dump(2);
}

TEST(DevicesPlanTest, SafeNames) {
  EXPECT_EQ(safeName("intel.com/sriov_physnet1"), "intel.com_sriov_physnet1");
  EXPECT_EQ(safeName("a b/c:d"), "a_b_c_d");
}

}  // namespace
}  // namespace okna::placement
