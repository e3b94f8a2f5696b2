#include "placement/config.h"

#include <cmath>
#include <set>

#include "core/yaml_field.h"
#include "placement/desired.h"

namespace okna::placement {

using core::YamlField;

namespace {

std::string interfaceName(const YamlField& f) {
  return f.asEnum({"public", "internal", "admin"});
}

AuthConfig parseAuth(const YamlField& f) {
  f.expectKeys({"type", "authUrl", "username", "userId", "userDomainName", "userDomainId",
                "passwordFile", "projectName", "projectId", "projectDomainName", "projectDomainId",
                "systemScope", "applicationCredentialId", "applicationCredentialName",
                "applicationCredentialSecretFile"});
  AuthConfig a;
  const auto str = [&](const char* key, std::string& out) {
    if (auto v = f.get(key)) out = v->asString();
  };
  if (auto v = f.get("type")) a.type = v->asEnum({"password", "v3applicationcredential", "none"});
  str("authUrl", a.authUrl);
  str("username", a.username);
  str("userId", a.userId);
  str("userDomainName", a.userDomainName);
  str("userDomainId", a.userDomainId);
  str("passwordFile", a.passwordFile);
  str("projectName", a.projectName);
  str("projectId", a.projectId);
  str("projectDomainName", a.projectDomainName);
  str("projectDomainId", a.projectDomainId);
  str("applicationCredentialId", a.applicationCredentialId);
  str("applicationCredentialName", a.applicationCredentialName);
  str("applicationCredentialSecretFile", a.applicationCredentialSecretFile);
  if (auto v = f.get("systemScope")) a.systemScope = v->asEnum({"all"});
  // Only the shape is checked here; whether the files can be read is checked when a token is
  // requested, so a secret mounted a moment after start does not fail the config.
  if (a.type == "password") {
    if (a.authUrl.empty()) f.fail("authUrl is required for type password");
    if (a.username.empty() && a.userId.empty())
      f.fail("username or userId is required for type password");
    if (a.passwordFile.empty()) f.fail("passwordFile is required for type password");
  } else if (a.type == "v3applicationcredential") {
    if (a.authUrl.empty()) f.fail("authUrl is required for type v3applicationcredential");
    if (a.applicationCredentialId.empty() && a.applicationCredentialName.empty())
      f.fail("applicationCredentialId or applicationCredentialName is required");
    if (a.applicationCredentialSecretFile.empty())
      f.fail("applicationCredentialSecretFile is required");
  }
  return a;
}

std::chrono::milliseconds seconds(const YamlField& f, double max) {
  return std::chrono::milliseconds(std::llround(f.asDouble(0, max) * 1000.0));
}

// Classes and resources the root already accounts for: a device pool must not offer them again.
bool rootResource(const std::string& key) {
  return key == "cpu" || key == "memory" || key == "pods" || key == "ephemeral-storage" ||
         key.starts_with("hugepages-");
}

bool rootClass(const std::string& rc) {
  return rc == "VCPU" || rc == "PCPU" || rc == "MEMORY_MB" || rc == "DISK_GB" ||
         rc.starts_with("CUSTOM_HUGEPAGES_");
}

void checkClassName(const YamlField& f, const std::string& rc) {
  if (!isTraitNameShape(rc) || rc == "CUSTOM_")
    f.fail("\"" + rc + "\" is not a resource class name (standard, or CUSTOM_[A-Z0-9_]+)");
  if (rootClass(rc)) f.fail(rc + " is a class of the root provider, not of a device pool");
}

DeviceConfig parseDevice(const YamlField& f) {
  f.expectKeys({"resource", "resourceClass", "name", "traits", "inventories"});
  DeviceConfig d;
  auto resource = f.get("resource");
  if (!resource) f.fail("resource is required (a key of the Node's allocatable)");
  d.resource = resource->asString();
  // An extended resource is "<domain>/<name>" (Kubernetes' qualified names); the root's own
  // resources are not pools.
  const auto slash = d.resource.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == d.resource.size() ||
      d.resource.size() > 253 || rootResource(d.resource))
    resource->fail(
        "\"" + d.resource +
        "\" is not an extended resource (<domain>/<name>, e.g. intel.com/sriov_physnet1)");
  auto rc = f.get("resourceClass");
  if (!rc) f.fail("resourceClass is required (SRIOV_NET_VF, PGPU, VGPU or CUSTOM_*)");
  d.resourceClass = rc->asString();
  checkClassName(*rc, d.resourceClass);
  if (auto v = f.get("name")) {
    d.name = v->asString();
    if (d.name.size() > 150)
      v->fail("at most 150 characters (Placement allows 200 with the node's)");
    for (char c : d.name)
      if (static_cast<unsigned char>(c) < 0x20) v->fail("control characters are not allowed");
  }
  if (auto v = f.get("traits"))
    for (const auto& t : v->asStringList()) {
      if (!isTraitNameShape(t) || (t.starts_with("CUSTOM_") && !isCustomTraitName(t)))
        v->fail("\"" + t + "\" is not a trait name (a standard trait or CUSTOM_[A-Z0-9_]+)");
      d.traits.insert(t);
    }
  if (auto v = f.get("inventories")) {
    for (const auto& [rcName, total] : v->entries()) {
      checkClassName(total, rcName);
      if (rcName == d.resourceClass)
        total.fail(rcName + " is the pool's own class (its total follows allocatable)");
      d.inventories[rcName] = total.asInt(1, std::int64_t{1} << 53);
    }
  }
  return d;
}

}  // namespace

std::vector<std::string> defaultCapabilityTraits() {
  return {
      // Disk images CDI imports (query_placement_for_image_type_support).
      "COMPUTE_IMAGE_TYPE_RAW",
      "COMPUTE_IMAGE_TYPE_QCOW2",
      "COMPUTE_IMAGE_TYPE_ISO",
      // KubeVirt disk buses (hw_disk_bus, hw_cdrom_bus).
      "COMPUTE_STORAGE_BUS_VIRTIO",
      "COMPUTE_STORAGE_BUS_SCSI",
      "COMPUTE_STORAGE_BUS_SATA",
      "COMPUTE_STORAGE_BUS_USB",
      // KubeVirt interface models (hw_vif_model).
      "COMPUTE_NET_VIF_MODEL_VIRTIO",
      "COMPUTE_NET_VIF_MODEL_E1000",
      "COMPUTE_NET_VIF_MODEL_E1000E",
      "COMPUTE_NET_VIF_MODEL_NE2K_PCI",
      "COMPUTE_NET_VIF_MODEL_PCNET",
      "COMPUTE_NET_VIF_MODEL_RTL8139",
      // KubeVirt's video devices (hw_video_model): VGA, and bochs for EFI guests.
      "COMPUTE_GRAPHICS_MODEL_VGA",
      "COMPUTE_GRAPHICS_MODEL_BOCHS",
  };
}

PlacementConfig parsePlacementConfig(const YamlField& f) {
  f.expectKeys({"enabled",
                "cloud",
                "cloudsFile",
                "auth",
                "regionName",
                "interface",
                "endpointOverride",
                "cacert",
                "verify",
                "cpuAllocationRatio",
                "ramAllocationRatio",
                "initialCpuAllocationRatio",
                "initialRamAllocationRatio",
                "capabilityTraits",
                "debounceSeconds",
                "reservedStep",
                "perVmMemoryOverheadMb",
                "hugepagesModel",
                "devices",
                "availabilityZones",
                "stateFile",
                "resyncSeconds",
                "conflictRetries",
                "backoff",
                "requestTimeoutSeconds"});
  PlacementConfig c;
  if (auto v = f.get("enabled")) c.enabled = v->asBool();
  if (auto v = f.get("cloud")) c.cloud = v->asString();
  if (auto v = f.get("cloudsFile")) c.cloudsFile = v->asString();
  if (auto v = f.get("auth")) c.auth = parseAuth(*v);
  if (auto v = f.get("regionName")) c.regionName = v->asString();
  if (auto v = f.get("interface")) c.interface = interfaceName(*v);
  if (auto v = f.get("endpointOverride")) c.endpointOverride = v->asString();
  if (auto v = f.get("cacert")) c.cacert = v->asString();
  if (auto v = f.get("verify")) c.verify = v->asBool();
  // Placement stores ratios as floats; 0 would make the class unusable, so 0 is refused here.
  if (auto v = f.get("cpuAllocationRatio")) c.cpuAllocationRatio = v->asDouble(0.0001, 1000);
  if (auto v = f.get("ramAllocationRatio")) c.ramAllocationRatio = v->asDouble(0.0001, 1000);
  if (auto v = f.get("initialCpuAllocationRatio"))
    c.initialCpuAllocationRatio = v->asDouble(0.0001, 1000);
  if (auto v = f.get("initialRamAllocationRatio"))
    c.initialRamAllocationRatio = v->asDouble(0.0001, 1000);
  if (auto v = f.get("capabilityTraits")) {
    c.capabilityTraits = v->asStringList();
    for (const auto& t : c.capabilityTraits)
      if (!isTraitNameShape(t)) v->fail("\"" + t + "\" is not a trait name ([A-Z0-9_]+)");
  }
  if (auto v = f.get("debounceSeconds")) c.debounce = seconds(*v, 3600);
  if (auto s = f.get("reservedStep")) {
    s->expectKeys({"vcpu", "memoryMb"});
    if (auto v = s->get("vcpu")) c.reservedStep.vcpu = v->asInt(0, 1 << 20);
    if (auto v = s->get("memoryMb")) c.reservedStep.memoryMb = v->asInt(0, std::int64_t{1} << 40);
  }
  if (auto v = f.get("perVmMemoryOverheadMb")) c.perVmMemoryOverheadMb = v->asInt(0, 1 << 20);
  if (auto v = f.get("hugepagesModel"))
    c.hugepagesModel = v->asEnum({"nested-trait", "custom-class"}) == "custom-class"
                           ? HugepagesModel::CustomClass
                           : HugepagesModel::NestedTrait;
  if (auto v = f.get("devices")) {
    std::set<std::string> resources;
    std::set<std::string> names;
    for (const auto& item : v->items()) {
      DeviceConfig d = parseDevice(item);
      if (!resources.insert(d.resource).second)
        item.fail("resource " + d.resource + " is mapped twice");
      const std::string name = d.name.empty() ? d.resource : d.name;
      if (!names.insert(name).second) item.fail("name \"" + name + "\" is used twice");
      c.devices.push_back(std::move(d));
    }
  }
  if (auto z = f.get("availabilityZones")) {
    z->expectKeys({"enabled", "computeEndpointOverride"});
    if (auto v = z->get("enabled")) c.availabilityZones.enabled = v->asBool();
    if (auto v = z->get("computeEndpointOverride")) {
      c.availabilityZones.computeEndpointOverride = v->asString();
      const auto& u = c.availabilityZones.computeEndpointOverride;
      if (!u.empty() && !u.starts_with("http://") && !u.starts_with("https://"))
        v->fail("\"" + u + "\" is not an http(s) URL");
    }
  }
  if (auto v = f.get("stateFile")) c.stateFile = v->asString();
  if (auto v = f.get("resyncSeconds")) c.resyncInterval = std::chrono::seconds(v->asInt(0, 86400));
  if (auto v = f.get("conflictRetries")) c.conflictRetries = static_cast<int>(v->asInt(0, 100));
  if (auto b = f.get("backoff")) {
    b->expectKeys({"initialMs", "maxMs"});
    if (auto v = b->get("initialMs"))
      c.backoff.initial = std::chrono::milliseconds(v->asInt(1, 600000));
    if (auto v = b->get("maxMs")) c.backoff.max = std::chrono::milliseconds(v->asInt(1, 3600000));
    if (c.backoff.max < c.backoff.initial) b->fail("maxMs must be >= initialMs");
  }
  if (auto v = f.get("requestTimeoutSeconds")) c.requestTimeout = seconds(*v, 600);
  if (c.auth.type == "none" && c.endpointOverride.empty() && c.cloud.empty())
    f.fail("auth.type none needs endpointOverride (there is no catalog without Keystone)");
  return c;
}

}  // namespace okna::placement
