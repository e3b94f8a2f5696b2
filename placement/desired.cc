#include "placement/desired.h"

#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "k8s/quantity.h"
#include "placement/zones.h"

namespace okna::placement {

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;
constexpr std::int64_t kGiB = 1024 * kMiB;

// Features outside Nova's table whose os-traits name is not the upper-cased feature name.
const std::map<std::string, std::string>& cpuFeatureAliases() {
  static const std::map<std::string, std::string> aliases{
      {"pclmulqdq", "CLMUL"},
      {"sha", "SHA"},
      {"pcid", "INTEL_PCID"},
      {"md-clear", "INTEL_MD_CLEAR"},
      {"spec-ctrl", "INTEL_SPEC_CTRL"},
      {"ssbd", "INTEL_SSBD"},
      {"ibpb", "AMD_IBPB"},
      {"amd-ssbd", "AMD_SSBD"},
      {"virt-ssbd", "AMD_VIRT_SSBD"},
      {"amd-no-ssb", "AMD_NO_SSB"},
      {"sev", "AMD_SEV"},
  };
  return aliases;
}

std::string upper(std::string s, bool dropPunct, char replacement) {
  std::string out;
  for (char c : s) {
    if (c == '.' || c == '-') {
      if (!dropPunct) out += replacement;
      continue;
    }
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// A node annotation read as a ratio; a bad value is reported and ignored.
std::optional<double> annotatedRatio(const k8s::NodeInfo& node, const char* annotation,
                                     std::vector<std::string>& warnings) {
  auto it = node.annotations.find(annotation);
  if (it == node.annotations.end()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || end != it->second.c_str() + it->second.size() ||
      !(v > 0 && v <= 1000)) {
    warnings.push_back("annotation " + std::string(annotation) + "=\"" + it->second +
                       "\" is not a number in (0, 1000]; ignored");
    return std::nullopt;
  }
  return v;
}

// Nova's rule (ComputeDriver._get_allocation_ratios): a ratio someone configured (here the
// Node annotation, then the agent config) is enforced; otherwise the value in Placement is kept
// and the initial one applies to a new class only.
double allocationRatio(const k8s::NodeInfo& node, const char* annotation,
                       const std::optional<double>& configured, double initial,
                       const char* resourceClass, DesiredProviderTree& t) {
  if (auto v = annotatedRatio(node, annotation, t.warnings)) return *v;
  if (configured) return *configured;
  t.root.ratioFromServer.insert(resourceClass);
  return initial;
}

std::int64_t allocatable(const k8s::NodeInfo& node, const std::string& key, std::int64_t divisor,
                         std::vector<std::string>& warnings) {
  auto it = node.allocatable.find(key);
  if (it == node.allocatable.end()) return 0;
  auto q = k8s::Quantity::parse(it->second);
  if (!q || q->negative()) {
    warnings.push_back("node allocatable." + key + ": " + (q ? "negative" : q.error().message) +
                       "; offering none");
    return 0;
  }
  // Whole units only, rounded down: Placement must never offer more than the node has.
  return q->floorScaled(1) / divisor;
}

Inventory inventory(std::int64_t total, std::int64_t reserved, double ratio) {
  return Inventory{total, reserved, 1, total, 1, ratio};
}

// "1G" for 1 GiB pages, "2M" for 2 MiB ones: the suffix of the trait and custom class names.
std::string pageSizeTag(std::int64_t bytes) {
  if (bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "G";
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "M";
  return std::to_string(bytes / 1024) + "K";
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
  return a <= 0 ? 0 : a / b + (a % b != 0 ? 1 : 0);  // a + b - 1 would overflow near INT64_MAX
}

// KubeVirt's own device plugins: on every KubeVirt node, consumed by every VM's pod, not pools
// Nova schedules (no warning for them).
bool kubevirtInfraResource(const std::string& key) {
  return key == "devices.kubevirt.io/kvm" || key == "devices.kubevirt.io/tun" ||
         key == "devices.kubevirt.io/vhost-net" || key == "devices.kubevirt.io/sev";
}

// Device pools (placement.devices): one child per mapped extended resource the node offers.
void planDevices(const PlacementConfig& config, const k8s::NodeInfo& node,
                 const std::vector<k8s::PodInfo>& pods, DesiredProviderTree& t) {
  auto& w = t.warnings;
  std::set<std::string> mapped;
  for (const auto& d : config.devices) {
    mapped.insert(d.resource);
    const std::string uuid = childUuid(node.uid, d.resource);
    const std::string source = "device " + d.resource;
    // Absent (a node without that card, or its device plugin not registered yet) or 0 (every
    // device failed): no pool; a child made earlier is emptied down to its allocations and goes.
    const std::int64_t count =
        node.allocatable.count(d.resource) ? allocatable(node, d.resource, 1, w) : 0;
    if (count < 1) {
      t.formerChildren[uuid] = source;
      continue;
    }
    // Devices non-VM pods hold (a DPDK or infra pod with a VF) are not Nova's to give.
    std::int64_t held = 0;
    for (const auto& pod : pods) {
      if (!pod.nodeName.empty() && pod.nodeName != node.name) continue;
      if (!podHoldsResources(pod) || isVirtLauncher(pod)) continue;
      held = k8s::saturatingAdd(held, podResourceRequest(pod, d.resource, &w));
    }
    if (held > count) {
      w.push_back(d.resource + " reserved " + std::to_string(held) + " (non-VM pods) exceeds " +
                  std::to_string(count) + " allocatable; clamped (no device left for VMs)");
      held = count;
    }
    DesiredProvider child;
    child.name = node.name + ":" + (d.name.empty() ? safeName(d.resource) : d.name);
    child.uuid = uuid;
    child.source = source;
    child.inventories[d.resourceClass] = inventory(count, held, 1.0);
    for (const auto& [rc, total] : d.inventories) child.inventories[rc] = inventory(total, 0, 1.0);
    child.traits = d.traits;
    child.reservedFromPods = d.resourceClass;
    t.nested.push_back(std::move(child));
  }
  for (const auto& [key, value] : node.allocatable) {
    if (key.find('/') == std::string::npos || mapped.count(key)) continue;
    // Its entry may have left the config: a child made for it earlier is emptied and goes.
    t.formerChildren[childUuid(node.uid, key)] = "device " + key;
    if (!kubevirtInfraResource(key)) t.unmappedResources.push_back(key);
  }
  for (const auto& key : t.unmappedResources)
    w.push_back(
        "allocatable " + key +
        ": no placement.devices entry maps it, so Nova cannot schedule it (add {resource: " + key +
        ", resourceClass: CUSTOM_" + upper(safeName(key), false, '_') +
        "} or a standard class such as SRIOV_NET_VF or PGPU)");
}

}  // namespace

std::string childUuid(const std::string& rootUuid, const std::string& source) {
  return uuid5(rootUuid + "/" + source);
}

std::string safeName(const std::string& resource) {
  std::string out;
  for (char c : resource)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return out;
}

const std::map<std::string, std::vector<std::string>>& novaCpuTraitsMapping() {
  // nova/virt/libvirt/utils.py CPU_TRAITS_MAPPING (Zed and later), entry for entry: libvirt's
  // feature names, which KubeVirt's cpu-feature labels use too.
  static const std::map<std::string, std::vector<std::string>> table{
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
      // Nova keeps the old generic trait next to the vendor one.
      {"svm", {"HW_CPU_X86_SVM", "HW_CPU_X86_AMD_SVM"}},
      {"tbm", {"HW_CPU_X86_TBM"}},
      {"vmx", {"HW_CPU_X86_VMX", "HW_CPU_X86_INTEL_VMX"}},
      {"xop", {"HW_CPU_X86_XOP"}},
  };
  return table;
}

std::vector<std::string> cpuFeatureTraits(const std::string& feature) {
  if (auto it = novaCpuTraitsMapping().find(feature); it != novaCpuTraitsMapping().end())
    return it->second;
  if (auto it = cpuFeatureAliases().find(feature); it != cpuFeatureAliases().end())
    return {"HW_CPU_X86_" + it->second};
  return {"HW_CPU_X86_" + upper(feature, true, '_')};
}

bool isTraitNameShape(const std::string& name) {
  if (name.empty() || name.size() > 255) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool isCustomTraitName(const std::string& name) {
  return name.size() > 7 && name.starts_with("CUSTOM_") && isTraitNameShape(name);
}

std::string uuid5(const std::string& name) {
  // RFC 4122 name-based UUID (SHA-1) in a fixed namespace owned by OpenKeel.
  static constexpr std::array<unsigned char, 16> kNamespace{0x6f, 0x6b, 0x6e, 0x61, 0x2d, 0x70,
                                                            0x4c, 0x41, 0x83, 0x45, 0x6d, 0x65,
                                                            0x6e, 0x74, 0x00, 0x01};
  std::string input(reinterpret_cast<const char*>(kNamespace.data()), kNamespace.size());
  input += name;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0f) | 0x50);
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3f) | 0x80);
  char out[37];
  std::snprintf(
      out, sizeof out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
      digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
      digest[8], digest[9], digest[10], digest[11], digest[12], digest[13], digest[14], digest[15]);
  return out;
}

DesiredProviderTree planPlacement(const PlacementConfig& config, const k8s::NodeInfo& node,
                                  const std::vector<k8s::PodInfo>& pods) {
  DesiredProviderTree t;
  auto& w = t.warnings;
  t.root.name = node.name;
  t.root.uuid = node.uid;

  // Requests of the pods that are not VMs; VMs are Nova's allocations, only their overhead is ours.
  for (const auto& pod : pods) {
    if (!pod.nodeName.empty() && pod.nodeName != node.name) continue;
    if (!podHoldsResources(pod)) continue;
    if (isVirtLauncher(pod)) {
      ++t.vmPods;
      continue;
    }
    const PodRequests r = podRequests(pod, &w);
    t.nonVmRequests.cpuMillis = k8s::saturatingAdd(t.nonVmRequests.cpuMillis, r.cpuMillis);
    t.nonVmRequests.memoryBytes = k8s::saturatingAdd(t.nonVmRequests.memoryBytes, r.memoryBytes);
    t.nonVmPods.push_back({pod.namespace_ + "/" + pod.name, r});
  }
  std::stable_sort(t.nonVmPods.begin(), t.nonVmPods.end(), [](const PodLoad& a, const PodLoad& b) {
    return a.requests.cpuMillis > b.requests.cpuMillis;
  });

  const double cpuRatio = allocationRatio(node, kCpuRatioAnnotation, config.cpuAllocationRatio,
                                          config.initialCpuAllocationRatio, "VCPU", t);
  const double ramRatio = allocationRatio(node, kRamRatioAnnotation, config.ramAllocationRatio,
                                          config.initialRamAllocationRatio, "MEMORY_MB", t);
  const std::int64_t cpus = allocatable(node, "cpu", 1, w);
  std::int64_t pcpus = 0;
  if (auto it = node.annotations.find(kDedicatedCpusAnnotation); it != node.annotations.end()) {
    char* end = nullptr;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || v < 0) {
      w.push_back("annotation " + std::string(kDedicatedCpusAnnotation) + "=\"" + it->second +
                  "\" is not a non-negative integer; no PCPU offered");
    } else if (v > cpus) {
      w.push_back("annotation " + std::string(kDedicatedCpusAnnotation) + "=" + it->second +
                  " exceeds the node's allocatable CPUs (" + std::to_string(cpus) + "); using " +
                  std::to_string(cpus));
      pcpus = cpus;
    } else {
      pcpus = v;
    }
  }
  const auto clamp = [&](const char* rc, std::int64_t reserved, std::int64_t total) {
    if (reserved <= total) return reserved;
    w.push_back(std::string(rc) + " reserved " + std::to_string(reserved) + " exceeds total " +
                std::to_string(total) +
                "; clamped to the total (the node has no room left for VMs)");
    return total;
  };
  // Placement refuses total 0, so a class with nothing to offer is left out entirely.
  const std::int64_t vcpus = cpus - pcpus;
  if (vcpus >= 1)
    t.root.inventories["VCPU"] =
        inventory(vcpus, clamp("VCPU", ceilDiv(t.nonVmRequests.cpuMillis, 1000), vcpus), cpuRatio);
  if (pcpus >= 1) t.root.inventories["PCPU"] = inventory(pcpus, 0, 1.0);
  if (pcpus < 1) t.root.ratioFromServer.erase("PCPU");
  if (vcpus < 1) t.root.ratioFromServer.erase("VCPU");
  // The kubelet already took pre-allocated hugepages out of allocatable.memory: no second cut.
  const std::int64_t memMb = allocatable(node, "memory", kMiB, w);
  const std::int64_t memReserved = k8s::saturatingAdd(ceilDiv(t.nonVmRequests.memoryBytes, kMiB),
                                                      config.perVmMemoryOverheadMb * t.vmPods);
  if (memMb >= 1) {
    t.root.inventories["MEMORY_MB"] =
        inventory(memMb, clamp("MEMORY_MB", memReserved, memMb), ramRatio);
  } else {
    t.root.ratioFromServer.erase("MEMORY_MB");
  }

  for (const auto& [key, value] : node.allocatable) {
    if (!key.starts_with("hugepages-")) continue;
    auto size = k8s::Quantity::parse(key.substr(10));
    if (!size || size->floorScaled(1) <= 0) {
      w.push_back("node allocatable." + key + ": unknown page size; ignored");
      continue;
    }
    const std::int64_t pageBytes = size->floorScaled(1);
    const std::int64_t bytes = allocatable(node, key, 1, w);
    const std::string tag = pageSizeTag(pageBytes);
    if (config.hugepagesModel == HugepagesModel::CustomClass) {
      const std::int64_t pages = bytes / pageBytes;
      if (pages >= 1) t.root.inventories["CUSTOM_HUGEPAGES_" + tag] = inventory(pages, 0, 1.0);
      continue;
    }
    const std::int64_t mb = bytes / kMiB;
    if (mb < 1) {
      t.formerChildren[childUuid(node.uid, key)] = key;
      continue;
    }
    DesiredProvider child;
    child.name = node.name + ":" + key;
    child.uuid = childUuid(node.uid, key);
    child.source = key;
    child.inventories["MEMORY_MB"] = inventory(mb, 0, 1.0);
    child.traits.insert("CUSTOM_HUGEPAGES_" + tag);
    t.nested.push_back(std::move(child));
  }

  planDevices(config, node, pods, t);
  if (config.availabilityZones.enabled) t.zone = zoneOf(node, w);

  for (const auto& [key, value] : node.labels) {
    if (key.starts_with(kCpuFeatureLabelPrefix)) {
      if (value != "true") continue;
      const std::string feature = key.substr(std::string(kCpuFeatureLabelPrefix).size());
      const auto traits = cpuFeatureTraits(feature);
      t.root.traits.insert(traits.begin(), traits.end());
      // Outside Nova's table, os-traits sometimes keeps the separator as '_'.
      const std::string alt = "HW_CPU_X86_" + upper(feature, false, '_');
      if (!novaCpuTraitsMapping().count(feature) && alt != traits.front())
        t.traitAlternatives[traits.front()] = alt;
    } else if (key.starts_with(kTraitLabelPrefix) || key.starts_with(kTrustedTraitLabelPrefix)) {
      const bool trusted = key.starts_with(kTrustedTraitLabelPrefix);
      const std::string trait =
          key.substr(std::string(trusted ? kTrustedTraitLabelPrefix : kTraitLabelPrefix).size());
      if (!trusted && config.trustedTraitsOnly) {
        w.push_back("label " + key +
                    " ignored: under the hardened profile the node's own kubelet could set it; "
                    "use " +
                    kTrustedTraitLabelPrefix + trait);
      } else if (isTraitNameShape(trait) &&
                 (!trait.starts_with("CUSTOM_") || isCustomTraitName(trait))) {
        t.root.traits.insert(trait);
      } else {
        w.push_back("label " + key + ": \"" + trait +
                    "\" is not a trait name (a standard trait or CUSTOM_[A-Z0-9_]+); ignored");
      }
    }
  }
  // What every nova-compute root provider carries, and what the driver can do (Nova's
  // image-type and image-metadata prefilters require these).
  t.root.traits.insert(kComputeNodeTrait);
  t.root.traits.insert(config.capabilityTraits.begin(), config.capabilityTraits.end());
  if (node.unschedulable) t.root.traits.insert(kDisabledTrait);
  if (t.root.uuid.empty())
    w.push_back("node " + node.name + " has no metadata.uid; no provider can be registered");
  return t;
}

nlohmann::json inventoriesToJson(const Inventories& inventories) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [rc, inv] : inventories)
    out[rc] = {{"total", inv.total},        {"reserved", inv.reserved},
               {"min_unit", inv.minUnit},   {"max_unit", inv.maxUnit},
               {"step_size", inv.stepSize}, {"allocation_ratio", inv.allocationRatio}};
  return out;
}

nlohmann::json toDryRunJson(const DesiredProviderTree& tree) {
  nlohmann::json out;
  out["provider"] = {{"name", tree.root.name}, {"uuid", tree.root.uuid}};
  out["inventories"] = inventoriesToJson(tree.root.inventories);
  out["nested"] = nlohmann::json::array();
  for (const auto& child : tree.nested)
    out["nested"].push_back({{"name", child.name},
                             {"uuid", child.uuid},
                             {"inventories", inventoriesToJson(child.inventories)},
                             {"traits", child.traits}});
  out["traits"] = tree.root.traits;  // std::set: sorted
  // Classes whose allocation ratio nobody configured: Placement's value is kept.
  out["allocationRatiosFromPlacement"] = tree.root.ratioFromServer;
  // The zone aggregate the host joins in Nova (and the root in Placement); null: none.
  out["availabilityZone"] =
      tree.zone ? nlohmann::json{{"zone", *tree.zone},
                                 {"aggregate", std::string(kZoneAggregatePrefix) + *tree.zone}}
                : nlohmann::json(nullptr);
  return out;
}

}  // namespace okna::placement
