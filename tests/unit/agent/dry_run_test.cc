#include "agent/dry_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/plan.h"
#include "core/yaml_field.h"
#include "tests/support/test_paths.h"

namespace okna::agent {
namespace {

const std::string kData = ::okna::testing::kTestDataDir;

struct Output {
  int code;
  std::string out;
  std::string err;
};

Output run(const AgentConfig& config, DryRunOptions options) {
  std::ostringstream out, err;
  const int code = runDryRun(config, options, out, err);
  return {code, out.str(), err.str()};
}

std::string writeTemp(const std::string& name, const std::string& content) {
  const auto path = std::filesystem::temp_directory_path() / ("okna-dry-run-" + name);
  std::ofstream(path) << content;
  return path.string();
}

TEST(DryRunTest, YamlNodeDumpJsonOutput) {
  auto r = run({}, {kData + "/lab-1.node.yaml", kData + "/lab-1.pods.json", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto plan = nlohmann::json::parse(r.out);
  EXPECT_EQ(plan["node"]["name"], "lab-1");
  EXPECT_EQ(plan["node"]["uid"], "5a0e8c1e-2f7d-4a57-b5a3-0c9d8e7f6a51");
  EXPECT_EQ(plan["roles"], nlohmann::json({"compute", "controlPlane", "network", "storage"}));
  EXPECT_EQ(plan["warnings"], nlohmann::json::array());
  // The compute role brings the Placement section (its planner has its own unit tests).
  EXPECT_EQ(plan["placement"]["provider"]["uuid"], "5a0e8c1e-2f7d-4a57-b5a3-0c9d8e7f6a51");
  EXPECT_EQ(plan["placement"]["inventories"]["VCPU"]["total"], 15);
  EXPECT_EQ(plan["placement"]["nested"][0]["name"], "lab-1:hugepages-2Mi");
}

TEST(DryRunTest, HardenedNodeUnderDefaultProfileHasNoRoles) {
  auto r = run({}, {kData + "/ok-net-2.node.json", "", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["roles"], nlohmann::json::array());
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("placement"));
  AgentConfig hardened;
  hardened.nodeRoles.profile = RoleProfile::Hardened;
  auto h = run(hardened, {kData + "/ok-net-2.node.json", "", "json"});
  EXPECT_EQ(nlohmann::json::parse(h.out)["roles"], nlohmann::json({"network"}));
}

TEST(DryRunTest, MetadataIsEnabledWithComputeOrNetworkOvsAndTheSwitch) {
  AgentConfig withOvs;
  withOvs.ovs.enabled = true;
  auto r = run(withOvs, {kData + "/lab-1.node.yaml", "", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto md = nlohmann::json::parse(r.out)["metadata"];
  EXPECT_EQ(md["enabled"], true);
  EXPECT_EQ(md["namespaces"], nlohmann::json::array()) << "namespaces need --ovsdb";

  // Without the OVS layer there is no chassis to serve on.
  auto noOvs = nlohmann::json::parse(run({}, {kData + "/lab-1.node.yaml", "", "json"}).out);
  EXPECT_EQ(noOvs["metadata"]["enabled"], false);
  EXPECT_NE(noOvs["metadata"]["reason"].get<std::string>().find("OVS"), std::string::npos);
  // A network-only node serves the external ports bound to it (issue 28), as Neutron's agent.
  AgentConfig hardened = withOvs;
  hardened.nodeRoles.profile = RoleProfile::Hardened;
  auto network =
      nlohmann::json::parse(run(hardened, {kData + "/ok-net-2.node.json", "", "json"}).out);
  EXPECT_EQ(network["roles"], nlohmann::json({"network"}));
  EXPECT_EQ(network["metadata"]["enabled"], true);
  EXPECT_NE(network["metadata"]["reason"].get<std::string>().find("network role"),
            std::string::npos);
  // Neither role (its label is the hardened profile's, the default profile grants nothing).
  auto neither =
      nlohmann::json::parse(run(withOvs, {kData + "/ok-net-2.node.json", "", "json"}).out);
  EXPECT_EQ(neither["roles"], nlohmann::json::array());
  EXPECT_EQ(neither["metadata"]["enabled"], false);
  EXPECT_NE(neither["metadata"]["reason"].get<std::string>().find("neither compute nor network"),
            std::string::npos);
  AgentConfig off = withOvs;
  off.metadata.enabled = false;
  auto disabled = nlohmann::json::parse(run(off, {kData + "/lab-1.node.yaml", "", "json"}).out);
  EXPECT_EQ(disabled["metadata"]["enabled"], false);
  EXPECT_EQ(disabled["metadata"]["reason"], "metadata.enabled is false");
  EXPECT_NE(run(withOvs, {kData + "/lab-1.node.yaml", "", "text"}).out.find("metadata: active"),
            std::string::npos);
}

TEST(DryRunTest, TextOutput) {
  auto r = run({}, {kData + "/lab-1.node.yaml", kData + "/lab-1.pods.json", "text"});
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("roles: compute controlPlane network storage"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pods on the node: 3"), std::string::npos);
  EXPECT_NE(r.out.find("placement provider lab-1 (5a0e8c1e-2f7d-4a57-b5a3-0c9d8e7f6a51)"),
            std::string::npos);
  EXPECT_NE(r.out.find("  VCPU: total 15, reserved 2, allocation_ratio 4.0"), std::string::npos)
      << r.out;
}

TEST(DryRunTest, WithoutPodsFilePlacementIsPlannedFromNoPodsAndSaysSo) {
  auto r = run({}, {kData + "/lab-1.node.yaml", "", "text"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  VCPU: total 15, reserved 0,"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("pods on the node"), std::string::npos) << "their number is unknown";
  EXPECT_NE(r.out.find("warning: placement: reserved is computed without the node's pods (no "
                       "--pods-file)"),
            std::string::npos)
      << r.out;
}

TEST(DryRunTest, TheLiveAgentPlansNoPlacementBeforeThePodsAreKnown) {
  // The same planner, the live agent's inputs before the pod informer has synced: no Placement
  // section (a reservation from half the pods would be too small) and no warning about it.
  auto doc = core::loadJsonOrYaml(kData + "/lab-1.node.yaml");
  ASSERT_TRUE(doc.ok());
  auto node = k8s::parseNode(*doc, "lab-1");
  ASSERT_TRUE(node.ok());
  const Plan plan = computePlan({}, {*node, std::nullopt});
  EXPECT_FALSE(plan.placement);
  EXPECT_EQ(plan.podCount, -1);
  EXPECT_TRUE(plan.warnings.empty());
  EXPECT_TRUE(computePlan({}, {*node, std::vector<k8s::PodInfo>{}}).placement);
}

TEST(DryRunTest, MalformedInputNamesFileAndProblem) {
  const auto missing = run({}, {"/nonexistent/node.json", "", "json"});
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.err.find("/nonexistent/node.json: cannot be read"), std::string::npos);

  const auto badJson = writeTemp("bad.json", "{\"kind\": \"Node\", ");
  auto r1 = run({}, {badJson, "", "json"});
  EXPECT_NE(r1.code, 0);
  EXPECT_NE(r1.err.find(badJson + ": invalid JSON"), std::string::npos) << r1.err;

  const auto wrongType =
      writeTemp("labels.yaml", "kind: Node\nmetadata:\n  name: x\n  labels: [a, b]\n");
  auto r2 = run({}, {wrongType, "", "json"});
  EXPECT_NE(r2.err.find(wrongType + ": metadata.labels: expected an object"), std::string::npos)
      << r2.err;

  const auto pod = writeTemp("pod.json", "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}}");
  auto r3 = run({}, {pod, "", "json"});
  EXPECT_NE(r3.err.find("kind is Pod, expected Node"), std::string::npos) << r3.err;

  const auto notList = writeTemp("pods.json", "{\"kind\": \"Pod\"}");
  auto r4 = run({}, {kData + "/lab-1.node.yaml", notList, "json"});
  EXPECT_NE(r4.err.find(notList + ": expected a PodList"), std::string::npos) << r4.err;

  const auto badPod = writeTemp(
      "badpod.json",
      R"({"items": [{"metadata": {"name": "a"}, "spec": {"containers": [{"resources": {"requests": {"cpu": true}}}]}}]})");
  auto r5 = run({}, {kData + "/lab-1.node.yaml", badPod, "json"});
  EXPECT_NE(r5.err.find("items[0]: spec.containers[0].resources.requests.cpu: expected a string"),
            std::string::npos)
      << r5.err;
}

}  // namespace
}  // namespace okna::agent
