// ChassisReconciler in-process (an io_context on the test thread) against a REAL ovsdb-server
// with the vswitch schema: every Node input applied and removed live, foreign items and keys
// preserved byte for byte, drift repaired, state re-asserted after the server is killed and
// restarted on an empty database, ownership surviving a new agent process, invalid mappings.
#include "chassis/chassis_reconciler.h"
#include "core/clock.h"

#include <gtest/gtest.h>

#include <csignal>

#include "chassis/ownership.h"
#include "core/health.h"
#include "core/metrics.h"
#include "tests/fakes/chassis_plan.h"
#include "tests/integration/ovsdb/ovs_test_util.h"

namespace okna::ovsdb {
namespace {

using okna::testing::bridgeExists;
using okna::testing::externalId;
using okna::testing::externalIds;
using okna::testing::LoopRunner;
using okna::testing::OvsdbServer;
using okna::testing::ports;
using okna::testing::quoted;
using Strings = std::vector<std::string>;

const std::string kForeignCms = R"(enable-chassis-as-extport-host,card-serial-number=AB"C d)";

class ChassisReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OpenVSwitch);
    ovs_ = std::make_unique<OvsdbServer>(OvsdbServer::Kind::OpenVSwitch);
    ovs_->vsctl({"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev"});
    ovs_->vsctl(
        {"set", "Open_vSwitch", ".",
         R"(external_ids:ovn-cms-options="enable-chassis-as-extport-host,card-serial-number=AB\"C d")",
         "external_ids:hostname=net-1", "external_ids:foreign-key=untouched"});
  }

  std::unique_ptr<ChassisReconciler> make(std::chrono::seconds drain = std::chrono::seconds(0)) {
    OvsConfig c;
    c.enabled = true;
    c.remote = ovs_->remote();
    c.drainTimeout = drain;
    c.stateFile = "";  // the record's copy: ownership_recovery_test
    return std::make_unique<ChassisReconciler>(io_, clock_, c, metrics_, health_, nullptr);
  }

  static k8s::NodeInfo node(k8s::StringMap labels, k8s::StringMap annotations = {}) {
    k8s::NodeInfo n;
    n.name = "net-1";
    n.labels = std::move(labels);
    n.annotations = std::move(annotations);
    return n;
  }

  bool ready() const {
    for (const auto& c : health_.readiness())
      if (c.name == "ovsdb") return c.ok;
    return false;
  }

  std::string readinessDetail() const {
    for (const auto& c : health_.readiness())
      if (c.name == "ovsdb") return c.detail;
    return "";
  }
  static bool converged(const ChassisReconciler& r) {
    return r.snapshot() && r.submittedGeneration() > 0 &&
           r.snapshot()->convergedGeneration == r.submittedGeneration();
  }

  std::string metricsText() const { return metrics_.render(); }

  boost::asio::io_context io_;
  core::AsioClock clock_{io_};
  LoopRunner loop_{io_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  std::unique_ptr<OvsdbServer> ovs_;
};

TEST_F(ChassisReconcilerTest, EachInputAppliedAndRemovedLiveForeignStateUntouched) {
  const auto before = externalIds(*ovs_);
  auto r = make();
  EXPECT_FALSE(ready());

  // Network role + zone.
  okna::testing::planAndUpdate(*r, node({{"topology.kubernetes.io/zone", "az1"}}), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return externalId(*ovs_, "ovn-cms-options") ==
           kForeignCms + ",enable-chassis-as-gw,availability-zones=az1";
  })) << externalId(*ovs_, "ovn-cms-options").value_or("<absent>");
  ASSERT_TRUE(loop_.runUntil([&] { return ready(); }));

  // Bridge mappings (label encoding) and the external NIC.
  okna::testing::planAndUpdate(*r,
                               node({{"topology.kubernetes.io/zone", "az1"},
                                     {kBridgeMappingsKey, "physnet1_cbr-ex_sphysnet2_cbr-vlan"},
                                     {kExternalNicKey, "bond1"}}),
                               {"network"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return externalId(*ovs_, "ovn-bridge-mappings") == "physnet1:br-ex,physnet2:br-vlan" &&
           ports(*ovs_, "br-ex") == Strings{"bond1"} && bridgeExists(*ovs_, "br-vlan");
  }));
  // Same datapath as br-int.
  EXPECT_EQ(ovs_->vsctl({"get", "Bridge", "br-ex", "datapath_type"}), "netdev");
  EXPECT_EQ(ovs_->vsctl({"get", "Bridge", "br-vlan", "datapath_type"}), "netdev");

  // The zone changes: replaced in place.
  okna::testing::planAndUpdate(*r,
                               node({{"topology.kubernetes.io/zone", "az2"},
                                     {kBridgeMappingsKey, "physnet1_cbr-ex_sphysnet2_cbr-vlan"},
                                     {kExternalNicKey, "bond1"}}),
                               {"network"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return externalId(*ovs_, "ovn-cms-options") ==
           kForeignCms + ",enable-chassis-as-gw,availability-zones=az2";
  }));

  // The NIC label goes: only the port goes.
  okna::testing::planAndUpdate(*r,
                               node({{"topology.kubernetes.io/zone", "az2"},
                                     {kBridgeMappingsKey, "physnet1_cbr-ex_sphysnet2_cbr-vlan"}}),
                               {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return ports(*ovs_, "br-ex").empty(); }));
  EXPECT_TRUE(bridgeExists(*ovs_, "br-ex"));

  // Everything goes (drain timeout 0): exactly the starting external_ids, our bridges gone.
  okna::testing::planAndUpdate(*r, node({}), {"compute"});
  ASSERT_TRUE(loop_.runUntil([&] { return externalIds(*ovs_) == before; }))
      << nlohmann::json(externalIds(*ovs_)).dump();
  ASSERT_TRUE(loop_.runUntil([&] { return !bridgeExists(*ovs_, "br-ex"); }));
  EXPECT_FALSE(bridgeExists(*ovs_, "br-vlan"));
  EXPECT_TRUE(bridgeExists(*ovs_, "br-int"));
  EXPECT_NE(metricsText().find("okna_ovsdb_transactions_total{result=\"success\"}"),
            std::string::npos);
  EXPECT_NE(metricsText().find("okna_ovsdb_connected 1"), std::string::npos) << metricsText();
}

TEST_F(ChassisReconcilerTest, ForeignWritesDuringOperationSurvive) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node({}, {{kBridgeMappingsKey, "physnet1:br-ex"}}), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return ready(); }));
  // Another writer appends to both lists and adds its own key while the agent runs.
  ovs_->vsctl({"set", "Open_vSwitch", ".",
               "external_ids:ovn-cms-options=" +
                   quoted(externalId(*ovs_, "ovn-cms-options").value() + ",late-item"),
               "external_ids:ovn-bridge-mappings=\"physnet1:br-ex,physnet9:br-op\"",
               "external_ids:late-key=\"a,b=c\""});
  loop_.runFor(std::chrono::milliseconds(300));
  okna::testing::planAndUpdate(*r, node({}), {});
  ASSERT_TRUE(loop_.runUntil([&] {
    return externalId(*ovs_, "ovn-cms-options") == kForeignCms + ",late-item" &&
           externalId(*ovs_, "ovn-bridge-mappings") == "physnet9:br-op";
  })) << nlohmann::json(externalIds(*ovs_)).dump();
  EXPECT_EQ(externalId(*ovs_, "late-key"), "a,b=c");
  EXPECT_EQ(externalId(*ovs_, "foreign-key"), "untouched");
}

TEST_F(ChassisReconcilerTest, DriftIsRepaired) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node({{kExternalNicKey, "bond1"}}), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return ports(*ovs_, "br-ex") == Strings{"bond1"}; }));
  // An operator deletes our port and our item behind the agent's back.
  ovs_->vsctl({"del-port", "br-ex", "bond1"});
  ovs_->vsctl(
      {"set", "Open_vSwitch", ".",
       R"(external_ids:ovn-cms-options="enable-chassis-as-extport-host,card-serial-number=AB\"C d")"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return ports(*ovs_, "br-ex") == Strings{"bond1"} &&
           externalId(*ovs_, "ovn-cms-options") == kForeignCms + ",enable-chassis-as-gw";
  }));
  // And a deleted bridge is recreated.
  ovs_->vsctl({"del-br", "br-ex"});
  ASSERT_TRUE(loop_.runUntil([&] { return ports(*ovs_, "br-ex") == Strings{"bond1"}; }));
}

TEST_F(ChassisReconcilerTest, StateIsReassertedAfterTheServerIsKilledAndRestarted) {
  auto r = make();
  const auto labels = k8s::StringMap{{kBridgeMappingsKey, "physnet1_cbr-ex"}};
  okna::testing::planAndUpdate(*r, node(labels), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return ready(); }));
  ovs_->restartWithEmptyDatabase();
  ASSERT_TRUE(loop_.runUntil([&] {
    return externalId(*ovs_, "ovn-cms-options") == "enable-chassis-as-gw" &&
           externalId(*ovs_, "ovn-bridge-mappings") == "physnet1:br-ex" &&
           bridgeExists(*ovs_, "br-ex");
  }));
  ASSERT_TRUE(loop_.runUntil([&] {
    return okna::testing::metricValue(metricsText(),
                                      R"(okna_ovsdb_reconnects_total{db="Open_vSwitch"})") >= 1;
  })) << metricsText();
  // A plain kill + restart on the same database: nothing to do, still connected and ready.
  const double reconnects = okna::testing::metricValue(
      metricsText(), R"(okna_ovsdb_reconnects_total{db="Open_vSwitch"})");
  ovs_->restart();
  ASSERT_TRUE(loop_.runUntil([&] {
    return okna::testing::metricValue(
               metricsText(), R"(okna_ovsdb_reconnects_total{db="Open_vSwitch"})") > reconnects &&
           ready();
  })) << metricsText();
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"), "enable-chassis-as-gw");
}

// Issue 27, point 3: with ovs-vswitchd SIGKILLed, OVSDB still showed every port and ofport and
// /readyz stayed green. A real ovs-vswitchd (dummy datapath: nothing reaches the kernel) on the
// server's database: killed, the chassis is not ready and says why; restarted, ready again.
TEST_F(ChassisReconcilerTest, NotReadyWhileOvsVswitchdIsKilledReadyOnceItIsBack) {
  auto vswitchd = okna::testing::startDummyVswitchd(*ovs_);
  if (!vswitchd) GTEST_SKIP() << "ovs-vswitchd is not installed";
  const std::string dir = ovs_->dir();
  OvsConfig c;
  c.enabled = true;
  c.remote = ovs_->remote();
  c.stateFile = "";
  c.vswitchdRunDir = dir;
  c.vswitchdCheckInterval = std::chrono::milliseconds(200);
  auto r = std::make_unique<ChassisReconciler>(io_, clock_, c, metrics_, health_, nullptr);
  okna::testing::planAndUpdate(*r, node({}), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return ready(); })) << readinessDetail() << vswitchd->log();

  vswitchd->signal(SIGKILL);
  ASSERT_TRUE(vswitchd->waitExit(std::chrono::seconds(10)));
  ASSERT_TRUE(loop_.runUntil([&] { return !ready(); })) << readinessDetail();
  EXPECT_NE(readinessDetail().find("ovs-vswitchd is not running (pid "), std::string::npos)
      << readinessDetail();
  EXPECT_NE(readinessDetail().find("Connection refused"), std::string::npos) << readinessDetail();
  EXPECT_EQ(okna::testing::metricValue(metricsText(), "okna_ovsdb_vswitchd_running"), 0);
  EXPECT_TRUE(okna::testing::externalId(*ovs_, "ovn-cms-options").has_value())
      << "the local OVSDB still answers: only ovs-vswitchd is gone";

  vswitchd = okna::testing::startDummyVswitchd(*ovs_);
  ASSERT_TRUE(loop_.runUntil([&] { return ready(); })) << readinessDetail() << vswitchd->log();
  EXPECT_EQ(okna::testing::metricValue(metricsText(), "okna_ovsdb_vswitchd_running"), 1);
}

TEST_F(ChassisReconcilerTest, OwnershipSurvivesANewAgentProcess) {
  // An operator's own br-ex with its NIC exists before the agent.
  ovs_->vsctl({"add-br", "br-ex", "--", "add-port", "br-ex", "eth9"});
  {
    auto first = make();
    okna::testing::planAndUpdate(
        *first, node({{kExternalNicKey, "bond1"}}, {{kBridgeMappingsKey, "physnet1:br-ex"}}),
        {"network"});
    ASSERT_TRUE(loop_.runUntil([&] { return ports(*ovs_, "br-ex") == Strings{"bond1", "eth9"}; }));
    ASSERT_TRUE(loop_.runUntil(
        [&] { return first->snapshot() && first->snapshot()->convergedGeneration > 0; }));
  }
  const auto record = parseOwnership(externalId(*ovs_, kOwnershipKey).value_or(""));
  ASSERT_TRUE(record.ok());
  EXPECT_TRUE(record->bridges.empty());  // br-ex was the operator's
  EXPECT_EQ(record->ports, (std::vector<std::pair<std::string, std::string>>{{"br-ex", "bond1"}}));

  auto second = make();
  okna::testing::planAndUpdate(*second, node({}), {"compute"});
  ASSERT_TRUE(loop_.runUntil([&] { return ports(*ovs_, "br-ex") == Strings{"eth9"}; }));
  ASSERT_TRUE(loop_.runUntil([&] { return !externalId(*ovs_, kOwnershipKey); }));
  EXPECT_TRUE(bridgeExists(*ovs_, "br-ex"));
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"), kForeignCms);
  EXPECT_FALSE(externalId(*ovs_, "ovn-bridge-mappings"));
}

TEST_F(ChassisReconcilerTest, InvalidMappingsApplyNothingForThatKeyAndWarn) {
  auto r = make();
  okna::testing::planAndUpdate(
      *r, node({{kExternalNicKey, "bond1"}}, {{kBridgeMappingsKey, "physnet1:br-ex,physnet2"}}),
      {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return ready(); }));
  EXPECT_FALSE(externalId(*ovs_, "ovn-bridge-mappings"));
  // The other keys follow their own inputs: the NIC goes on the default bridge.
  EXPECT_EQ(ports(*ovs_, "br-ex"), Strings{"bond1"});
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"), kForeignCms + ",enable-chassis-as-gw");
  ASSERT_EQ(r->planned()->warnings.size(), 1u);
  EXPECT_NE(r->planned()->warnings[0].message.find("\"physnet1:br-ex,physnet2\""),
            std::string::npos);
}

// Last good: one typo in a working node's inputs must not take its external network away.
TEST_F(ChassisReconcilerTest, MalformedInputsKeepWhatIsAppliedAndSaySoInReadiness) {
  auto r = make();
  const k8s::StringMap labels{{kExternalNicKey, "bond1"}, {"topology.kubernetes.io/zone", "az1"}};
  okna::testing::planAndUpdate(*r, node(labels, {{kBridgeMappingsKey, "physnet1:br-ex"}}),
                               {"network"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return externalId(*ovs_, "ovn-bridge-mappings") == "physnet1:br-ex" &&
           ports(*ovs_, "br-ex") == Strings{"bond1"} && ready();
  }));
  // Typos in all three inputs at once.
  okna::testing::planAndUpdate(
      *r,
      node({{kExternalNicKey, "bond1-with-a-long-name"}, {"topology.kubernetes.io/zone", "a,b"}},
           {{kBridgeMappingsKey, "physnet1:br-ex,physnet2"}}),
      {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return converged(*r); }));
  EXPECT_EQ(externalId(*ovs_, "ovn-bridge-mappings"), "physnet1:br-ex");
  EXPECT_EQ(ports(*ovs_, "br-ex"), Strings{"bond1"});
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"),
            kForeignCms + ",enable-chassis-as-gw,availability-zones=az1");
  EXPECT_TRUE(ready()) << "a node that still works stays ready";
  const std::string detail = readinessDetail();
  EXPECT_NE(detail.find("InvalidBridgeMappings"), std::string::npos) << detail;
  EXPECT_NE(detail.find("InvalidExternalNic"), std::string::npos) << detail;
  EXPECT_NE(detail.find("InvalidZone"), std::string::npos) << detail;
  // Fixed: the new values apply and the detail clears.
  okna::testing::planAndUpdate(
      *r,
      node({{kExternalNicKey, "bond2"}, {"topology.kubernetes.io/zone", "az2"}},
           {{kBridgeMappingsKey, "physnet2:br-vlan"}}),
      {"network"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return externalId(*ovs_, "ovn-bridge-mappings") == "physnet2:br-vlan" &&
           ports(*ovs_, "br-vlan") == Strings{"bond2"} && !bridgeExists(*ovs_, "br-ex");
  }));
  EXPECT_EQ(readinessDetail().find("Invalid"), std::string::npos) << readinessDetail();
}

TEST_F(ChassisReconcilerTest, BridgesFollowOvnBridgeDatapathTypeAndAreRepaired) {
  ovs_->vsctl({"set", "Open_vSwitch", ".", "external_ids:ovn-bridge-datapath-type=netdev"});
  ovs_->vsctl({"set", "Bridge", "br-int", "datapath_type=system"});
  auto r = make();
  okna::testing::planAndUpdate(*r, node({}, {{kBridgeMappingsKey, "physnet1:br-ex"}}), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return bridgeExists(*ovs_, "br-ex") && converged(*r); }));
  EXPECT_EQ(ovs_->vsctl({"get", "Bridge", "br-ex", "datapath_type"}), "netdev");
  // Someone changes the agent's bridge: repaired.
  ovs_->vsctl({"set", "Bridge", "br-ex", "datapath_type=system"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return ovs_->vsctl({"get", "Bridge", "br-ex", "datapath_type"}) == "netdev";
  }));
}

TEST_F(ChassisReconcilerTest, NoBridgeForAMappingAForeignEntryBlocks) {
  ovs_->vsctl({"set", "Open_vSwitch", ".", "external_ids:ovn-bridge-mappings=\"physnet1:br-op\""});
  auto r = make();
  okna::testing::planAndUpdate(
      *r, node({}, {{kBridgeMappingsKey, "physnet1:br-ex,physnet2:br-vlan"}}), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return converged(*r) && bridgeExists(*ovs_, "br-vlan"); }));
  EXPECT_FALSE(bridgeExists(*ovs_, "br-ex"));
  EXPECT_EQ(externalId(*ovs_, "ovn-bridge-mappings"), "physnet1:br-op,physnet2:br-vlan");
}

}  // namespace
}  // namespace okna::ovsdb
