// The planned gateway failover against a REAL Open_vSwitch ovsdb-server and a REAL OVN
// Southbound ovsdb-server: enable-chassis-as-gw stays while a chassisredirect Port_Binding is
// bound to this chassis, and goes when it moves, or at the timeout.
#include <gtest/gtest.h>

#include "core/health.h"
#include "core/metrics.h"
#include "ovsdb/chassis_reconciler.h"
#include "tests/integration/ovsdb/ovs_test_util.h"

namespace okna::ovsdb {
namespace {

using namespace std::chrono_literals;
using okna::testing::externalId;
using okna::testing::LoopRunner;
using okna::testing::metricValue;
using okna::testing::OvsdbServer;

class GatewayDrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OpenVSwitch);
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OvnSouthbound);
    ovs_ = std::make_unique<OvsdbServer>(OvsdbServer::Kind::OpenVSwitch);
    sb_ = std::make_unique<OvsdbServer>(OvsdbServer::Kind::OvnSouthbound);
    // What ovn-controller's configuration looks like: the chassis name and the SB remote.
    ovs_->vsctl({"set", "Open_vSwitch", ".", "external_ids:system-id=chassis-1",
                 "external_ids:ovn-remote=\"" + sb_->remote() + "\""});
    sb_->sbctl({"chassis-add", "chassis-1", "geneve", "192.0.2.10"});
    sb_->sbctl({"chassis-add", "chassis-2", "geneve", "192.0.2.11"});
    const std::string dp = sb_->sbctl({"create", "Datapath_Binding", "tunnel_key=7"});
    binding_ =
        sb_->sbctl({"create", "Port_Binding", "logical_port=cr-lrp-ext", "type=chassisredirect",
                    "tunnel_key=3", "datapath=" + dp, "chassis=" + chassisUuid("chassis-1")});
    // A VM port on this chassis is not a gateway.
    sb_->sbctl({"create", "Port_Binding", "logical_port=vm-1", "tunnel_key=4", "datapath=" + dp,
                "chassis=" + chassisUuid("chassis-1")});
  }

  std::string chassisUuid(const std::string& name) const {
    return sb_->sbctl({"--bare", "--columns=_uuid", "find", "Chassis", "name=" + name});
  }

  std::unique_ptr<ChassisReconciler> make(std::chrono::seconds drain) {
    OvsConfig c;
    c.enabled = true;
    c.remote = ovs_->remote();
    c.drainTimeout = drain;
    return std::make_unique<ChassisReconciler>(io_, c, metrics_, health_, nullptr);
  }

  static k8s::NodeInfo node() {
    k8s::NodeInfo n;
    n.name = "net-1";
    n.labels = {{"topology.kubernetes.io/zone", "az1"}};
    return n;
  }

  bool gatewayItemSet() const {
    return externalId(*ovs_, "ovn-cms-options").value_or("").find("enable-chassis-as-gw") !=
           std::string::npos;
  }

  // The reconciler sees the binding on its chassis (SB synced).
  bool seesGateway(const ChassisReconciler& r) const {
    return r.snapshot() && r.snapshot()->sb.synced &&
           r.snapshot()->sb.gatewayPorts == std::vector<std::string>{"cr-lrp-ext"};
  }

  double metric(const std::string& sample) const { return metricValue(metrics_.render(), sample); }

  boost::asio::io_context io_;
  LoopRunner loop_{io_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  std::unique_ptr<OvsdbServer> ovs_;
  std::unique_ptr<OvsdbServer> sb_;
  std::string binding_;
};

TEST_F(GatewayDrainTest, WaitsWhileTheGatewayIsBoundHereAndProceedsWhenItMoves) {
  auto r = make(60s);
  r->update(node(), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return gatewayItemSet() && seesGateway(*r); }));
  EXPECT_EQ(metric("okna_ovsdb_gateway_ports"), 1);

  r->update(node(), {"compute"});
  loop_.runFor(1500ms);
  EXPECT_TRUE(r->draining());
  EXPECT_TRUE(gatewayItemSet()) << "cleared while a gateway is still bound here";
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"), "enable-chassis-as-gw,availability-zones=az1");
  EXPECT_EQ(metric("okna_ovsdb_gateway_draining"), 1);

  // The control plane moves the gateway to chassis-2.
  const auto moved = std::chrono::steady_clock::now();
  sb_->sbctl({"set", "Port_Binding", binding_, "chassis=" + chassisUuid("chassis-2")});
  ASSERT_TRUE(loop_.runUntil([&] { return !externalId(*ovs_, "ovn-cms-options"); }, 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - moved, 5s);
  EXPECT_FALSE(r->draining());
  EXPECT_EQ(metric("okna_ovsdb_gateway_draining"), 0);
  EXPECT_EQ(metric("okna_ovsdb_gateway_drain_seconds_count"), 1);
}

TEST_F(GatewayDrainTest, ProceedsAtTheTimeoutWhenTheGatewayStays) {
  auto r = make(3s);
  r->update(node(), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return gatewayItemSet() && seesGateway(*r); }));
  const auto removed = std::chrono::steady_clock::now();
  r->update(node(), {});
  ASSERT_TRUE(loop_.runUntil([&] { return !gatewayItemSet(); }, 15s));
  const auto waited = std::chrono::steady_clock::now() - removed;
  EXPECT_GE(waited, 2900ms);
  EXPECT_LT(waited, 8s);
  EXPECT_EQ(metric("okna_ovsdb_gateway_drain_seconds_count"), 1);
}

TEST_F(GatewayDrainTest, NoGatewayBoundHereMeansNoWait) {
  sb_->sbctl({"clear", "Port_Binding", binding_, "chassis"});
  auto r = make(60s);
  r->update(node(), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return gatewayItemSet() && r->snapshot()->sb.synced && r->snapshot()->sb.gatewayPorts.empty();
  }));
  r->update(node(), {});
  ASSERT_TRUE(loop_.runUntil([&] { return !gatewayItemSet(); }, 5s));
  EXPECT_EQ(metric("okna_ovsdb_gateway_drain_seconds_count"), 0);
}

TEST_F(GatewayDrainTest, RoleBackDuringTheDrainCancelsIt) {
  auto r = make(60s);
  r->update(node(), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return gatewayItemSet() && seesGateway(*r); }));
  r->update(node(), {});
  ASSERT_TRUE(loop_.runUntil([&] { return r->draining(); }));
  r->update(node(), {"network"});
  EXPECT_FALSE(r->draining());
  sb_->sbctl({"clear", "Port_Binding", binding_, "chassis"});
  loop_.runFor(1000ms);
  EXPECT_TRUE(gatewayItemSet());
}

TEST_F(GatewayDrainTest, ANewAgentProcessDrainsToo) {
  {
    auto first = make(60s);
    first->update(node(), {"network"});
    ASSERT_TRUE(loop_.runUntil([&] { return gatewayItemSet() && seesGateway(*first); }));
  }
  // Restarted without the role: the ownership record says the item is the agent's, so the new
  // process drains rather than dropping the gateway at once.
  auto second = make(60s);
  second->update(node(), {});
  ASSERT_TRUE(loop_.runUntil([&] { return second->draining(); }));
  EXPECT_TRUE(gatewayItemSet());
  sb_->sbctl({"clear", "Port_Binding", binding_, "chassis"});
  ASSERT_TRUE(loop_.runUntil([&] { return !gatewayItemSet(); }, 10s));
}

}  // namespace
}  // namespace okna::ovsdb
