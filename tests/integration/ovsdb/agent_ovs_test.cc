// End to end: the real agent binary against the fake kube-apiserver and a REAL ovsdb-server.
// Label and annotation edits at the API server reach Open_vSwitch external_ids and bridges; an
// invalid mappings value applies nothing for that key and raises a Node Event; /readyz waits
// for the OVSDB. Needs the agent wiring (--ovsdb flag, ovs: section; /tmp/ovs-agent-wiring.patch).
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/fakes/agent_process.h"
#include "tests/fakes/fake_apiserver_fixture.h"
#include "tests/integration/ovsdb/ovs_test_util.h"
#include "tests/support/test_paths.h"

namespace okna {
namespace {

using namespace std::chrono_literals;
using okna::testing::AgentProcess;
using okna::testing::bridgeExists;
using okna::testing::externalId;
using okna::testing::FakeApiServer;
using okna::testing::OvsdbServer;
using okna::testing::ports;
using okna::testing::waitFor;

const std::string kData = ::okna::testing::kTestDataDir;
const char* kConfig = R"(
kubernetes:
  watchTimeoutSeconds: {min: 60, max: 90}
  backoff: {initialMs: 100, maxMs: 800}
logging: {level: debug}
ovs: {drainTimeoutSeconds: 0, stateFile: "", vswitchdRunDir: ""}   # no ovs-vswitchd here
placement: {enabled: false}   # about OVS only
metadata: {enabled: false}    # lab-1 is a compute node: metadata has its own end-to-end test
)";

class AgentOvsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OpenVSwitch);
    if (!std::filesystem::exists("/usr/bin/python3"))
      GTEST_SKIP() << "/usr/bin/python3 is not installed";
    ovs_ = std::make_unique<OvsdbServer>(OvsdbServer::Kind::OpenVSwitch);
    ovs_->vsctl(
        {"add-br", "br-int", "--", "set", "Open_vSwitch", ".", "external_ids:foreign=\"keep,me\""});
    // lab-1: network role, zone "lab", annotation bridge-mappings provider:br-ex.
    server_ = std::make_unique<FakeApiServer>(std::vector<std::string>{kData + "/lab-1.node.yaml"});
    agent_ = std::make_unique<AgentProcess>(
        server_->dir(), kConfig,
        std::vector<std::string>{"--node-name", "lab-1", "--kubeconfig", server_->kubeconfig(),
                                 "--context", "node-agent", "--ovsdb", ovs_->remote()});
  }

  void patchNode(const std::string& body) {
    auto r = server_->admin("PATCH", "/api/v1/nodes/lab-1", body);
    ASSERT_EQ(r.status, 200) << r.body;
  }

  std::unique_ptr<OvsdbServer> ovs_;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(AgentOvsTest, LabelChangesReachOvsdbLive) {
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 20s)) << agent_->log();
  EXPECT_NE(agent_->get("/readyz?verbose").body.find("ovsdb"), std::string::npos);
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"), "enable-chassis-as-gw,availability-zones=lab");
  EXPECT_EQ(externalId(*ovs_, "ovn-bridge-mappings"), "provider:br-ex");
  EXPECT_TRUE(bridgeExists(*ovs_, "br-ex"));
  EXPECT_EQ(agent_->plan()["ovs"]["external_ids"]["ovn-bridge-mappings"], "provider:br-ex");

  patchNode(R"({"metadata":{"labels":{"network.openkeel.io/external-nic":"bond1"}}})");
  ASSERT_TRUE(
      waitFor([&] { return ports(*ovs_, "br-ex") == std::vector<std::string>{"bond1"}; }, 10s))
      << agent_->log();

  // An invalid mappings value: the working mapping stays (last good), a warning naming it, a
  // Node Event; a typo never takes a gateway's external network away.
  patchNode(
      R"({"metadata":{"annotations":{"network.openkeel.io/bridge-mappings":"provider:br-ex,x"}}})");
  ASSERT_TRUE(waitFor(
      [&] { return agent_->log().find("\"provider:br-ex,x\" is invalid") != std::string::npos; },
      10s))
      << agent_->log();
  EXPECT_EQ(externalId(*ovs_, "ovn-bridge-mappings"), "provider:br-ex");
  ASSERT_TRUE(waitFor(
      [&] {
        return server_->admin("GET", "/api/v1/namespaces/default/events")
                   .body.find("InvalidBridgeMappings") != std::string::npos;
      },
      10s));

  // The network role goes (drainTimeoutSeconds: 0): the gateway items go, foreign keys stay.
  patchNode(R"({"metadata":{"labels":{"node-role.openkeel.io/network":null}}})");
  ASSERT_TRUE(waitFor([&] { return !externalId(*ovs_, "ovn-cms-options"); }, 10s)) << agent_->log();
  EXPECT_EQ(externalId(*ovs_, "foreign"), "keep,me");
  EXPECT_GE(agent_->metric(R"(okna_ovsdb_transactions_total{result="success"})"), 3);
}

// Issue 27, point 3, end to end: the agent binary with the default ovs.vswitchdRunDir (the
// directory of its --ovsdb unix: remote, where this ovs-vswitchd keeps its pid file and socket).
TEST_F(AgentOvsTest, ReadyzIsRedWhileOvsVswitchdIsKilledAndGreenOnceItIsBack) {
  auto vswitchd = okna::testing::startDummyVswitchd(*ovs_);
  if (!vswitchd) GTEST_SKIP() << "ovs-vswitchd is not installed";
  std::string config = kConfig;
  const std::string noCheck = R"(, vswitchdRunDir: "")";
  config.erase(config.find(noCheck), noCheck.size());
  agent_.reset();
  agent_ = std::make_unique<AgentProcess>(
      server_->dir(), config,
      std::vector<std::string>{"--node-name", "lab-1", "--kubeconfig", server_->kubeconfig(),
                               "--context", "node-agent", "--ovsdb", ovs_->remote()});
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 20s))
      << agent_->get("/readyz?verbose").body << agent_->log();
  vswitchd->signal(SIGKILL);
  ASSERT_TRUE(vswitchd->waitExit(10s));
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 503; }, 10s)) << agent_->log();
  const std::string verbose = agent_->get("/readyz?verbose").body;
  EXPECT_NE(verbose.find("[-]ovsdb"), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("ovs-vswitchd is not running"), std::string::npos) << verbose;
  EXPECT_EQ(agent_->metric("okna_ovsdb_vswitchd_running"), 0);
  vswitchd = okna::testing::startDummyVswitchd(*ovs_);
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 10s))
      << agent_->get("/readyz?verbose").body;
  EXPECT_EQ(agent_->metric("okna_ovsdb_vswitchd_running"), 1);
}

TEST_F(AgentOvsTest, NotReadyWhileOvsdbIsDownAndReassertedAfter) {
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 20s)) << agent_->log();
  ovs_->kill();
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 503; }, 10s));
  EXPECT_NE(agent_->get("/readyz?verbose").body.find("[-]ovsdb"), std::string::npos);
  ovs_->restartWithEmptyDatabase();
  ASSERT_TRUE(waitFor(
      [&] {
        return externalId(*ovs_, "ovn-cms-options") ==
                   "enable-chassis-as-gw,availability-zones=lab" &&
               bridgeExists(*ovs_, "br-ex");
      },
      20s))
      << agent_->log();
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 10s));
  EXPECT_GE(agent_->metric(R"(okna_ovsdb_reconnects_total{db="Open_vSwitch"})"), 1);
}

// The chart's network-only agent (deploy/helm: the nocompute DaemonSet, gateways) runs as root
// with every capability dropped: with Placement and metadata off it needs none. Here it runs with
// an empty bounding set (so nothing it execs, and not itself, holds a capability) and still makes
// the node a gateway chassis and follows its labels.
TEST_F(AgentOvsTest, TheNetworkOnlyAgentNeedsNoCapability) {
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "/usr/bin/setpriv is not installed";
  agent_.reset();
  agent_ = std::make_unique<AgentProcess>(
      server_->dir(), kConfig,
      std::vector<std::string>{"--node-name", "lab-1", "--kubeconfig", server_->kubeconfig(),
                               "--context", "node-agent", "--ovsdb", ovs_->remote()},
      std::vector<std::string>{"/usr/bin/setpriv", "--bounding-set=-all", "--inh-caps=-all",
                               "--ambient-caps=-all"});
  std::ifstream status("/proc/" + std::to_string(agent_->process().pid()) + "/status");
  std::string line, capEff;
  while (std::getline(status, line))
    if (line.rfind("CapEff:", 0) == 0) capEff = line;
  EXPECT_EQ(capEff, "CapEff:\t0000000000000000");
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 20s)) << agent_->log();
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"), "enable-chassis-as-gw,availability-zones=lab");
  EXPECT_TRUE(bridgeExists(*ovs_, "br-ex"));
  patchNode(R"({"metadata":{"labels":{"network.openkeel.io/external-nic":"bond1"}}})");
  ASSERT_TRUE(
      waitFor([&] { return ports(*ovs_, "br-ex") == std::vector<std::string>{"bond1"}; }, 10s))
      << agent_->log();
}

}  // namespace
}  // namespace okna
