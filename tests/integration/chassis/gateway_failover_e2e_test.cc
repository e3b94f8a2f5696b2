// The planned gateway failover end to end, on a REAL OVN chassis (tests/fixtures/ovn: OVS
// userspace datapath, NB/SB, northd, ovn-controller) with a router whose gateway port is
// scheduled here, and a stand-in for Neutron ML2/OVN's rescheduling: on the SB Chassis update
// that takes enable-chassis-as-gw away, it moves the router port's Gateway_Chassis to a chassis
// that is still a gateway candidate, as OVNL3RouterPlugin.schedule_unhosted_gateways does.
// Shown: the flag is cleared first, the mappings / bridge / NIC stay until the gateway left this
// chassis, then they go. Root only (the fixture's namespace and ovs-vswitchd).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "chassis/chassis_reconciler.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/metrics.h"
#include "k8s/events.h"
#include "tests/fakes/chassis_plan.h"
#include "tests/fakes/fake_cluster.h"
#include "tests/fakes/fake_http_client.h"
#include "tests/fixtures/ovn/neutron_rescheduler.h"
#include "tests/fixtures/ovn/ovn_chassis_fixture.h"
#include "tests/integration/ovsdb/ovs_test_util.h"

namespace okna::ovsdb {
namespace {

using namespace std::chrono_literals;
using okna::testing::LoopRunner;
using okna::testing::must;
using okna::testing::NeutronRescheduler;
using okna::testing::OvnChassis;
using okna::testing::trimmed;
using Strings = std::vector<std::string>;

TEST(GatewayFailoverEndToEnd, FlagFirstMappingsKeptUntilTheGatewayLeftThenRemoved) {
  OKNA_SKIP_WITHOUT_OVN_CHASSIS();
  OvnChassis chassis;
  const std::string here = chassis.chassis_name();
  okna::testing::addRouterGateway(chassis, "okof", here);
  // The external NIC: a veth end where ovs-vswitchd runs.
  must(chassis.in_hv({"ip", "link", "add", "okfext0", "type", "veth", "peer", "name", "okfext0p"}),
       "ip link add");

  boost::asio::io_context io;
  okna::core::AsioClock clock(io);
  LoopRunner loop(io);
  core::MetricsRegistry metrics;
  core::HealthRegistry health;
  okna::testing::FakeHttpClient http;
  k8s::ApiClient api(http, okna::testing::fakeCluster());
  k8s::EventRecorder events(api, clock, {"net-1", "uid-1", "openkeel-node-agent"});
  OvsConfig config;
  config.enabled = true;
  config.remote = chassis.ovs_remote();
  config.stateFile = "";
  config.drainTimeout = 120s;  // far beyond the test's bounds: passing means "drained"
  ChassisReconciler agent(io, clock, config, metrics, health, &events);

  k8s::NodeInfo node;
  node.name = "net-1";
  node.labels = {{"topology.kubernetes.io/zone", "az1"}, {kExternalNicKey, "okfext0"}};
  node.annotations = {{kBridgeMappingsKey, "physnet1:br-ex"}};

  const auto ovsId = [&](const std::string& key) {
    const auto r =
        chassis.vsctl({"--if-exists", "get", "Open_vSwitch", ".", "external_ids:" + key});
    return r.ok() ? trimmed(r.out) : std::string();
  };
  const auto crChassis = [&] { return okna::testing::gatewayChassis(chassis); };
  const auto sbFlagHere = [&] {
    const auto r =
        chassis.sbctl({"--if-exists", "get", "Chassis", here, "other_config:ovn-cms-options"});
    return r.ok() && r.out.find("enable-chassis-as-gw") != std::string::npos;
  };
  const auto networkHere = [&] {
    return ovsId("ovn-bridge-mappings") == "\"physnet1:br-ex\"" &&
           chassis.vsctl({"port-to-br", "okfext0"}).out == "br-ex\n";
  };
  // The agent's part: the mappings and its NIC leave. The bridge itself goes only once
  // ovn-controller removed its patch port from it (ovn-controller 23.03 does that on its next
  // wake-up, ~10 s later on an idle chassis), so it is waited for apart.
  const auto networkGone = [&] {
    return ovsId("ovn-bridge-mappings").empty() &&
           chassis.vsctl({"port-to-br", "okfext0"}).exit_code != 0;
  };
  const auto bridgeGone = [&] { return chassis.vsctl({"br-exists", "br-ex"}).exit_code == 2; };
  const auto ovsState = [&] {
    return "mappings [" + ovsId("ovn-bridge-mappings") + "], br-ex ports [" +
           trimmed(chassis.vsctl({"list-ports", "br-ex"}).out) + "], ovn-controller " +
           (chassis.daemon_running("ovn-controller") ? "running" : "NOT running");
  };

  // A gateway: the flag reaches the SB Chassis, ovn-controller claims the gateway port here,
  // and the agent has seen the claim (on a loaded machine its snapshot can trail the SB by a
  // moment: a role change before that finds no gateway port to drain, correctly).
  okna::testing::planAndUpdate(agent, node, {"network"});
  const auto agentSeesGatewayHere = [&] {
    const auto& s = agent.snapshot();
    return s && std::find(s->sb.gatewayPorts.begin(), s->sb.gatewayPorts.end(), "cr-lrp-ext") !=
                    s->sb.gatewayPorts.end();
  };
  ASSERT_TRUE(loop.runUntil(
      [&] {
        return sbFlagHere() && networkHere() && crChassis() == here && agentSeesGatewayHere();
      },
      60s))
      << "flag in SB " << sbFlagHere() << ", cr-lrp-ext on " << crChassis()
      << ", seen by the agent " << agentSeesGatewayHere();

  // The operator takes the network role away (and the node's external network with it).
  NeutronRescheduler neutron(chassis, "lrp-ext");
  k8s::NodeInfo plain = node;
  plain.labels = {{"topology.kubernetes.io/zone", "az1"}};
  plain.annotations.clear();
  okna::testing::planAndUpdate(agent, plain, {"compute"});

  bool flagGoneWithNetworkHere = false;
  bool mappingsRemovedWhileBound = false;
  ASSERT_TRUE(loop.runUntil(
      [&] {
        // Read OVS first, then the SB: "network gone" at t1 and "still bound here" at t2 > t1
        // would mean the mappings went while the gateway was here.
        const bool here1 = networkHere();
        const bool gone1 = networkGone();
        const bool flag = sbFlagHere();
        const std::string bound = crChassis();
        if (!flag && here1) flagGoneWithNetworkHere = true;
        if (gone1 && bound == here) mappingsRemovedWhileBound = true;
        // Neutron acts only on the flag gone; the agent drops the network only once the gateway
        // left (checked above). So the network seen here just before Neutron moved the gateway
        // was here while the flag was gone, even when the sampling above missed that window
        // (the agent may take only ~30 ms from the move to the mappings' removal).
        const bool hereBeforeNeutron = networkHere();
        const int movesBefore = neutron.moves();
        neutron.poll();  // the SB Chassis update event reaches Neutron
        if (neutron.moves() > movesBefore && hereBeforeNeutron) flagGoneWithNetworkHere = true;
        return gone1;
      },
      60s))
      << ovsState() << ", cr-lrp-ext on " << crChassis() << ", neutron moves " << neutron.moves();
  ASSERT_TRUE(loop.runUntil(bridgeGone, 90s)) << ovsState();
  EXPECT_TRUE(flagGoneWithNetworkHere) << "the flag must go while the network is still here";
  EXPECT_FALSE(mappingsRemovedWhileBound);
  EXPECT_EQ(neutron.moves(), 1);
  EXPECT_NE(crChassis(), here);
  EXPECT_EQ(ovsId("ovn-cms-options"), "");
  EXPECT_EQ(trimmed(must(chassis.nbctl({"lrp-get-gateway-chassis", "lrp-ext"}), "get"))
                .rfind("lrp-ext-okof-other-gw", 0),
            0u);
  Strings reasons;
  for (const auto& p : http.all())
    if (p->request.method == "POST")
      reasons.push_back(nlohmann::json::parse(p->request.body)["reason"].get<std::string>());
  EXPECT_EQ(reasons, (Strings{"GatewayDrainStarted", "GatewayDrained"}));
  agent.stop();
}

// A NIC ovs-vswitchd cannot open: today the agent stayed ready with a broken br-ex.
TEST(OvsVswitchdFailures, AMissingExternalNicIsReportedNotReadyMetricAndEvent) {
  OKNA_SKIP_WITHOUT_OVN_CHASSIS();
  OvnChassis chassis;
  boost::asio::io_context io;
  okna::core::AsioClock clock(io);
  LoopRunner loop(io);
  core::MetricsRegistry metrics;
  core::HealthRegistry health;
  okna::testing::FakeHttpClient http;
  k8s::ApiClient api(http, okna::testing::fakeCluster());
  k8s::EventRecorder events(api, clock, {"net-1", "uid-1", "openkeel-node-agent"});
  OvsConfig config;
  config.enabled = true;
  config.remote = chassis.ovs_remote();
  config.stateFile = "";
  ChassisReconciler agent(io, clock, config, metrics, health, &events);
  k8s::NodeInfo node;
  node.name = "net-1";
  node.labels = {{kExternalNicKey, "okfnosuch0"}};
  node.annotations = {{kBridgeMappingsKey, "physnet1:br-ex"}};
  okna::testing::planAndUpdate(agent, node, {"network"});

  const auto ovsdbCheck = [&] {
    for (const auto& c : health.readiness())
      if (c.name == "ovsdb") return c;
    return core::HealthRegistry::Check{};
  };
  ASSERT_TRUE(loop.runUntil(
      [&] {
        return okna::testing::metricValue(metrics.render(), "okna_ovsdb_failed_interfaces") == 1;
      },
      30s))
      << metrics.render();
  EXPECT_FALSE(ovsdbCheck().ok);
  EXPECT_NE(ovsdbCheck().detail.find("bridge br-ex port okfnosuch0"), std::string::npos)
      << ovsdbCheck().detail;
  Strings reasons;
  for (const auto& p : http.all())
    if (p->request.method == "POST")
      reasons.push_back(nlohmann::json::parse(p->request.body)["reason"].get<std::string>());
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "OvsInterfaceFailed"), 1);

  // Fixed (the label names a NIC that exists): ready again.
  must(chassis.in_hv({"ip", "link", "add", "okfext1", "type", "veth", "peer", "name", "okfext1p"}),
       "ip link add");
  node.labels = {{kExternalNicKey, "okfext1"}};
  okna::testing::planAndUpdate(agent, node, {"network"});
  ASSERT_TRUE(loop.runUntil([&] { return ovsdbCheck().ok; }, 30s)) << ovsdbCheck().detail;
  EXPECT_EQ(okna::testing::metricValue(metrics.render(), "okna_ovsdb_failed_interfaces"), 0);
  agent.stop();
}

}  // namespace
}  // namespace okna::ovsdb
