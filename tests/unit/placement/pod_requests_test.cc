#include "placement/pod_requests.h"

#include <gtest/gtest.h>

namespace okna::placement {
namespace {

k8s::ContainerInfo c(std::string cpu, std::string mem, std::string restartPolicy = "") {
  k8s::ContainerInfo info;
  info.name = "c";
  if (!cpu.empty()) info.requests["cpu"] = cpu;
  if (!mem.empty()) info.requests["memory"] = mem;
  info.restartPolicy = std::move(restartPolicy);
  return info;
}

struct Case {
  const char* name;
  std::vector<k8s::ContainerInfo> init;
  std::vector<k8s::ContainerInfo> apps;
  k8s::StringMap overhead;
  PodRequests want;
};

constexpr std::int64_t Mi = 1024 * 1024;

TEST(PodRequestsTest, KubernetesRule) {
  const std::vector<Case> cases = {
      {"empty pod", {}, {}, {}, {0, 0}},
      {"app containers add up", {}, {c("100m", "64Mi"), c("250m", "128Mi")}, {}, {350, 192 * Mi}},
      {"missing requests count as zero", {}, {c("", "1Gi"), c("2", "")}, {}, {2000, 1024 * Mi}},
      {"an init container larger than the apps wins",
       {c("2", "1Gi")},
       {c("500m", "256Mi")},
       {},
       {2000, 1024 * Mi}},
      {"max is per resource: cpu from init, memory from apps",
       {c("2", "100Mi")},
       {c("500m", "256Mi")},
       {},
       {2000, 256 * Mi}},
      {"ordinary init containers do not add up, the largest counts",
       {c("1", "100Mi"), c("3", "50Mi"), c("2", "200Mi")},
       {c("100m", "10Mi")},
       {},
       {3000, 200 * Mi}},
      {"a sidecar adds to the apps",
       {c("200m", "64Mi", "Always")},
       {c("1", "1Gi")},
       {},
       {1200, 1088 * Mi}},
      {"an init container after a sidecar runs next to it",
       {c("500m", "100Mi", "Always"), c("2", "1Gi")},
       {c("100m", "10Mi")},
       {},
       {2500, 1124 * Mi}},
      {"an init container before the sidecar does not",
       {c("2", "1Gi"), c("500m", "100Mi", "Always")},
       {c("100m", "10Mi")},
       {},
       {2000, 1024 * Mi}},
      {"sidecars accumulate for later init containers",
       {c("100m", "10Mi", "Always"), c("200m", "20Mi", "Always"), c("1", "100Mi")},
       {c("50m", "5Mi")},
       {},
       {1300, 130 * Mi}},
      {"overhead is added after the max",
       {c("2", "1Gi")},
       {c("500m", "256Mi")},
       {{"cpu", "250m"}, {"memory", "160Mi"}},
       {2250, 1184 * Mi}},
      {"fractions round up per quantity", {}, {c("0.0001", "1.5")}, {}, {1, 2}},
      {"decimal and binary suffixes",
       {},
       {c("1k", "1G"), c("1500m", "1Ki")},
       {},
       {1001500, 1000000000 + 1024}},
  };
  for (const auto& tc : cases) {
    k8s::PodInfo pod;
    pod.name = tc.name;
    pod.initContainers = tc.init;
    pod.containers = tc.apps;
    pod.overhead = tc.overhead;
    EXPECT_EQ(podRequests(pod), tc.want) << tc.name << ": got cpu " << podRequests(pod).cpuMillis
                                         << "m memory " << podRequests(pod).memoryBytes;
  }
}

TEST(PodRequestsTest, BadQuantityCountsZeroWithWarning) {
  k8s::PodInfo pod;
  pod.namespace_ = "ns";
  pod.name = "p";
  pod.containers = {c("lots", "1Mi")};
  std::vector<std::string> warnings;
  EXPECT_EQ(podRequests(pod, &warnings), (PodRequests{0, Mi}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("pod ns/p container c: cpu"), std::string::npos) << warnings[0];
}

TEST(PodRequestsTest, Phases) {
  const std::vector<std::pair<std::string, bool>> cases = {{"", true},           {"Pending", true},
                                                           {"Running", true},    {"Unknown", true},
                                                           {"Succeeded", false}, {"Failed", false}};
  for (const auto& [phase, holds] : cases) {
    k8s::PodInfo pod;
    pod.phase = phase;
    EXPECT_EQ(podHoldsResources(pod), holds) << phase;
  }
  k8s::PodInfo terminating;
  terminating.phase = "Running";
  terminating.terminating = true;
  EXPECT_TRUE(podHoldsResources(terminating))
      << "a terminating pod holds its resources until it is gone";
}

TEST(PodRequestsTest, VirtLauncher) {
  k8s::PodInfo pod;
  EXPECT_FALSE(isVirtLauncher(pod));
  pod.labels["kubevirt.io"] = "virt-handler";
  EXPECT_FALSE(isVirtLauncher(pod));
  pod.labels["kubevirt.io"] = "virt-launcher";
  EXPECT_TRUE(isVirtLauncher(pod));
}

TEST(PodRequestsTest, SumsSaturate) {
  k8s::PodInfo pod;
  pod.name = "p";
  pod.containers = {c("12345678901234567890", "12345678901234567890"), c("1", "1Mi")};
  pod.initContainers = {c("9223372036854775807m", "8Ei", "Always")};
  pod.overhead = {{"cpu", "1"}, {"memory", "1"}};
  const PodRequests r = podRequests(pod, nullptr);
  EXPECT_EQ(r.cpuMillis, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(r.memoryBytes, std::numeric_limits<std::int64_t>::max());
}

}  // namespace
}  // namespace okna::placement
