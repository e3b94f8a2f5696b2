#include "placement/desired.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/yaml_field.h"
#include "tests/support/test_paths.h"

namespace okna::placement {
namespace {

using nlohmann::json;
constexpr std::int64_t Mi = 1024 * 1024;

k8s::NodeInfo node(std::string cpu = "16", std::string memory = "64Gi") {
  k8s::NodeInfo n;
  n.name = "cmp-1";
  n.uid = "7f1d3c2a-0000-4000-8000-000000000001";
  n.allocatable = {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}};
  return n;
}

k8s::PodInfo pod(std::string name, std::string cpu, std::string memory,
                 std::string phase = "Running", bool vm = false) {
  k8s::PodInfo p;
  p.namespace_ = "ns";
  p.name = std::move(name);
  p.nodeName = "cmp-1";
  p.phase = std::move(phase);
  if (vm) p.labels["kubevirt.io"] = "virt-launcher";
  k8s::ContainerInfo c;
  c.name = "main";
  c.requests = {{"cpu", cpu}, {"memory", memory}};
  p.containers.push_back(c);
  return p;
}

TEST(DesiredTest, RootProviderAndBasicInventories) {
  PlacementConfig cfg;
  auto t = planPlacement(cfg, node("15500m", "60498112Ki"), {});
  EXPECT_EQ(t.root.name, "cmp-1");
  EXPECT_EQ(t.root.uuid, "7f1d3c2a-0000-4000-8000-000000000001");
  ASSERT_EQ(t.root.inventories.size(), 2u);
  EXPECT_EQ(t.root.inventories.at("VCPU"), (Inventory{15, 0, 1, 15, 1, 4.0}));
  // 60498112 KiB = 59080.1875 MiB: rounded down.
  EXPECT_EQ(t.root.inventories.at("MEMORY_MB"), (Inventory{59080, 0, 1, 59080, 1, 1.0}));
  EXPECT_TRUE(t.nested.empty());
  Traits want{"COMPUTE_NODE"};
  for (const auto& c : defaultCapabilityTraits()) want.insert(c);
  EXPECT_EQ(t.root.traits, want);
  EXPECT_TRUE(t.warnings.empty());
}

struct ReservedCase {
  const char* name;
  std::vector<k8s::PodInfo> pods;
  std::int64_t vcpuReserved;
  std::int64_t memReserved;
};

TEST(DesiredTest, ReservedFromNonVmPods) {
  PlacementConfig cfg;
  cfg.perVmMemoryOverheadMb = 200;
  k8s::PodInfo otherNode = pod("elsewhere", "4", "4Gi");
  otherNode.nodeName = "cmp-2";
  const std::vector<ReservedCase> cases = {
      {"no pods", {}, 0, 0},
      {"millicores add up, then round up once",
       {pod("a", "100m", "100Mi"), pod("b", "950m", "1Mi")},
       2,
       101},
      {"exact CPUs are not rounded up", {pod("a", "500m", "1Mi"), pod("b", "1500m", "1Mi")}, 2, 2},
      {"bytes round up to MiB", {pod("a", "0", "1")}, 0, 1},
      {"VM pods only add the per-VM overhead",
       {pod("vm1", "2", "4Gi", "Running", true), pod("vm2", "1", "2Gi", "Pending", true),
        pod("infra", "1", "1Gi")},
       1,
       1024 + 2 * 200},
      {"succeeded and failed pods do not count",
       {pod("done", "4", "4Gi", "Succeeded"), pod("bad", "4", "4Gi", "Failed"),
        pod("vmdone", "1", "1Gi", "Succeeded", true)},
       0,
       0},
      {"pending pods count from the moment they are bound",
       {pod("new", "1", "1Gi", "Pending")},
       1,
       1024},
      {"pods bound elsewhere are ignored", {otherNode}, 0, 0},
  };
  for (const auto& tc : cases) {
    auto t = planPlacement(cfg, node(), tc.pods);
    EXPECT_EQ(t.root.inventories.at("VCPU").reserved, tc.vcpuReserved) << tc.name;
    EXPECT_EQ(t.root.inventories.at("MEMORY_MB").reserved, tc.memReserved) << tc.name;
    EXPECT_EQ(t.root.inventories.at("VCPU").total, 16)
        << tc.name << ": only reserved moves with pods";
  }
}

TEST(DesiredTest, ReservedIsClampedToTotalWithAWarning) {
  PlacementConfig cfg;
  auto t = planPlacement(cfg, node("4", "8Gi"), {pod("big", "6", "10Gi")});
  EXPECT_EQ(t.root.inventories.at("VCPU").reserved, 4);
  EXPECT_EQ(t.root.inventories.at("MEMORY_MB").reserved, 8192);
  ASSERT_EQ(t.warnings.size(), 2u);
  EXPECT_NE(t.warnings[0].find("VCPU reserved 6 exceeds total 4"), std::string::npos)
      << t.warnings[0];
  EXPECT_EQ(t.nonVmRequests.cpuMillis, 6000) << "the unclamped value stays visible";
}

TEST(DesiredTest, HugeRequestsSaturateInsteadOfWrappingToNothingReserved) {
  PlacementConfig cfg;
  // Each alone saturates at INT64_MAX; their sum used to wrap to a negative, then 0, reserved.
  auto t = planPlacement(cfg, node("4", "8Gi"),
                         {pod("a", "12345678901234567890", "12345678901234567890"),
                          pod("b", "1", "1Gi"), pod("c", "12345678901234567890", "1Ei")});
  EXPECT_EQ(t.nonVmRequests.cpuMillis, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(t.nonVmRequests.memoryBytes, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(t.root.inventories.at("VCPU").reserved, 4);
  EXPECT_EQ(t.root.inventories.at("MEMORY_MB").reserved, 8192);
}

TEST(DesiredTest, DedicatedCpus) {
  PlacementConfig cfg;
  auto n = node("16");
  n.annotations[kDedicatedCpusAnnotation] = "12";
  auto t = planPlacement(cfg, n, {pod("infra", "1500m", "1Gi")});
  EXPECT_EQ(t.root.inventories.at("VCPU"), (Inventory{4, 2, 1, 4, 1, 4.0}));
  EXPECT_EQ(t.root.inventories.at("PCPU"), (Inventory{12, 0, 1, 12, 1, 1.0}));

  n.annotations[kDedicatedCpusAnnotation] = "16";
  t = planPlacement(cfg, n, {});
  EXPECT_EQ(t.root.inventories.count("VCPU"), 0u) << "total 0 is refused by Placement: omitted";
  EXPECT_EQ(t.root.inventories.at("PCPU").total, 16);

  n.annotations[kDedicatedCpusAnnotation] = "many";
  t = planPlacement(cfg, n, {});
  EXPECT_EQ(t.root.inventories.count("PCPU"), 0u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find(kDedicatedCpusAnnotation), std::string::npos);
}

TEST(DesiredTest, AllocationRatioAnnotations) {
  PlacementConfig cfg;
  cfg.cpuAllocationRatio = 8;
  auto n = node();
  n.annotations[kCpuRatioAnnotation] = "2.5";
  n.annotations[kRamRatioAnnotation] = "-1";
  auto t = planPlacement(cfg, n, {});
  EXPECT_DOUBLE_EQ(t.root.inventories.at("VCPU").allocationRatio, 2.5);
  EXPECT_DOUBLE_EQ(t.root.inventories.at("MEMORY_MB").allocationRatio, 1.0);
  // The annotation is enforced; an unset config ratio leaves MEMORY_MB's to Placement.
  EXPECT_EQ(t.root.ratioFromServer, (std::set<std::string>{"MEMORY_MB"}));
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0],
            "annotation placement.openkeel.io/ram-allocation-ratio=\"-1\" is not a number in "
            "(0, 1000]; ignored");
}

// Nova's ComputeDriver._get_allocation_ratios: configured -> enforced; unset -> Placement's value
// kept, the initial ratio for a new class only.
TEST(DesiredTest, AllocationRatiosFollowNovasRule) {
  PlacementConfig cfg;
  auto t = planPlacement(cfg, node(), {});
  EXPECT_DOUBLE_EQ(t.root.inventories.at("VCPU").allocationRatio, 4.0);
  EXPECT_DOUBLE_EQ(t.root.inventories.at("MEMORY_MB").allocationRatio, 1.0);
  EXPECT_EQ(t.root.ratioFromServer, (std::set<std::string>{"MEMORY_MB", "VCPU"}));
  cfg.initialCpuAllocationRatio = 16;
  cfg.ramAllocationRatio = 1.5;
  t = planPlacement(cfg, node(), {});
  EXPECT_DOUBLE_EQ(t.root.inventories.at("VCPU").allocationRatio, 16);
  EXPECT_DOUBLE_EQ(t.root.inventories.at("MEMORY_MB").allocationRatio, 1.5);
  EXPECT_EQ(t.root.ratioFromServer, (std::set<std::string>{"VCPU"}));
}

TEST(DesiredTest, HugepagesAsNestedProvidersMemoryNotCutTwice) {
  PlacementConfig cfg;
  auto n = node("16", "60Gi");
  n.allocatable["hugepages-1Gi"] = "8Gi";
  n.allocatable["hugepages-2Mi"] = "1Gi";
  n.allocatable["hugepages-32Mi"] = "0";
  auto t = planPlacement(cfg, n, {});
  EXPECT_EQ(t.root.inventories.at("MEMORY_MB").total, 60 * 1024);
  ASSERT_EQ(t.nested.size(), 2u);
  EXPECT_EQ(t.nested[0].name, "cmp-1:hugepages-1Gi");
  EXPECT_EQ(t.nested[0].inventories.at("MEMORY_MB"), (Inventory{8192, 0, 1, 8192, 1, 1.0}));
  EXPECT_EQ(t.nested[0].traits, (Traits{"CUSTOM_HUGEPAGES_1G"}));
  EXPECT_EQ(t.nested[1].traits, (Traits{"CUSTOM_HUGEPAGES_2M"}));
  EXPECT_EQ(t.nested[1].inventories.at("MEMORY_MB").total, 1024);
  // Stable, distinct, valid v5 uuids.
  EXPECT_EQ(t.nested[0].uuid, planPlacement(cfg, n, {}).nested[0].uuid);
  EXPECT_NE(t.nested[0].uuid, t.nested[1].uuid);
  EXPECT_EQ(t.nested[0].uuid.size(), 36u);
  EXPECT_EQ(t.nested[0].uuid[14], '5');

  cfg.hugepagesModel = HugepagesModel::CustomClass;
  t = planPlacement(cfg, n, {});
  EXPECT_TRUE(t.nested.empty());
  EXPECT_EQ(t.root.inventories.at("CUSTOM_HUGEPAGES_1G").total, 8);
  EXPECT_EQ(t.root.inventories.at("CUSTOM_HUGEPAGES_2M").total, 512);
}

TEST(DesiredTest, Traits) {
  PlacementConfig cfg;
  cfg.capabilityTraits = {};
  auto n = node();
  n.labels = {{"cpu-feature.node.kubevirt.io/sse4.2", "true"},
              {"cpu-feature.node.kubevirt.io/avx512f", "true"},
              {"cpu-feature.node.kubevirt.io/aes", "true"},
              {"cpu-feature.node.kubevirt.io/avx2", "false"},
              {"cpu-feature.node.kubevirt.io/amd-ssbd", "true"},
              {"trait.openkeel.io/CUSTOM_GPU_LAB", ""},
              {"trait.openkeel.io/COMPUTE_NET_VIRTIO_PACKED", ""},
              {"trait.openkeel.io/custom_lower", ""},
              {"trait.openkeel.io/CUSTOM_", ""},
              {"kubernetes.io/hostname", "cmp-1"}};
  n.unschedulable = true;
  auto t = planPlacement(cfg, n, {});
  EXPECT_EQ(t.root.traits,
            (Traits{"COMPUTE_NET_VIRTIO_PACKED", "COMPUTE_NODE", "COMPUTE_STATUS_DISABLED",
                    "CUSTOM_GPU_LAB", "HW_CPU_X86_AESNI", "HW_CPU_X86_AMD_SSBD",
                    "HW_CPU_X86_AVX512F", "HW_CPU_X86_SSE42"}));
  EXPECT_EQ(t.warnings.size(), 2u);
}

TEST(DesiredTest, UnderTheHardenedProfileTraitsComeOnlyFromKeysAKubeletCannotSet) {
  auto n = node();
  n.labels = {{"trait.openkeel.io/CUSTOM_TRUSTED_HOST", ""},
              {"node-restriction.kubernetes.io/openkeel-trait-CUSTOM_GPU_LAB", ""},
              {"node-restriction.kubernetes.io/openkeel-trait-custom_lower", ""}};
  PlacementConfig cfg;
  cfg.capabilityTraits = {};
  // Default profile: both spellings count.
  auto open = planPlacement(cfg, n, {});
  EXPECT_EQ(open.root.traits, (Traits{"COMPUTE_NODE", "CUSTOM_GPU_LAB", "CUSTOM_TRUSTED_HOST"}));
  // Hardened: a compromised kubelet could set trait.openkeel.io/* on its own Node and attract
  // VMs that require the trait; only node-restriction.kubernetes.io/ keys count.
  cfg.trustedTraitsOnly = true;
  auto hardened = planPlacement(cfg, n, {});
  EXPECT_EQ(hardened.root.traits, (Traits{"COMPUTE_NODE", "CUSTOM_GPU_LAB"}));
  ASSERT_EQ(hardened.warnings.size(), 2u);
  EXPECT_NE(hardened.warnings[0].find("label node-restriction.kubernetes.io/openkeel-trait-"
                                      "custom_lower: \"custom_lower\" is not a trait name"),
            std::string::npos)
      << hardened.warnings[0];
  EXPECT_EQ(hardened.warnings[1],
            "label trait.openkeel.io/CUSTOM_TRUSTED_HOST ignored: under the hardened profile the "
            "node's own kubelet could set it; use "
            "node-restriction.kubernetes.io/openkeel-trait-CUSTOM_TRUSTED_HOST");
}

// nova/virt/libvirt/utils.py CPU_TRAITS_MAPPING (python3-nova, Zed), every entry, written out
// independently of the implementation's table.
TEST(DesiredTest, CpuFeaturesAsNovaSpellsThem) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> nova = {
      {"3dnow", {"HW_CPU_X86_3DNOW"}},
      {"abm", {"HW_CPU_X86_ABM"}},
      {"aes", {"HW_CPU_X86_AESNI"}},
      {"avx", {"HW_CPU_X86_AVX"}},
      {"avx2", {"HW_CPU_X86_AVX2"}},
      {"avx512bw", {"HW_CPU_X86_AVX512BW"}},
      {"avx512cd", {"HW_CPU_X86_AVX512CD"}},
      {"avx512dq", {"HW_CPU_X86_AVX512DQ"}},
      {"avx512er", {"HW_CPU_X86_AVX512ER"}},
      {"avx512f", {"HW_CPU_X86_AVX512F"}},
      {"avx512pf", {"HW_CPU_X86_AVX512PF"}},
      {"avx512vl", {"HW_CPU_X86_AVX512VL"}},
      {"avx512vnni", {"HW_CPU_X86_AVX512VNNI"}},
      {"avx512vbmi", {"HW_CPU_X86_AVX512VBMI"}},
      {"avx512ifma", {"HW_CPU_X86_AVX512IFMA"}},
      {"avx512vbmi2", {"HW_CPU_X86_AVX512VBMI2"}},
      {"avx512bitalg", {"HW_CPU_X86_AVX512BITALG"}},
      {"vaes", {"HW_CPU_X86_AVX512VAES"}},
      {"gfni", {"HW_CPU_X86_AVX512GFNI"}},
      {"vpclmulqdq", {"HW_CPU_X86_AVX512VPCLMULQDQ"}},
      {"avx512-vpopcntdq", {"HW_CPU_X86_AVX512VPOPCNTDQ"}},
      {"bmi1", {"HW_CPU_X86_BMI"}},
      {"bmi2", {"HW_CPU_X86_BMI2"}},
      {"pclmuldq", {"HW_CPU_X86_CLMUL"}},
      {"f16c", {"HW_CPU_X86_F16C"}},
      {"fma", {"HW_CPU_X86_FMA3"}},
      {"fma4", {"HW_CPU_X86_FMA4"}},
      {"mmx", {"HW_CPU_X86_MMX"}},
      {"mpx", {"HW_CPU_X86_MPX"}},
      {"sha-ni", {"HW_CPU_X86_SHA"}},
      {"sse", {"HW_CPU_X86_SSE"}},
      {"sse2", {"HW_CPU_X86_SSE2"}},
      {"sse3", {"HW_CPU_X86_SSE3"}},
      {"sse4.1", {"HW_CPU_X86_SSE41"}},
      {"sse4.2", {"HW_CPU_X86_SSE42"}},
      {"sse4a", {"HW_CPU_X86_SSE4A"}},
      {"ssse3", {"HW_CPU_X86_SSSE3"}},
      {"svm", {"HW_CPU_X86_SVM", "HW_CPU_X86_AMD_SVM"}},
      {"tbm", {"HW_CPU_X86_TBM"}},
      {"vmx", {"HW_CPU_X86_VMX", "HW_CPU_X86_INTEL_VMX"}},
      {"xop", {"HW_CPU_X86_XOP"}},
  };
  for (const auto& [feature, traits] : nova)
    EXPECT_EQ(cpuFeatureTraits(feature), traits) << feature;
  EXPECT_EQ(novaCpuTraitsMapping().size(), nova.size()) << "an entry Nova does not have";
  // Both of svm's traits reach the provider.
  PlacementConfig cfg;
  cfg.capabilityTraits = {};
  auto n = node();
  n.labels = {{"cpu-feature.node.kubevirt.io/svm", "true"}};
  EXPECT_EQ(planPlacement(cfg, n, {}).root.traits,
            (Traits{"COMPUTE_NODE", "HW_CPU_X86_AMD_SVM", "HW_CPU_X86_SVM"}));
}

TEST(DesiredTest, CpuFeaturesOutsideNovasTable) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"avx512vpopcntdq", "HW_CPU_X86_AVX512VPOPCNTDQ"},
      {"pclmulqdq", "HW_CPU_X86_CLMUL"},
      {"amd-ssbd", "HW_CPU_X86_AMD_SSBD"},
      {"tsc-deadline", "HW_CPU_X86_TSCDEADLINE"}};
  for (const auto& [feature, trait] : cases)
    EXPECT_EQ(cpuFeatureTraits(feature), std::vector<std::string>{trait}) << feature;
}

TEST(DesiredTest, RootCarriesComputeNodeAndTheCapabilityTraits) {
  PlacementConfig cfg;
  auto t = planPlacement(cfg, node(), {});
  EXPECT_TRUE(t.root.traits.count("COMPUTE_NODE"));
  for (const char* trait : {"COMPUTE_IMAGE_TYPE_RAW", "COMPUTE_IMAGE_TYPE_QCOW2",
                            "COMPUTE_STORAGE_BUS_VIRTIO", "COMPUTE_NET_VIF_MODEL_VIRTIO"})
    EXPECT_TRUE(t.root.traits.count(trait)) << trait;
  cfg.capabilityTraits = {"COMPUTE_IMAGE_TYPE_RAW"};
  EXPECT_EQ(planPlacement(cfg, node(), {}).root.traits,
            (Traits{"COMPUTE_IMAGE_TYPE_RAW", "COMPUTE_NODE"}));
}

TEST(DesiredTest, DryRunJsonShape) {
  PlacementConfig cfg;
  cfg.capabilityTraits = {};
  auto n = node("4", "8Gi");
  n.allocatable["hugepages-2Mi"] = "512Mi";
  n.labels["trait.openkeel.io/CUSTOM_B"] = "";
  n.labels["trait.openkeel.io/CUSTOM_A"] = "";
  const json got = toDryRunJson(planPlacement(cfg, n, {pod("infra", "250m", "300Mi")}));
  const json want = json::parse(R"({
    "provider": {"name": "cmp-1", "uuid": "7f1d3c2a-0000-4000-8000-000000000001"},
    "inventories": {
      "MEMORY_MB": {"total": 8192, "reserved": 300, "min_unit": 1, "max_unit": 8192, "step_size": 1, "allocation_ratio": 1.0},
      "VCPU": {"total": 4, "reserved": 1, "min_unit": 1, "max_unit": 4, "step_size": 1, "allocation_ratio": 4.0}},
    "nested": [{"name": "cmp-1:hugepages-2Mi", "uuid": "ba92e35c-8b87-5381-8cac-12a37f5f1fd5",
                "inventories": {"MEMORY_MB": {"total": 512, "reserved": 0, "min_unit": 1, "max_unit": 512, "step_size": 1, "allocation_ratio": 1.0}},
                "traits": ["CUSTOM_HUGEPAGES_2M"]}],
    "traits": ["COMPUTE_NODE", "CUSTOM_A", "CUSTOM_B"],
    "allocationRatiosFromPlacement": ["MEMORY_MB", "VCPU"],
    "availabilityZone": null})");
  EXPECT_EQ(got, want) << got.dump(2);
}

TEST(DesiredTest, LabNodeFromTestData) {
  auto doc = core::loadJsonOrYaml(std::string(::okna::testing::kTestDataDir) + "/lab-1.node.yaml");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  auto n = k8s::parseNode(*doc);
  ASSERT_TRUE(n.ok()) << n.error().message;
  auto podsDoc =
      core::loadJsonOrYaml(std::string(::okna::testing::kTestDataDir) + "/lab-1.pods.json");
  ASSERT_TRUE(podsDoc.ok());
  std::vector<k8s::PodInfo> pods;
  for (const auto& item : (*podsDoc)["items"]) pods.push_back(*k8s::parsePod(item));
  PlacementConfig cfg;
  cfg.capabilityTraits = {};
  auto t = planPlacement(cfg, *n, pods);
  // virt-handler 10m + galera max(1, 100m) = 1010m -> 2; 357Mi + 2Gi + one VM's overhead.
  EXPECT_EQ(t.root.inventories.at("VCPU"), (Inventory{15, 2, 1, 15, 1, 4.0}));
  EXPECT_EQ(t.root.inventories.at("MEMORY_MB").reserved, 357 + 2048 + 256);
  EXPECT_EQ(t.root.traits, (Traits{"COMPUTE_NODE", "HW_CPU_X86_AESNI", "HW_CPU_X86_AVX"}));
  ASSERT_EQ(t.nested.size(), 1u);
  EXPECT_EQ(t.vmPods, 1);
  ASSERT_EQ(t.nonVmPods.size(), 2u);
  EXPECT_EQ(t.nonVmPods[0].pod, "openkeel/galera-0");
}

}  // namespace
}  // namespace okna::placement
