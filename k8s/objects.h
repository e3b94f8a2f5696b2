#pragma once
// The fields of Node and Pod objects the agent reads, parsed from the API's JSON. Parsing is
// strict about types (an error names the field) and lenient about absence (missing maps are
// empty), like the API server's own defaults.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"

namespace okna::k8s {

using StringMap = std::map<std::string, std::string>;

struct Taint {
  std::string key;
  std::string value;
  std::string effect;
};

struct NodeInfo {
  std::string name;
  std::string uid;
  std::string resourceVersion;
  StringMap labels;
  StringMap annotations;
  // spec.unschedulable: the node is cordoned.
  bool unschedulable = false;
  std::vector<Taint> taints;
  // status.capacity / status.allocatable, as quantity strings.
  StringMap capacity;
  StringMap allocatable;
  // status.addresses of type InternalIP (the addresses the node is reached at).
  std::vector<std::string> internalIps = {};
};

struct ContainerInfo {
  std::string name;
  // resources.requests, as quantity strings.
  StringMap requests;
  // "Always" marks a sidecar init container (Kubernetes 1.28+); empty otherwise.
  std::string restartPolicy;
};

struct PodInfo {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resourceVersion;
  std::string nodeName;
  // status.phase: Pending, Running, Succeeded, Failed, Unknown.
  std::string phase;
  // What the informer keeps of them: kPodLabelsRead (all, when parsed from a file).
  StringMap labels;
  std::vector<ContainerInfo> initContainers;
  std::vector<ContainerInfo> containers;
  // spec.overhead (RuntimeClass), as quantity strings.
  StringMap overhead;
  // metadata.deletionTimestamp is set: the pod is terminating but still holds its resources.
  bool terminating = false;
};

/** `where` prefixes error messages (a file name, or "watch event"). */
core::Result<NodeInfo> parseNode(const nlohmann::json& object, const std::string& where = "node");
core::Result<PodInfo> parsePod(const nlohmann::json& object, const std::string& where = "pod");

/** The labels of a Pod the agent reads (placement/pod_requests.cc: a VM's launcher pod). */
inline constexpr const char* kPodLabelsRead[] = {"kubevirt.io"};

/** Leaves of a Pod what parsePod reads (of its labels, kubevirt.io only): what the agent keeps
 *  of the node's pods. A field of an unexpected type is kept as it is, for parsePod to name. */
void trimPod(nlohmann::json& pod);

/** "namespace/name" (or "name" for cluster-scoped objects): the informer's store key. */
std::string objectKey(const nlohmann::json& object);

}  // namespace okna::k8s
