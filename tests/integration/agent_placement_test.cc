// The agent binary end to end: the fake kube-apiserver serves a compute node and its pods, a
// real Placement (noauth) receives the node's resource provider; label edits and a cordon reach
// Placement live.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/fakes/agent_process.h"
#include "tests/fakes/fake_apiserver_fixture.h"
#include "tests/integration/placement/harness.h"
#include "tests/support/test_paths.h"

namespace okna {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kData = ::okna::testing::kTestDataDir;
const std::string kNodeUid = "5a0e8c1e-2f7d-4a57-b5a3-0c9d8e7f6a51";  // lab-1.node.yaml

class AgentPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::placementInstalled()) GTEST_SKIP() << "placement-api (Debian) is not installed";
    dir_ = testing::makeTempDir("okna-agent-placement-");
    ASSERT_TRUE(
        testing::runScript(testing::kFixtures + "/start-placement.sh " + dir_, dir_ + "/start.out"))
        << testing::readFile(dir_ + "/start.out");
    url_ = testing::readFile(dir_ + "/url");
    server_ = std::make_unique<testing::FakeApiServer>(
        std::vector<std::string>{kData + "/lab-1.node.yaml", kData + "/lab-1.pods.json"});
  }
  void TearDown() override {
    agent_.reset();
    server_.reset();
    if (!dir_.empty()) {
      testing::runScript(testing::kFixtures + "/stop.sh " + dir_, "/dev/null");
      std::filesystem::remove_all(dir_);
    }
  }

  void startAgent() {
    const std::string config = "placement:\n  auth: {type: none}\n  endpointOverride: " + url_ +
                               "\n  debounceSeconds: 0.2\n  stateFile: " + dir_ +
                               "/agent-state.json\n" +
                               "kubernetes: {backoff: {initialMs: 100, maxMs: 1000}}\n";
    agent_ = std::make_unique<testing::AgentProcess>(
        server_->dir(), config,
        std::vector<std::string>{"--node-name", "lab-1", "--kubeconfig", server_->kubeconfig(),
                                 "--context", "node-agent"});
  }

  // A blocking call to Placement, as an operator.
  json placement(const std::string& path) {
    const std::string cmd =
        "curl -sf -H 'X-Auth-Token: admin' -H 'OpenStack-API-Version: placement 1.39' " + url_ +
        path + " >" + dir_ + "/reply.json";
    if (std::system(cmd.c_str()) != 0) return json();
    return json::parse(testing::readFile(dir_ + "/reply.json"), nullptr, false);
  }
  bool hasTrait(const std::string& trait) {
    const json t = placement("/resource_providers/" + kNodeUid + "/traits");
    if (!t.contains("traits")) return false;
    for (const auto& x : t["traits"])
      if (x == trait) return true;
    return false;
  }

  std::string dir_;
  std::string url_;
  std::unique_ptr<testing::FakeApiServer> server_;
  std::unique_ptr<testing::AgentProcess> agent_;
};

TEST_F(AgentPlacementTest, ComputeNodeBecomesAProviderAndFollowsItsNode) {
  startAgent();
  ASSERT_TRUE(testing::waitFor([&] { return agent_->get("/readyz").status == 200; }, 60s))
      << agent_->get("/readyz?verbose").body << agent_->log();
  EXPECT_NE(agent_->get("/readyz?verbose").body.find("[+]placement ok"), std::string::npos);

  const json rp = placement("/resource_providers/" + kNodeUid);
  ASSERT_TRUE(rp.is_object()) << "no provider with the node's uid";
  EXPECT_EQ(rp["name"], "lab-1");
  const json inv = placement("/resource_providers/" + kNodeUid + "/inventories")["inventories"];
  // lab-1: allocatable cpu 15, memory 60498112Ki = 59080 MiB; non-VM pods: virt-handler
  // (10m, 357Mi) and galera-0 (1 CPU, 2Gi; its init container is smaller) -> ceil(1.01) = 2 VCPU,
  // 357 + 2048 MiB, plus 256 MiB for the one virt-launcher pod.
  EXPECT_EQ(inv["VCPU"]["total"], 15);
  EXPECT_EQ(inv["VCPU"]["reserved"], 2);
  EXPECT_EQ(inv["MEMORY_MB"]["total"], 59080);
  EXPECT_EQ(inv["MEMORY_MB"]["reserved"], 357 + 2048 + 256);
  EXPECT_TRUE(hasTrait("HW_CPU_X86_AVX"));

  // A cordon reaches Placement as COMPUTE_STATUS_DISABLED, and leaves with the uncordon.
  ASSERT_EQ(
      server_->admin("PATCH", "/api/v1/nodes/lab-1", R"({"spec":{"unschedulable":true}})").status,
      200);
  EXPECT_TRUE(testing::waitFor([&] { return hasTrait("COMPUTE_STATUS_DISABLED"); }, 30s))
      << agent_->log();
  ASSERT_EQ(
      server_->admin("PATCH", "/api/v1/nodes/lab-1", R"({"spec":{"unschedulable":null}})").status,
      200);
  EXPECT_TRUE(testing::waitFor([&] { return !hasTrait("COMPUTE_STATUS_DISABLED"); }, 30s))
      << agent_->log();

  // Without the compute role the agent stops managing the provider, and never deletes it.
  ASSERT_EQ(server_
                ->admin("PATCH", "/api/v1/nodes/lab-1",
                        R"({"metadata":{"labels":{"node-role.openkeel.io/compute":null}}})")
                .status,
            200);
  ASSERT_TRUE(testing::waitFor(
      [&] { return agent_->plan().is_object() && !agent_->plan().contains("placement"); }, 20s));
  EXPECT_TRUE(testing::waitFor([&] { return agent_->get("/readyz").status == 200; }, 20s))
      << agent_->get("/readyz?verbose").body;
  EXPECT_TRUE(placement("/resource_providers/" + kNodeUid).is_object());
}

}  // namespace
}  // namespace okna
