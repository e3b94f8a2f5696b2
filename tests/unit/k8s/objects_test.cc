#include "k8s/objects.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace okna::k8s {
namespace {

using nlohmann::json;

// Every field of a PodInfo, to compare two.
std::string describe(const PodInfo& p) {
  json j = {{"ns", p.namespace_},      {"name", p.name},         {"uid", p.uid},
            {"rv", p.resourceVersion}, {"node", p.nodeName},     {"phase", p.phase},
            {"labels", p.labels},      {"overhead", p.overhead}, {"terminating", p.terminating}};
  for (const auto* list : {&p.initContainers, &p.containers}) {
    json cs = json::array();
    for (const auto& c : *list)
      cs.push_back({{"name", c.name}, {"requests", c.requests}, {"restart", c.restartPolicy}});
    j[list == &p.containers ? "containers" : "init"] = cs;
  }
  return j.dump();
}

// A Pod as a user may write it: what the agent reads, amid what it does not (env, commands,
// volumes, annotations: all of which a user who may schedule pods onto the node can make large).
json bigPod() {
  const std::string padding(20000, 'x');
  json container = {
      {"name", "app"},
      {"image", "registry/app:1"},
      {"command", {padding}},
      {"env", {{{"name", "BLOB"}, {"value", padding}}}},
      {"restartPolicy", "Always"},
      {"resources",
       {{"requests", {{"cpu", "250m"}, {"memory", 1073741824}}}, {"limits", {{"cpu", "1"}}}}}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "virt-launcher-vm1"},
            {"namespace", "tenant"},
            {"uid", "u-1"},
            {"resourceVersion", "42"},
            {"deletionTimestamp", "2026-01-01T00:00:00Z"},
            {"labels", {{"kubevirt.io", "virt-launcher"}, {"app", padding}}},
            {"annotations", {{"note", padding}}},
            {"managedFields", {{{"manager", padding}}}},
            {"ownerReferences", {{{"kind", "VirtualMachineInstance"}, {"name", "vm1"}}}}}},
          {"spec",
           {{"nodeName", "n1"},
            {"overhead", {{"memory", "200Mi"}}},
            {"initContainers", {container}},
            {"containers", {container, {{"name", "sidecar"}}}},
            {"volumes", {{{"name", "v"}, {"configMap", {{"name", padding}}}}}}}},
          {"status", {{"phase", "Running"}, {"message", padding}}}};
}

TEST(TrimPod, KeepsWhatParsePodReadsAndNothingElse) {
  const json pod = bigPod();
  json trimmed = pod;
  trimPod(trimmed);
  const auto full = parsePod(pod);
  const auto kept = parsePod(trimmed);
  ASSERT_TRUE(full.ok()) << full.error().message;
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  // Of the labels, the agent reads kubevirt.io only (is it a VM's pod?).
  PodInfo expected = *full;
  expected.labels = {{"kubevirt.io", "virt-launcher"}};
  EXPECT_EQ(describe(*kept), describe(expected));
  EXPECT_GT(pod.dump().size(), 100000u);
  EXPECT_LT(trimmed.dump().size(), 1000u) << trimmed.dump();
}

// A field of the wrong type is kept as it is, so that parsePod names it as before.
TEST(TrimPod, AFieldOfTheWrongTypeStillFailsParsePodByName) {
  for (const auto& [path, value] : std::vector<std::pair<json::json_pointer, json>>{
           {json::json_pointer("/metadata/labels"), json::array({"kubevirt.io"})},
           {json::json_pointer("/metadata/labels/kubevirt.io"), 7},
           {json::json_pointer("/spec/containers"), "app"},
           {json::json_pointer("/spec/containers/0"), 1},
           {json::json_pointer("/spec/containers/0/resources"), "big"},
           {json::json_pointer("/spec/containers/0/resources/requests/cpu"), json::array()},
           {json::json_pointer("/status/phase"), 3},
           {json::json_pointer("/spec"), "none"}}) {
    json pod = bigPod();
    pod[path] = value;
    const auto full = parsePod(pod);
    ASSERT_FALSE(full.ok()) << path.to_string();
    trimPod(pod);
    const auto kept = parsePod(pod);
    ASSERT_FALSE(kept.ok()) << path.to_string();
    EXPECT_EQ(kept.error().message, full.error().message);
  }
}

}  // namespace
}  // namespace okna::k8s
