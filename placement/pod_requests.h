#pragma once
// The Kubernetes rule for a pod's effective requests (what the scheduler and the kubelet
// reserve for it), for CPU and memory, in exact integer units.

#include <cstdint>
#include <string>
#include <vector>

#include "k8s/objects.h"

namespace okna::placement {

struct PodRequests {
  std::int64_t cpuMillis = 0;
  std::int64_t memoryBytes = 0;
  bool operator==(const PodRequests&) const = default;
};

/**
 * max(sum of app containers + sidecars (init containers with restartPolicy Always),
 *     each ordinary init container + the sidecars started before it) + spec.overhead,
 * per resource, as in Kubernetes' resourcehelper.PodRequests (1.28+).
 * A quantity that does not parse counts as 0 and adds a message to `warnings` (if given).
 */
PodRequests podRequests(const k8s::PodInfo& pod, std::vector<std::string>* warnings = nullptr);

/**
 * The same rule for one extended resource (a device plugin's "intel.com/sriov_physnet1"), in
 * whole units rounded up: what the kubelet's device manager hands the pod.
 */
std::int64_t podResourceRequest(const k8s::PodInfo& pod, const std::string& resource,
                                std::vector<std::string>* warnings = nullptr);

/** Holds node resources: bound and not Succeeded/Failed (Pending and terminating count). */
bool podHoldsResources(const k8s::PodInfo& pod);

/** A VM's pod (label kubevirt.io=virt-launcher): Nova accounts for it through allocations. */
bool isVirtLauncher(const k8s::PodInfo& pod);

}  // namespace okna::placement
