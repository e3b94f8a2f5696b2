// The chassis reconciler's drain and readiness logic without an ovsdb-server: an in-memory OVSDB
// behind the OvsdbApplier seam (tests/fakes/fake_ovsdb.h) and a manual clock, so that the drain
// timeout is lived through in simulated time and "the network is still kept" is checked at a
// known instant just before the deadline.
#include "chassis/chassis_reconciler.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chassis/ownership.h"
#include "core/health.h"
#include "core/metrics.h"
#include "k8s/events.h"
#include "tests/fakes/chassis_plan.h"
#include "tests/fakes/fake_cluster.h"
#include "tests/fakes/fake_http_client.h"
#include "tests/fakes/fake_ovsdb.h"
#include "tests/fakes/manual_clock.h"

namespace okna::ovsdb {
namespace {

using namespace std::chrono_literals;
using okna::testing::planAndUpdate;
using Strings = std::vector<std::string>;

// The host as the external NIC's safety check sees it: bond1 carries nothing.
class QuietNics : public HostNics {
 public:
  NicFacts facts(const std::string&) override { return {}; }
};

class ChassisReconcilerUnitTest : public ::testing::Test {
 protected:
  std::unique_ptr<ChassisReconciler> make(std::chrono::seconds drain = 120s) {
    OvsConfig c;
    c.enabled = true;
    c.remote = "unix:/fake/db.sock";
    c.drainTimeout = drain;
    auto r = std::make_unique<ChassisReconciler>(io_, clock_, c, metrics_, health_, &events_,
                                                 ovsdb_.factory());
    r->setHostNics(std::make_unique<QuietNics>());
    return r;
  }

  static k8s::NodeInfo gatewayNode() {
    k8s::NodeInfo n;
    n.name = "net-1";
    n.labels = {{"topology.kubernetes.io/zone", "az1"}, {kExternalNicKey, "bond1"}};
    n.annotations = {{kBridgeMappingsKey, "physnet1:br-ex"}};
    return n;
  }
  static k8s::NodeInfo plainNode() {
    k8s::NodeInfo n;
    n.name = "net-1";
    n.labels = {{"topology.kubernetes.io/zone", "az1"}};
    return n;
  }

  bool gatewayItemSet() const {
    return ovsdb_.externalId("ovn-cms-options").find(kGatewayItem) != std::string::npos;
  }
  bool networkKept() const {
    return ovsdb_.externalId("ovn-bridge-mappings") == "physnet1:br-ex" &&
           ovsdb_.hasBridge("br-ex");
  }
  bool networkGone() const {
    return ovsdb_.externalId("ovn-bridge-mappings").empty() && !ovsdb_.hasBridge("br-ex");
  }
  double metric(const std::string& sample) const {
    const std::string text = "\n" + metrics_.render();
    const auto p = text.find("\n" + sample + " ");
    return p == std::string::npos ? -1 : std::stod(text.substr(p + sample.size() + 2));
  }

  // The reasons of the Node Events created so far, in order.
  Strings eventReasons() const {
    Strings out;
    for (const auto& p : http_.all())
      if (p->request.method == "POST")
        out.push_back(nlohmann::json::parse(p->request.body)["reason"].get<std::string>());
    return out;
  }

  // A gateway node converged, with a router gateway bound here and the SB synced.
  std::unique_ptr<ChassisReconciler> convergedGateway(std::chrono::seconds drain = 120s) {
    auto r = make(drain);
    ovsdb_.setChassis("chassis-1");
    ovsdb_.setGatewayPorts({"cr-lrp-ext"});
    planAndUpdate(*r, gatewayNode(), {"network"});
    clock_.runFor(1s);
    EXPECT_TRUE(gatewayItemSet() && networkKept());
    return r;
  }

  boost::asio::io_context io_;
  okna::testing::ManualClock clock_{io_};
  okna::testing::FakeOvsdb ovsdb_;
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  okna::testing::FakeHttpClient http_;
  k8s::ApiClient api_{http_, okna::testing::fakeCluster()};
  k8s::EventRecorder events_{api_, clock_, {"net-1", "uid-1", "openkeel-node-agent"}};
};

TEST_F(ChassisReconcilerUnitTest, ReadyOnceTheFirstDesiredStateIsApplied) {
  auto r = make();
  EXPECT_FALSE(ovsdb_.started()) << "nothing touches OVSDB before the first plan";
  EXPECT_FALSE(health_.ready());
  planAndUpdate(*r, gatewayNode(), {"network"});
  EXPECT_TRUE(ovsdb_.started());
  clock_.runFor(1s);
  EXPECT_TRUE(health_.ready()) << health_.readiness()[0].detail;
  EXPECT_TRUE(gatewayItemSet());
  EXPECT_EQ(r->debugJson()["ready"], true);
  ovsdb_.setConnected(false);
  clock_.runFor(1s);
  EXPECT_FALSE(health_.ready());
  EXPECT_NE(health_.readiness()[0].detail.find("not connected to unix:/fake/db.sock"),
            std::string::npos);
}

// Issue 27, point 3: /readyz stayed green while ovs-vswitchd was dead (OVSDB still showed the
// ports and their ofport). The chassis is not ready while the probe finds it gone, with why.
TEST_F(ChassisReconcilerUnitTest, NotReadyWhileOvsVswitchdIsGoneReadyWhenItIsBack) {
  class ScriptedProbe final : public VswitchdProbe {
   public:
    explicit ScriptedProbe(std::shared_ptr<VswitchdStatus> status) : status_(std::move(status)) {}
    VswitchdStatus check() override { return *status_; }

   private:
    std::shared_ptr<VswitchdStatus> status_;
  };
  auto status = std::make_shared<VswitchdStatus>(VswitchdStatus{true, "pid 7, unixctl x"});
  auto r = make();
  r->setVswitchdProbe(std::make_unique<ScriptedProbe>(status));
  planAndUpdate(*r, gatewayNode(), {"network"});
  clock_.runFor(1s);
  ASSERT_TRUE(health_.ready()) << health_.readiness()[0].detail;
  EXPECT_EQ(metric("okna_ovsdb_vswitchd_running"), 1);
  *status = {false, "pid 7: /run/openvswitch/ovs-vswitchd.7.ctl: Connection refused"};
  // Nothing changes in OVSDB (its ports and ofports stay as they were): the check finds it.
  clock_.runFor(3s);
  EXPECT_FALSE(health_.ready());
  EXPECT_NE(health_.readiness()[0].detail.find("ovs-vswitchd is not running (pid 7: "
                                               "/run/openvswitch/ovs-vswitchd.7.ctl: Connection "
                                               "refused)"),
            std::string::npos)
      << health_.readiness()[0].detail;
  EXPECT_EQ(metric("okna_ovsdb_vswitchd_running"), 0);
  *status = {true, "pid 8, unixctl y"};
  clock_.runFor(3s);
  EXPECT_TRUE(health_.ready()) << health_.readiness()[0].detail;
  EXPECT_EQ(metric("okna_ovsdb_vswitchd_running"), 1);
}

TEST_F(ChassisReconcilerUnitTest, NetworkStaysUntilTheDrainTimeoutThenGoes) {
  auto r = convergedGateway(120s);
  planAndUpdate(*r, plainNode(), {"compute"});
  clock_.runFor(1s);
  EXPECT_FALSE(gatewayItemSet()) << "the flag goes at once, so that Neutron moves the gateways";
  EXPECT_TRUE(networkKept());
  const auto since = ovsdb_.record().drainSince;
  EXPECT_EQ(since, core::unixSeconds(clock_) - 1) << "the start is recorded for a new process";
  const nlohmann::json view = r->debugJson();
  EXPECT_EQ(view["drain"]["inProgress"], true) << view.dump();
  EXPECT_EQ(view["drain"]["gatewayPorts"], nlohmann::json({"cr-lrp-ext"}));
  EXPECT_EQ(metric("okna_ovsdb_gateway_draining"), 1);
  // Just before the deadline every timer due has fired, and the network is still there.
  clock_.runFor(118s);
  EXPECT_TRUE(networkKept()) << "the network went before the drain timeout";
  clock_.runFor(2s);
  EXPECT_TRUE(networkGone());
  EXPECT_EQ(ovsdb_.record().drainSince, 0);
  EXPECT_EQ(r->debugJson()["drain"]["inProgress"], false);
  EXPECT_EQ(metric("okna_ovsdb_gateway_draining"), 0);
  EXPECT_EQ(metric("okna_ovsdb_gateway_drain_seconds_count"), 1);
  EXPECT_EQ(eventReasons(), (Strings{"GatewayDrainStarted", "GatewayDrainTimedOut"}));
}

TEST_F(ChassisReconcilerUnitTest, NetworkGoesAsSoonAsTheGatewaysLeave) {
  auto r = convergedGateway(120s);
  planAndUpdate(*r, plainNode(), {"compute"});
  clock_.runFor(30s);
  EXPECT_TRUE(networkKept());
  ovsdb_.setGatewayPorts({});
  clock_.runFor(1ms);
  EXPECT_TRUE(networkGone());
  EXPECT_EQ(metric("okna_ovsdb_gateway_drain_seconds_count"), 1);
  EXPECT_EQ(eventReasons(), (Strings{"GatewayDrainStarted", "GatewayDrained"}));
}

// The role goes while the agent's own write of the flag is committed in OVSDB (ovn-controller
// saw it, a router gateway is bound here) but not yet read back by the agent: the flag it may
// have written is its own, so the network stays until the gateway left. (Found by the gateway
// failover end-to-end test under load: the flag and the network went in one transaction.)
TEST_F(ChassisReconcilerUnitTest, ARoleLostWhileItsOwnWriteIsInFlightStillDrains) {
  auto r = make(120s);
  ovsdb_.setChassis("chassis-1");
  ovsdb_.holdWrites();
  planAndUpdate(*r, gatewayNode(), {"network"});
  clock_.runFor(1s);
  ovsdb_.setGatewayPorts({"cr-lrp-ext"});
  clock_.runFor(1s);
  planAndUpdate(*r, plainNode(), {"compute"});
  clock_.runFor(1s);
  ovsdb_.releaseWrites();
  clock_.runFor(1s);
  EXPECT_FALSE(gatewayItemSet());
  EXPECT_TRUE(networkKept()) << "the network went while a gateway was bound here";
  EXPECT_EQ(r->debugJson()["drain"]["inProgress"], true);
  ovsdb_.setGatewayPorts({});
  clock_.runFor(1ms);
  EXPECT_TRUE(networkGone());
  EXPECT_EQ(eventReasons(), (Strings{"GatewayDrainStarted", "GatewayDrained"}));
}

TEST_F(ChassisReconcilerUnitTest, WhileTheSouthboundIsNotSyncedTheDrainWaitsForTheTimeout) {
  auto r = convergedGateway(60s);
  ovsdb_.setGatewayPorts({}, false);
  planAndUpdate(*r, plainNode(), {"compute"});
  clock_.runFor(59s);
  EXPECT_TRUE(networkKept()) << "an unsynced view cannot tell that the gateways moved";
  clock_.runFor(2s);
  EXPECT_TRUE(networkGone());
}

TEST_F(ChassisReconcilerUnitTest, ANewProcessCountsTheTimeoutFromTheRecordedStart) {
  {
    auto first = convergedGateway(120s);
    planAndUpdate(*first, plainNode(), {"compute"});
    clock_.runFor(100s);
    EXPECT_TRUE(networkKept());
    first->stop();
  }
  // The agent restarts 100 s into the drain: 20 s are left, not 120.
  auto second = make(120s);
  planAndUpdate(*second, plainNode(), {"compute"});
  clock_.runFor(1s);
  EXPECT_TRUE(networkKept());
  EXPECT_EQ(second->debugJson()["drain"]["resumed"], true);
  clock_.runFor(18s);
  EXPECT_TRUE(networkKept());
  clock_.runFor(2s);
  EXPECT_TRUE(networkGone());
  EXPECT_EQ(eventReasons().back(), "GatewayDrainTimedOut");
}

TEST_F(ChassisReconcilerUnitTest, RoleBackDuringTheDrainCancelsIt) {
  auto r = convergedGateway(120s);
  planAndUpdate(*r, plainNode(), {"compute"});
  clock_.runFor(10s);
  planAndUpdate(*r, gatewayNode(), {"network"});
  clock_.runFor(300s);
  EXPECT_TRUE(gatewayItemSet());
  EXPECT_TRUE(networkKept());
  EXPECT_EQ(ovsdb_.record().drainSince, 0);
  EXPECT_EQ(metric("okna_ovsdb_gateway_draining"), 0);
}

TEST_F(ChassisReconcilerUnitTest, AnUnsafeExternalNicIsTheAppliersOwnFindingInDebugPlan) {
  class RouteNics : public HostNics {
   public:
    NicFacts facts(const std::string&) override { return {true, {}}; }
  };
  auto r = make();
  r->setHostNics(std::make_unique<RouteNics>());
  planAndUpdate(*r, gatewayNode(), {"network"});
  clock_.runFor(1s);
  EXPECT_TRUE(ovsdb_.hasBridge("br-ex"));
  const nlohmann::json view = r->debugJson();
  ASSERT_TRUE(view["externalNicRefused"].is_string()) << view.dump();
  EXPECT_NE(view["externalNicRefused"].get<std::string>().find("bond1"), std::string::npos);
}

}  // namespace
}  // namespace okna::ovsdb
