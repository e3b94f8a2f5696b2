#include "placement/pod_requests.h"

#include <algorithm>

#include "k8s/quantity.h"

namespace okna::placement {

namespace {

std::int64_t quantity(const k8s::StringMap& m, const std::string& key, std::int64_t scale,
                      const std::string& what, std::vector<std::string>* warnings) {
  auto it = m.find(key);
  if (it == m.end()) return 0;
  auto q = k8s::Quantity::parse(it->second);
  if (!q || q->negative()) {
    if (warnings != nullptr)
      warnings->push_back(what + ": " + key + ": " + (q ? "negative quantity" : q.error().message) +
                          "; counted as 0");
    return 0;
  }
  // Rounded up: a request of 1.5 bytes or 0.1 millicores still takes a unit.
  return q->ceilScaled(scale);
}

PodRequests requestsOf(const k8s::StringMap& m, const std::string& what,
                       std::vector<std::string>* warnings) {
  return {quantity(m, "cpu", 1000, what, warnings), quantity(m, "memory", 1, what, warnings)};
}

PodRequests operator+(PodRequests a, const PodRequests& b) {
  // Saturating: requests of absurd size make the node full, never wrap to nothing reserved.
  a.cpuMillis = k8s::saturatingAdd(a.cpuMillis, b.cpuMillis);
  a.memoryBytes = k8s::saturatingAdd(a.memoryBytes, b.memoryBytes);
  return a;
}

PodRequests max(const PodRequests& a, const PodRequests& b) {
  return {std::max(a.cpuMillis, b.cpuMillis), std::max(a.memoryBytes, b.memoryBytes)};
}

}  // namespace

PodRequests podRequests(const k8s::PodInfo& pod, std::vector<std::string>* warnings) {
  const std::string where = "pod " + pod.namespace_ + "/" + pod.name;
  PodRequests apps;
  for (const auto& c : pod.containers)
    apps = apps + requestsOf(c.requests, where + " container " + c.name, warnings);
  // Init containers run in order. A sidecar (restartPolicy Always) keeps running next to what
  // follows, so it adds to the app containers and to every later init container; an ordinary
  // init container only needs its own requests plus the sidecars already started.
  PodRequests sidecars;
  PodRequests initPeak;
  for (const auto& c : pod.initContainers) {
    const PodRequests r = requestsOf(c.requests, where + " init container " + c.name, warnings);
    if (c.restartPolicy == "Always") {
      apps = apps + r;
      sidecars = sidecars + r;
      initPeak = max(initPeak, sidecars);
    } else {
      initPeak = max(initPeak, r + sidecars);
    }
  }
  return max(apps, initPeak) + requestsOf(pod.overhead, where + " overhead", warnings);
}

std::int64_t podResourceRequest(const k8s::PodInfo& pod, const std::string& resource,
                                std::vector<std::string>* warnings) {
  const std::string where = "pod " + pod.namespace_ + "/" + pod.name;
  const auto of = [&](const k8s::StringMap& m, const std::string& what) {
    return quantity(m, resource, 1, what, warnings);
  };
  std::int64_t apps = 0;
  for (const auto& c : pod.containers)
    apps = k8s::saturatingAdd(apps, of(c.requests, where + " container " + c.name));
  std::int64_t sidecars = 0;
  std::int64_t initPeak = 0;
  for (const auto& c : pod.initContainers) {
    const std::int64_t r = of(c.requests, where + " init container " + c.name);
    if (c.restartPolicy == "Always") {
      apps = k8s::saturatingAdd(apps, r);
      sidecars = k8s::saturatingAdd(sidecars, r);
      initPeak = std::max(initPeak, sidecars);
    } else {
      initPeak = std::max(initPeak, k8s::saturatingAdd(r, sidecars));
    }
  }
  return k8s::saturatingAdd(std::max(apps, initPeak), of(pod.overhead, where + " overhead"));
}

bool podHoldsResources(const k8s::PodInfo& pod) {
  return pod.phase != "Succeeded" && pod.phase != "Failed";
}

bool isVirtLauncher(const k8s::PodInfo& pod) {
  auto it = pod.labels.find("kubevirt.io");
  return it != pod.labels.end() && it->second == "virt-launcher";
}

}  // namespace okna::placement
