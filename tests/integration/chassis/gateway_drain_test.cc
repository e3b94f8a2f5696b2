// The planned gateway failover against a REAL Open_vSwitch ovsdb-server and a REAL OVN
// Southbound ovsdb-server, in the order Neutron ML2/OVN needs: enable-chassis-as-gw (and the
// AZ item) goes at once, so that Neutron reschedules the router gateways; the bridge mappings,
// bridges and NIC stay while a chassisredirect Port_Binding is still bound to this chassis (up to
// the drain timeout); then they go. The drain's start is kept in the ownership record, so a new
// agent process continues the same drain.
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chassis/chassis_reconciler.h"
#include "chassis/ownership.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/logging.h"
#include "core/metrics.h"
#include "k8s/events.h"
#include "tests/fakes/chassis_plan.h"
#include "tests/fakes/fake_cluster.h"
#include "tests/fakes/fake_http_client.h"
#include "tests/integration/ovsdb/ovs_test_util.h"

namespace okna::ovsdb {
namespace {

using namespace std::chrono_literals;
using okna::testing::bridgeExists;
using okna::testing::externalId;
using okna::testing::LoopRunner;
using okna::testing::metricValue;
using okna::testing::OvsdbServer;
using okna::testing::ports;
using Strings = std::vector<std::string>;

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
    c.stateFile = "";  // the ownership record's copy: chassis_reconciler_test
    return std::make_unique<ChassisReconciler>(io_, clock_, c, metrics_, health_, &events_);
  }

  // A gateway node: the network role, a zone, a bridge mapping and the external NIC.
  static k8s::NodeInfo gatewayNode() {
    k8s::NodeInfo n;
    n.name = "net-1";
    n.labels = {{"topology.kubernetes.io/zone", "az1"}, {kExternalNicKey, "bond1"}};
    n.annotations = {{kBridgeMappingsKey, "physnet1:br-ex"}};
    return n;
  }
  // The same node once the operator took the network role and its inputs away.
  static k8s::NodeInfo plainNode() {
    k8s::NodeInfo n;
    n.name = "net-1";
    n.labels = {{"topology.kubernetes.io/zone", "az1"}};
    return n;
  }

  bool gatewayItemSet() const {
    return externalId(*ovs_, "ovn-cms-options").value_or("").find("enable-chassis-as-gw") !=
           std::string::npos;
  }
  bool networkKept() const {
    return externalId(*ovs_, "ovn-bridge-mappings") == "physnet1:br-ex" &&
           ports(*ovs_, "br-ex") == Strings{"bond1"};
  }
  bool networkGone() const {
    return !externalId(*ovs_, "ovn-bridge-mappings") && !bridgeExists(*ovs_, "br-ex");
  }
  std::int64_t recordedDrain() const {
    auto r = parseOwnership(externalId(*ovs_, kOwnershipKey).value_or("{}"));
    return r ? r->drainSince : -1;
  }

  // The reconciler sees the binding on its chassis (SB synced).
  bool seesGateway(const ChassisReconciler& r) const {
    return r.snapshot() && r.snapshot()->sb.synced &&
           r.snapshot()->sb.gatewayPorts == std::vector<std::string>{"cr-lrp-ext"};
  }
  bool converged(const ChassisReconciler& r) const {
    return r.snapshot() && r.snapshot()->convergedGeneration > 0 &&
           r.snapshot()->convergedGeneration == r.submittedGeneration();
  }

  // The reasons of the Events created so far.
  Strings eventReasons() const {
    Strings out;
    for (const auto& p : http_.all())
      if (p->request.method == "POST")
        out.push_back(nlohmann::json::parse(p->request.body)["reason"].get<std::string>());
    return out;
  }
  bool recorded(const std::string& reason) const {
    const auto r = eventReasons();
    return std::find(r.begin(), r.end(), reason) != r.end();
  }

  double metric(const std::string& sample) const { return metricValue(metrics_.render(), sample); }

  boost::asio::io_context io_;
  core::AsioClock clock_{io_};
  LoopRunner loop_{io_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  okna::testing::FakeHttpClient http_;
  k8s::ApiClient api_{http_, okna::testing::fakeCluster()};
  k8s::EventRecorder events_{api_, clock_, {"net-1", "uid-1", "openkeel-node-agent"}};
  std::unique_ptr<OvsdbServer> ovs_;
  std::unique_ptr<OvsdbServer> sb_;
  std::string binding_;
};

TEST_F(GatewayDrainTest, FlagGoesAtOnceNetworkStaysWhileTheGatewayIsBoundHereThenGoes) {
  auto r = make(60s);
  okna::testing::planAndUpdate(*r, gatewayNode(), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return gatewayItemSet() && networkKept() && seesGateway(*r); }));
  EXPECT_EQ(metric("okna_ovsdb_gateway_ports"), 1);

  // The role and its inputs go. Neutron moves gateways only once the flag is gone: the flag and
  // the AZ go in the first transaction, the mappings, bridge and NIC stay.
  okna::testing::planAndUpdate(*r, plainNode(), {"compute"});
  ASSERT_TRUE(loop_.runUntil([&] { return !externalId(*ovs_, "ovn-cms-options"); }));
  EXPECT_TRUE(networkKept()) << "the old chassis must keep forwarding until the new one claims";
  EXPECT_TRUE(r->draining());
  EXPECT_GT(recordedDrain(), 0);
  EXPECT_EQ(metric("okna_ovsdb_gateway_draining"), 1);
  ASSERT_TRUE(loop_.runUntil([&] { return recorded("GatewayDrainStarted"); }));
  loop_.runFor(1000ms);
  EXPECT_TRUE(networkKept()) << "removed while a gateway is still bound here";

  // The control plane moves the gateway to chassis-2: the network goes, the record forgets the
  // drain.
  sb_->sbctl({"set", "Port_Binding", binding_, "chassis=" + chassisUuid("chassis-2")});
  ASSERT_TRUE(loop_.runUntil([&] { return networkGone(); }));
  ASSERT_TRUE(loop_.runUntil([&] { return !externalId(*ovs_, kOwnershipKey); }));
  EXPECT_FALSE(r->draining());
  EXPECT_EQ(metric("okna_ovsdb_gateway_draining"), 0);
  EXPECT_EQ(metric("okna_ovsdb_gateway_drain_seconds_count"), 1);
  EXPECT_EQ(eventReasons(), (Strings{"GatewayDrainStarted", "GatewayDrained"}));
}

// The drain timeout (counted from this process' start or from the recorded one) is lived through
// in simulated time in tests/unit/chassis/chassis_reconciler_test.cc, with the same Events.

TEST_F(GatewayDrainTest, NoGatewayBoundHereMeansNoWaitAndNoEvents) {
  sb_->sbctl({"clear", "Port_Binding", binding_, "chassis"});
  auto r = make(60s);
  okna::testing::planAndUpdate(*r, gatewayNode(), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return gatewayItemSet() && networkKept() && r->snapshot()->sb.synced &&
           r->snapshot()->sb.gatewayPorts.empty();
  }));
  okna::testing::planAndUpdate(*r, plainNode(), {});
  ASSERT_TRUE(loop_.runUntil([&] { return !gatewayItemSet() && networkGone(); }, 5s));
  loop_.runFor(300ms);
  EXPECT_EQ(metric("okna_ovsdb_gateway_drain_seconds_count"), 0);
  EXPECT_EQ(eventReasons(), Strings{}) << "no GatewayDrainStarted/GatewayDrained pair";
}

TEST_F(GatewayDrainTest, ANewProcessWithNothingBoundHereRecordsNoDrainEvents) {
  sb_->sbctl({"clear", "Port_Binding", binding_, "chassis"});
  {
    auto first = make(60s);
    okna::testing::planAndUpdate(*first, gatewayNode(), {"network"});
    ASSERT_TRUE(loop_.runUntil([&] { return gatewayItemSet() && networkKept(); }));
  }
  // Restarted without the role: its first snapshots come before the SB is synced; it must not
  // announce a drain it does not know is needed.
  auto second = make(60s);
  okna::testing::planAndUpdate(*second, plainNode(), {});
  ASSERT_TRUE(loop_.runUntil([&] { return !gatewayItemSet() && networkGone(); }, 10s));
  loop_.runFor(300ms);
  EXPECT_EQ(eventReasons(), Strings{});
}

TEST_F(GatewayDrainTest, RoleBackDuringTheDrainCancelsIt) {
  auto r = make(60s);
  okna::testing::planAndUpdate(*r, gatewayNode(), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return gatewayItemSet() && networkKept() && seesGateway(*r); }));
  okna::testing::planAndUpdate(*r, plainNode(), {});
  ASSERT_TRUE(loop_.runUntil([&] { return r->draining() && !gatewayItemSet(); }));
  okna::testing::planAndUpdate(*r, gatewayNode(), {"network"});
  EXPECT_FALSE(r->draining());
  ASSERT_TRUE(loop_.runUntil([&] { return gatewayItemSet() && recordedDrain() == 0; }));
  sb_->sbctl({"clear", "Port_Binding", binding_, "chassis"});
  loop_.runFor(1000ms);
  EXPECT_TRUE(gatewayItemSet());
  EXPECT_TRUE(networkKept());
}

TEST_F(GatewayDrainTest, ANewAgentProcessContinuesTheSameDrain) {
  std::int64_t started = 0;
  {
    auto first = make(60s);
    okna::testing::planAndUpdate(*first, gatewayNode(), {"network"});
    ASSERT_TRUE(loop_.runUntil([&] { return gatewayItemSet() && seesGateway(*first); }));
    okna::testing::planAndUpdate(*first, plainNode(), {});
    ASSERT_TRUE(loop_.runUntil([&] { return recordedDrain() > 0 && !gatewayItemSet(); }));
    started = recordedDrain();
  }
  // Restarted, still without the role: the same drain, not a new one.
  auto second = make(60s);
  okna::testing::planAndUpdate(*second, plainNode(), {});
  ASSERT_TRUE(loop_.runUntil([&] { return second->draining() && converged(*second); }));
  EXPECT_EQ(recordedDrain(), started);
  EXPECT_TRUE(networkKept());
  sb_->sbctl({"clear", "Port_Binding", binding_, "chassis"});
  ASSERT_TRUE(loop_.runUntil([&] { return networkGone(); }, 10s));
}

// Issue 27, point 2: a Southbound outage showed only in /readyz: no log line, and
// okna_ovsdb_reconnects_total (which counted the local OVSDB alone) stayed 0. Each loss and each
// recovery is logged once, however many reconnection attempts fail in between, and counted under
// the database's name.
TEST_F(GatewayDrainTest, ASouthboundOutageIsLoggedOnceAndCountedUnderItsDatabase) {
  std::ostringstream lines;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines);
  sink->set_pattern("%v");
  auto logger = core::logger("ovsdb");
  logger->sinks().push_back(sink);
  struct Unhook {
    std::shared_ptr<spdlog::logger> logger;
    std::shared_ptr<spdlog::sinks::sink> sink;
    ~Unhook() { std::erase(logger->sinks(), sink); }
  } unhook{logger, sink};
  const auto count = [&](const std::string& what) {
    logger->flush();
    const std::string text = lines.str();
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
  };
  const std::string sbReconnects = R"(okna_ovsdb_reconnects_total{db="OVN_Southbound"})";
  const std::string sbLosses = R"(okna_ovsdb_connection_losses_total{db="OVN_Southbound"})";

  auto r = make(0s);
  okna::testing::planAndUpdate(*r, gatewayNode(), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return seesGateway(*r) && converged(*r); }));
  const auto sb = [&] { return r->snapshot()->sb; };
  for (int outage = 1; outage <= 2; ++outage) {
    sb_->kill();
    // Down, and at least one reconnection attempt refused since the loss.
    ASSERT_TRUE(loop_.runUntil(
        [&] {
          return !sb().connected && sb().connectionError.find("refused") != std::string::npos;
        },
        20s))
        << sb().connectionError;
    EXPECT_EQ(count("lost the connection to the Southbound DB"), static_cast<std::size_t>(outage))
        << lines.str();
    sb_->restart();
    ASSERT_TRUE(
        loop_.runUntil([&] { return sb().connected && metric(sbReconnects) == outage; }, 20s))
        << metrics_.render();
    EXPECT_EQ(metric(sbLosses), outage) << metrics_.render();
    EXPECT_EQ(count("reconnected to the Southbound DB"), static_cast<std::size_t>(outage))
        << lines.str();
  }
  // The local OVSDB never went away: its own series stay at 0.
  EXPECT_EQ(metric(R"(okna_ovsdb_reconnects_total{db="Open_vSwitch"})"), 0) << metrics_.render();
  EXPECT_EQ(metric(R"(okna_ovsdb_connection_losses_total{db="Open_vSwitch"})"), 0);
  EXPECT_EQ(count("lost the connection to the Southbound DB"), 2u);
}

}  // namespace
}  // namespace okna::ovsdb
