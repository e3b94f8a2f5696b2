// A pod that leaves because its node lost its role finishes that role's removal (agent/
// departure.h), end to end: the agent binary on a REAL OVN chassis, a real Placement (noauth),
// the Node from the fake API server. Both orders: the label's watch event first, and SIGTERM
// first (the fake API server holds the watch event, as a slow watch would). A SIGTERM for any
// other reason (a rollout) leaves the node untouched; --cleanup removes what is left.
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/fixtures/ovn/neutron_rescheduler.h"
#include "tests/integration/metadata/agent_metadata_fixture.h"
#include "tests/integration/placement/harness.h"

namespace okna::metadata_e2e {
namespace {

using nlohmann::json;
using okna::testing::must;
using okna::testing::trimmed;

constexpr const char* kUid = "7d3c1a52-0000-4e2e-8000-00000000e2e0";  // kNode's
constexpr const char* kComputeLabel = "node-role.openkeel.io/compute";
constexpr const char* kNetworkLabel = "node-role.openkeel.io/network";

// LabelFirstApiDown: the watch delivered the change, then the API server stops answering the
// agent: it decides from the Node its watch last delivered.
enum class Order { LabelFirst, SigtermFirst, LabelFirstApiDown };

std::string orderName(const ::testing::TestParamInfo<Order>& order) {
  return order.param == Order::LabelFirst     ? "LabelFirst"
         : order.param == Order::SigtermFirst ? "SigtermFirst"
                                              : "LabelFirstApiDown";
}

class AgentDepartureTest : public AgentMetadataTest {
 protected:
  void SetUp() override {
    AgentMetadataTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!testing::placementInstalled()) GTEST_SKIP() << "placement-api (Debian) is not installed";
    ASSERT_TRUE(testing::runScript(testing::kFixtures + "/start-placement.sh " + dir_ + "/pl",
                                   dir_ + "/placement.out"))
        << testing::readFile(dir_ + "/placement.out");
    placementUrl_ = testing::readFile(dir_ + "/pl/url");
  }
  void TearDown() override {
    if (server_) server_->control("POST", "release-watches");
    // Before the chassis fixture's TearDown, which deletes dir_ with Placement's pid file.
    if (!placementUrl_.empty())
      testing::runScript(testing::kFixtures + "/stop.sh " + dir_ + "/pl", "/dev/null");
    AgentMetadataTest::TearDown();
  }

  std::string config(const std::string& departure, bool placement, bool metadata) const {
    std::string c =
        "logging: {level: debug}\n"
        "ovs: {drainTimeoutSeconds: 60, stateFile: " +
        dir_ + "/ovs-ownership.json}\n" + "departure: " + departure + "\n";
    c += placement ? "placement: {auth: {type: none}, endpointOverride: " + placementUrl_ +
                         ", debounceSeconds: 0.2, stateFile: " + dir_ + "/placement-state.json}\n"
                   : "placement: {enabled: false}\n";
    c += metadata ? "metadata: {sharedSecretFile: " + dir_ + "/agent-secret, nova: {host: " +
                        "127.0.0.1, port: " + std::to_string(novaPort_) + "}}\n"
                  : "metadata: {enabled: false}\n";
    return c;
  }
  std::vector<std::string> args() const {
    return {"--node-name", "hv-e2e",     "--kubeconfig", server_->kubeconfig(),
            "--context",   "node-agent", "--ovsdb",      chassis_->ovs_remote()};
  }
  void start(const std::string& configYaml) {
    agent_ = std::make_unique<AgentProcess>(server_->dir(), configYaml, args());
  }

  json placement(const std::string& path) const {
    const std::string out = dir_ + "/reply.json";
    const std::string cmd =
        "curl -sf -H 'X-Auth-Token: admin' -H 'OpenStack-API-Version: "
        "placement 1.39' " +
        placementUrl_ + path + " >" + out;
    if (std::system(cmd.c_str()) != 0) return json();
    return json::parse(testing::readFile(out), nullptr, false);
  }
  bool providerDisabled() const {
    const json t = placement(std::string("/resource_providers/") + kUid + "/traits");
    return t.contains("traits") &&
           std::count(t["traits"].begin(), t["traits"].end(), "COMPUTE_STATUS_DISABLED") > 0;
  }
  bool providerExists() const {
    return placement(std::string("/resource_providers/") + kUid).contains("uuid");
  }

  // The label change an operator makes; merge patch with null removes a key.
  void patchNode(const json& metadata) {
    const auto r =
        server_->admin("PATCH", "/api/v1/nodes/hv-e2e", json{{"metadata", metadata}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
  }
  json debugRoles() const { return agent_->plan().value("roles", json::array()); }

  // SIGTERM in the given order with the label change; returns the agent's exit code.
  std::optional<int> removeRoleAndStop(Order order, const json& change) {
    if (order == Order::SigtermFirst) {
      server_->control("POST", "hold-watches");
      patchNode(change);
    } else {
      const json before = debugRoles();
      patchNode(change);
      EXPECT_TRUE(waitFor([&] { return debugRoles() != before; }, 20s))
          << "the watch delivered the change";
      if (order == Order::LabelFirstApiDown)
        server_->control("POST", "refuse?seconds=60&user=node-agent");
    }
    agent_->process().signal(SIGTERM);
    return agent_->process().waitExit(150s);
  }

  std::string ovsId(const std::string& key) const {
    const auto r =
        chassis_->vsctl({"--if-exists", "get", "Open_vSwitch", ".", "external_ids:" + key});
    return r.ok() ? trimmed(r.out) : std::string();
  }

  std::string placementUrl_;
};

class ComputeRoleLost : public AgentDepartureTest, public ::testing::WithParamInterface<Order> {};

TEST_P(ComputeRoleLost, TheNodeIsClosedInPlacementAndItsNamespacesGoBeforeThePodExits) {
  const auto net = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  // The compute DaemonSet of two (secretsOnComputeOnly): metadata on compute nodes only.
  start(config("{roles: [compute], metadataRoles: [compute]}", true, true));
  EXPECT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);
  ASSERT_TRUE(waitFor([&] { return providerExists(); }, 60s)) << agent_->log();
  EXPECT_FALSE(providerDisabled());

  const auto code = removeRoleAndStop(GetParam(), {{"labels", {{kComputeLabel, nullptr}}}});
  ASSERT_EQ(code, 0) << agent_->log();
  EXPECT_TRUE(providerDisabled()) << "Nova can still place VMs on a node with no hypervisor";
  EXPECT_FALSE(namespaceExists(net.metadata_netns));
  EXPECT_FALSE(hasPort(net.metadata_tap_host));
  const std::string log = agent_->log();
  EXPECT_NE(log.find(GetParam() == Order::LabelFirstApiDown
                         ? "leaving the node: the node no longer has the role compute (the last "
                           "watched Node; the API server: "
                         : "leaving the node: the node no longer has the role compute (the API "
                           "server)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("the role's removal finished"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(Orders, ComputeRoleLost,
                         ::testing::Values(Order::LabelFirst, Order::SigtermFirst,
                                           Order::LabelFirstApiDown),
                         orderName);

TEST_F(AgentDepartureTest, ARolloutLeavesTheNodeAsItIsAndCleanupRemovesItAll) {
  const auto net = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  // A provider network on the hypervisor: a mapping and a bridge the agent owns.
  patchNode({{"annotations", {{"network.openkeel.io/bridge-mappings", "physnet1:br-ex"}}}});
  start(config("{roles: [compute], metadataRoles: [compute]}", true, true));
  EXPECT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);
  ASSERT_TRUE(waitFor([&] { return providerExists(); }, 60s)) << agent_->log();
  ASSERT_TRUE(waitFor([&] { return ovsId("ovn-bridge-mappings") == "\"physnet1:br-ex\""; }, 30s));
  const ino_t inode = namespaceInode(net.metadata_netns);

  agent_->process().signal(SIGTERM);
  ASSERT_EQ(agent_->process().waitExit(20s), 0) << agent_->log();
  EXPECT_NE(agent_->log().find("still has the role compute (the API server): a restart"),
            std::string::npos)
      << agent_->log();
  EXPECT_EQ(namespaceInode(net.metadata_netns), inode) << "the namespace is left for the next pod";
  EXPECT_TRUE(hasPort(net.metadata_tap_host));
  EXPECT_FALSE(providerDisabled());
  EXPECT_EQ(ovsId("ovn-bridge-mappings"), "\"physnet1:br-ex\"");
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/ovs-ownership.json"));

  // --cleanup --dry-run says what it would do and touches nothing.
  std::ofstream(dir_ + "/node.yaml") << kNode;
  const std::string cfg = dir_ + "/cleanup.yaml";
  std::ofstream(cfg) << config("{}", true, true);
  const std::string bin = std::string(::okna::testing::kBinaryDir) + "/agent/openkeel-node-agent";
  const std::string dry = bin + " --config " + cfg + " --cleanup --dry-run --node-file " + dir_ +
                          "/node.yaml --ovsdb " + chassis_->ovs_remote() + " >" + dir_ +
                          "/dry.out 2>&1";
  ASSERT_EQ(std::system(dry.c_str()), 0) << testing::readFile(dir_ + "/dry.out");
  const std::string printed = testing::readFile(dir_ + "/dry.out");
  EXPECT_NE(printed.find("remove " + net.metadata_netns), std::string::npos) << printed;
  EXPECT_NE(printed.find(std::string("the provider ") + kUid + " gets COMPUTE_STATUS_DISABLED"),
            std::string::npos)
      << printed;
  EXPECT_TRUE(namespaceExists(net.metadata_netns));
  EXPECT_FALSE(providerDisabled());

  // --cleanup, twice: the second finds nothing left and succeeds too.
  for (int run = 0; run < 2; ++run) {
    const std::string cmd = bin + " --config " + cfg + " --cleanup --node-name hv-e2e " +
                            "--kubeconfig " + server_->kubeconfig() +
                            " --context node-agent --ovsdb " + chassis_->ovs_remote() + " >" +
                            dir_ + "/cleanup.out 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::readFile(dir_ + "/cleanup.out");
    EXPECT_FALSE(namespaceExists(net.metadata_netns)) << run;
    EXPECT_FALSE(hasPort(net.metadata_tap_host)) << run;
    EXPECT_TRUE(providerDisabled()) << run;
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/placement-state.json")) << run;
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/ovs-ownership.json")) << run;
    EXPECT_EQ(ovsId("openkeel-node-agent"), "") << run;
    EXPECT_EQ(ovsId("ovn-bridge-mappings"), "") << run;
    EXPECT_EQ(chassis_->vsctl({"br-exists", "br-ex"}).exit_code, 2) << run;
  }
}

// The network-only DaemonSet's pod on a gateway that loses its role while a router gateway is
// bound here: the planned failover in Neutron's order, to its end, before the pod exits.
class NetworkRoleLost : public AgentDepartureTest, public ::testing::WithParamInterface<Order> {};

TEST_P(NetworkRoleLost, TheGatewayFailoverRunsToItsEndBeforeThePodExits) {
  const std::string here = chassis_->chassis_name();
  patchNode({{"labels", {{kComputeLabel, nullptr}, {kNetworkLabel, ""}}},
             {"annotations", {{"network.openkeel.io/bridge-mappings", "physnet1:br-ex"}}}});
  start(config("{roles: [network], metadataRoles: [compute]}", false, false));
  ASSERT_TRUE(waitFor([&] { return ovsId("ovn-bridge-mappings") == "\"physnet1:br-ex\""; }, 60s))
      << agent_->log();
  testing::addRouterGateway(*chassis_, "okdp", here);
  const auto crChassis = [&] { return testing::gatewayChassis(*chassis_); };
  ASSERT_TRUE(waitFor([&] { return crChassis() == here; }, 60s)) << "the gateway is bound here";
  // The agent has seen the claim (its Southbound snapshot can trail the SB by a moment).
  ASSERT_TRUE(waitFor([&] { return agent_->metric("okna_ovsdb_gateway_ports") == 1; }, 30s))
      << agent_->adminGet("/metrics").body;

  // Neutron reschedules on the SB Chassis update, on its own thread, until the pod has exited.
  std::atomic<bool> exited{false};
  testing::NeutronRescheduler neutron(*chassis_, "lrp-ext");
  std::thread neutronThread([&] {
    while (!exited) {
      neutron.poll();
      std::this_thread::sleep_for(100ms);  // Neutron's poll of the SB, not a synchronisation
    }
  });
  const auto code = removeRoleAndStop(
      GetParam(), {{"labels", {{kNetworkLabel, nullptr}}},
                   {"annotations", {{"network.openkeel.io/bridge-mappings", nullptr}}}});
  exited = true;
  neutronThread.join();
  ASSERT_EQ(code, 0) << agent_->log();
  EXPECT_EQ(neutron.moves(), 1);
  // Moved to the other gateway, which has no ovn-controller to claim it: bound nowhere.
  EXPECT_NE(crChassis(), here);
  EXPECT_EQ(ovsId("ovn-cms-options").find("enable-chassis-as-gw"), std::string::npos);
  EXPECT_EQ(ovsId("ovn-bridge-mappings"), "");
  EXPECT_EQ(ovsId("openkeel-node-agent"), "") << "the drain entry and the record are gone";
  EXPECT_EQ(chassis_->vsctl({"br-exists", "br-ex"}).exit_code, 2) << "br-ex is gone";
  EXPECT_NE(agent_->log().find("the role's removal finished"), std::string::npos) << agent_->log();
}

INSTANTIATE_TEST_SUITE_P(Orders, NetworkRoleLost,
                         ::testing::Values(Order::LabelFirst, Order::SigtermFirst), orderName);

}  // namespace
}  // namespace okna::metadata_e2e
