#pragma once
// The pure Placement planner: from the Node, its Pods and the config to the provider tree the
// node should have in Placement. No I/O, no clock; the reconciler and --dry-run share it.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "k8s/objects.h"
#include "placement/config.h"
#include "placement/pod_requests.h"
#include "placement/types.h"

namespace okna::placement {

// Node annotations the planner reads (documented in placement/README.md).
inline constexpr const char* kDedicatedCpusAnnotation = "placement.openkeel.io/dedicated-cpus";
inline constexpr const char* kCpuRatioAnnotation = "placement.openkeel.io/cpu-allocation-ratio";
inline constexpr const char* kRamRatioAnnotation = "placement.openkeel.io/ram-allocation-ratio";
inline constexpr const char* kCpuFeatureLabelPrefix = "cpu-feature.node.kubevirt.io/";
inline constexpr const char* kTraitLabelPrefix = "trait.openkeel.io/";
// The same, under a prefix the NodeRestriction admission plugin keeps kubelets from setting.
inline constexpr const char* kTrustedTraitLabelPrefix =
    "node-restriction.kubernetes.io/openkeel-trait-";
inline constexpr const char* kDisabledTrait = "COMPUTE_STATUS_DISABLED";
inline constexpr const char* kComputeNodeTrait = "COMPUTE_NODE";

struct DesiredProvider {
  std::string name;
  std::string uuid;
  Inventories inventories;
  // The traits the agent wants on the provider (before the check against the server's list).
  Traits traits;
  // Classes whose allocation_ratio no one configured: the value in Placement is kept, and the
  // inventory's ratio (the initial one) applies only when the class is new (Nova's rule).
  std::set<std::string> ratioFromServer;
  // A device pool's class, whose `reserved` follows the non-VM pods (debounced like the root's);
  // empty for other providers.
  std::string reservedFromPods;
  // What the child stands for ("hugepages-1Gi", "device intel.com/sriov_physnet1"), for messages.
  std::string source;
};

/** A non-VM pod and its effective requests (for the over-commit warning). */
struct PodLoad {
  std::string pod;  // namespace/name
  PodRequests requests;
};

struct DesiredProviderTree {
  DesiredProvider root;
  // Hugepage providers (nested-trait model) and device pools, children of the root.
  std::vector<DesiredProvider> nested;
  // Children the agent would have made for a page size or device the node still names (in
  // allocatable or the config) but no longer offers: uuid -> source. Recognised by uuid, so a
  // renamed one is still found; they are emptied down to their allocations and deleted.
  std::map<std::string, std::string> formerChildren;
  // The availability zone (topology.kubernetes.io/zone) the host should be in; none: no label,
  // or availabilityZones.enabled false.
  std::optional<std::string> zone;
  // Extended resources of allocatable no device entry maps (logged once by the agent).
  std::vector<std::string> unmappedResources;
  // cpu-feature trait -> the other os-traits spelling, tried when the first is unknown.
  std::map<std::string, std::string> traitAlternatives;
  // Non-VM pods holding resources, largest CPU request first.
  std::vector<PodLoad> nonVmPods;
  int vmPods = 0;
  // Unclamped reservations (for metrics and the clamp warning).
  PodRequests nonVmRequests;
  std::vector<std::string> warnings;
};

DesiredProviderTree planPlacement(const PlacementConfig& config, const k8s::NodeInfo& node,
                                  const std::vector<k8s::PodInfo>& pods);

/** {"provider": {"name", "uuid"}, "inventories": {...}, "nested": [...], "traits": [...]}. */
nlohmann::json toDryRunJson(const DesiredProviderTree& tree);
nlohmann::json inventoriesToJson(const Inventories& inventories);

/** Nova's CPU_TRAITS_MAPPING (nova/virt/libvirt/utils.py): libvirt feature -> os-traits. */
const std::map<std::string, std::vector<std::string>>& novaCpuTraitsMapping();
/**
 * The os-traits names of a KubeVirt cpu-feature label: Nova's table when it has the feature
 * ("svm" -> HW_CPU_X86_SVM and HW_CPU_X86_AMD_SVM), else upper case without '.'/'-'
 * ("sse4.2" -> "HW_CPU_X86_SSE42") with a few spellings of os-traits.
 */
std::vector<std::string> cpuFeatureTraits(const std::string& feature);
/** CUSTOM_[A-Z0-9_]+ (at most 255 characters). */
bool isCustomTraitName(const std::string& name);
/** [A-Z0-9_]+: the shape of any trait name, standard or custom. */
bool isTraitNameShape(const std::string& name);
/** The uuid of the child for `source` ("hugepages-1Gi", or a device's resource) of a root. */
std::string childUuid(const std::string& rootUuid, const std::string& source);
/** "intel.com/sriov_physnet1" -> "intel.com_sriov_physnet1": letters, digits, '.', '-', '_'. */
std::string safeName(const std::string& resource);
/** Name-based (v5) UUID of `name` in the OpenKeel namespace: stable ids for nested providers. */
std::string uuid5(const std::string& name);

}  // namespace okna::placement
