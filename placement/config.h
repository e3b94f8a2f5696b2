#pragma once
// The `placement:` section of the agent's configuration. Every key is documented in
// placement/README.md; the defaults below are the ones an operator gets without the section.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/backoff.h"
#include "placement/types.h"

namespace okna::core {
class YamlField;
}

namespace okna::placement {

/** Inline Keystone credentials (the alternative to a clouds.yaml). Secrets live in files. */
struct AuthConfig {
  // "password", "v3applicationcredential", or "none" (no Keystone: an explicit endpoint and the
  // noauth2 token "admin"; for development and tests only).
  std::string type = "password";
  // Keystone's identity URL; "/v3" is appended when missing.
  std::string authUrl;
  std::string username;
  std::string userId;
  std::string userDomainName = "Default";
  std::string userDomainId;
  // The password, read from passwordFile (inline config) or given by clouds.yaml. Never logged.
  std::string passwordFile;
  std::string password;
  std::string projectName;
  std::string projectId;
  std::string projectDomainName = "Default";
  std::string projectDomainId;
  // "all" for a system-scoped token; empty for a project-scoped one.
  std::string systemScope;
  std::string applicationCredentialId;
  std::string applicationCredentialName;
  std::string applicationCredentialSecretFile;
  std::string applicationCredentialSecret;
};

enum class HugepagesModel {
  // One nested provider per page size, inventory MEMORY_MB, trait CUSTOM_HUGEPAGES_<size> (seed).
  NestedTrait,
  // One custom resource class per page size on the root, counted in pages (CUSTOM_HUGEPAGES_1G).
  CustomClass,
};

struct ReservedStep {
  // A new VCPU reservation is sent only when it moved by at least this many CPUs.
  std::int64_t vcpu = 1;
  // Likewise for MEMORY_MB, in MiB.
  std::int64_t memoryMb = 256;
};

/**
 * One device pool (`placement.devices[]`): an extended resource of the Node's allocatable
 * offered as a nested resource provider of the root (README, "Device pools").
 */
struct DeviceConfig {
  // Key of the Node's allocatable ("intel.com/sriov_physnet1").
  std::string resource;
  // Standard (SRIOV_NET_VF, PGPU, VGPU) or CUSTOM_* (created when missing).
  std::string resourceClass;
  // Provider name after "<node>:"; empty: the resource made safe ("intel.com_sriov_physnet1").
  std::string name;
  Traits traits;
  // Fixed totals on the same child (NET_BW_EGR_KILOBIT_PER_SEC for the PF's bandwidth).
  std::map<std::string, std::int64_t> inventories;
};

/** Availability zones as aggregates (`placement.availabilityZones`, README "Availability zones").
 */
struct AvailabilityZonesConfig {
  // With the compute role and a topology.kubernetes.io/zone label: the host in Nova's aggregate
  // az-<zone> and the root provider in the same aggregate in Placement.
  bool enabled = true;
  // Nova's compute API (".../v2.1"), bypassing the catalog's "compute" service.
  std::string computeEndpointOverride;
};

/** What KubeVirt VMs support (README, "Traits"). */
std::vector<std::string> defaultCapabilityTraits();

struct PlacementConfig {
  // The agent manages the node's provider while the node has the compute role; false: never.
  bool enabled = true;
  // clouds.yaml cloud name (--os-cloud / $OS_CLOUD when empty); when a cloud is found the
  // clouds.yaml settings win over `auth`.
  std::string cloud;
  // Explicit clouds.yaml path; empty = $OS_CLIENT_CONFIG_FILE, ./clouds.yaml,
  // ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml.
  std::string cloudsFile;
  AuthConfig auth;
  // Under the hardened role profile (set from nodeRoles.profile, not a key of its own): traits
  // only from labels a kubelet cannot set on its own Node
  // (node-restriction.kubernetes.io/openkeel-trait-<TRAIT>); trait.openkeel.io/* is ignored with
  // a warning.
  bool trustedTraitsOnly = false;
  // Catalog filters: region (empty = any) and interface (public, internal, admin).
  std::string regionName;
  std::string interface = "public";
  // Placement's base URL, bypassing the catalog.
  std::string endpointOverride;
  // PEM CA bundle for Keystone and Placement; verify=false skips TLS checks (logged).
  std::string cacert;
  bool verify = true;
  // VCPU and MEMORY_MB allocation ratios, Nova's rule: when set, enforced (the Node annotation
  // still wins); unset, the value in Placement is kept and the initial one applies to a new
  // class only (see README for the defaults).
  std::optional<double> cpuAllocationRatio;
  std::optional<double> ramAllocationRatio;
  double initialCpuAllocationRatio = 4.0;
  double initialRamAllocationRatio = 1.0;
  // Capability traits of the driver on the root provider, besides COMPUTE_NODE: what Nova's
  // image-type and image-metadata prefilters look for. The default is what KubeVirt supports.
  std::vector<std::string> capabilityTraits = defaultCapabilityTraits();
  // Pod changes are coalesced for this long before a new `reserved` is computed and sent.
  std::chrono::milliseconds debounce{30000};
  ReservedStep reservedStep;
  // Memory KubeVirt's virt-launcher uses on top of the guest RAM Nova allocates (MiB per VM).
  std::int64_t perVmMemoryOverheadMb = 256;
  HugepagesModel hugepagesModel = HugepagesModel::NestedTrait;
  // Device pools, each a nested provider; an extended resource no entry maps is ignored.
  std::vector<DeviceConfig> devices;
  AvailabilityZonesConfig availabilityZones;
  // Remembers which traits the agent added (per provider uuid) across restarts; a hostPath.
  // Empty: remembered in memory only.
  std::string stateFile = "/var/lib/openkeel-node-agent/placement-state.json";
  // A full re-read of the provider tree this often (repairs changes made behind our back);
  // 0 = only after errors and restarts.
  std::chrono::seconds resyncInterval{300};
  // Bounded retries of one write after a 409 placement.concurrent_update.
  int conflictRetries = 5;
  // Retry delays while Placement or Keystone is down or answers 5xx.
  core::BackoffConfig backoff{std::chrono::milliseconds(1000), std::chrono::milliseconds(60000),
                              2.0, 0.5};
  // Per-request timeout.
  std::chrono::milliseconds requestTimeout{30000};
};

/** Parses the `placement:` section; throws core::ConfigError naming the field. */
PlacementConfig parsePlacementConfig(const core::YamlField& section);

}  // namespace okna::placement
