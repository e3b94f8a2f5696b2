// The ownership record is precious: against a REAL ovsdb-server, the record deleted or garbled
// behind the agent's back is restored (from its memory, then from the state file after a
// restart), and removing the role then still removes exactly what the agent added. With the
// record AND its copy gone (garbled, or deleted with the copy unreadable), the agent says so
// (Warning Event, metric, readiness detail), replaces a garbled record with a "lost" marker instead
// of deleting it, and takes over only when the Node is annotated
// chassis.openkeel.io/adopt-ownership=true.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chassis/chassis_reconciler.h"
#include "chassis/ownership.h"
#include "chassis/ownership_state_file.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/metrics.h"
#include "k8s/events.h"
#include "tests/fakes/chassis_plan.h"
#include "tests/fakes/fake_cluster.h"
#include "tests/fakes/fake_http_client.h"
#include "tests/integration/ovsdb/ovs_test_util.h"

namespace okna::ovsdb {
namespace {

using okna::testing::bridgeExists;
using okna::testing::externalId;
using okna::testing::LoopRunner;
using okna::testing::metricValue;
using okna::testing::OvsdbServer;
using okna::testing::ports;
using Strings = std::vector<std::string>;

class OwnershipRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OpenVSwitch);
    ovs_ = std::make_unique<OvsdbServer>(OvsdbServer::Kind::OpenVSwitch);
    ovs_->vsctl({"add-br", "br-int", "--", "set", "Open_vSwitch", ".",
                 "external_ids:ovn-cms-options=foreign"});
    dir_ = std::filesystem::temp_directory_path() /
           ("okc8-ownership-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string stateFile() const { return (dir_ / "ovs-ownership.json").string(); }

  std::unique_ptr<ChassisReconciler> make() {
    OvsConfig c;
    c.enabled = true;
    c.remote = ovs_->remote();
    c.drainTimeout = std::chrono::seconds(0);
    c.stateFile = stateFile();
    return std::make_unique<ChassisReconciler>(io_, clock_, c, metrics_, health_, &events_);
  }

  static k8s::NodeInfo node(k8s::StringMap labels, k8s::StringMap annotations = {}) {
    k8s::NodeInfo n;
    n.name = "net-1";
    n.labels = std::move(labels);
    n.annotations = std::move(annotations);
    return n;
  }
  // A gateway with a mapping, its bridge and a NIC.
  static k8s::NodeInfo gatewayNode(k8s::StringMap annotations = {}) {
    annotations[kBridgeMappingsKey] = "physnet1:br-ex";
    return node({{kExternalNicKey, "bond1"}}, std::move(annotations));
  }

  bool applied() const {
    return externalId(*ovs_, "ovn-cms-options") == "foreign,enable-chassis-as-gw" &&
           externalId(*ovs_, "ovn-bridge-mappings") == "physnet1:br-ex" &&
           ports(*ovs_, "br-ex") == Strings{"bond1"};
  }
  // Exactly what was there before the agent.
  bool removed() const {
    return externalId(*ovs_, "ovn-cms-options") == "foreign" &&
           !externalId(*ovs_, "ovn-bridge-mappings") && !bridgeExists(*ovs_, "br-ex") &&
           !externalId(*ovs_, kOwnershipKey);
  }
  // The record in the state file.
  OwnershipCopy fileCopy() const { return OwnershipStateFile(stateFile()).load(); }

  // Runs a first agent to convergence, then stops it (the record and its copy stay).
  void firstAgentApplies() {
    auto first = make();
    okna::testing::planAndUpdate(*first, gatewayNode(), {"network"});
    ASSERT_TRUE(loop_.runUntil([&] { return applied() && converged(*first); }));
    ASSERT_TRUE(loop_.runUntil([&] {
      const auto copy = fileCopy();
      return copy.state == OwnershipCopy::State::Known && !copy.record.empty();
    }));
  }

  static bool converged(const ChassisReconciler& r) {
    return r.snapshot() && r.submittedGeneration() > 0 &&
           r.snapshot()->convergedGeneration == r.submittedGeneration();
  }
  std::string readinessDetail() const {
    for (const auto& c : health_.readiness())
      if (c.name == "ovsdb") return c.detail;
    return "";
  }
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
  double lostMetric() const { return metricValue(metrics_.render(), "okna_ovsdb_ownership_lost"); }
  void deleteRecord() {
    ovs_->vsctl({"remove", "Open_vSwitch", ".", "external_ids", kOwnershipKey});
  }
  void garbleRecord() {
    ovs_->vsctl({"set", "Open_vSwitch", ".",
                 std::string("external_ids:") + kOwnershipKey + "=\"{not json\""});
  }

  boost::asio::io_context io_;
  core::AsioClock clock_{io_};
  LoopRunner loop_{io_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  okna::testing::FakeHttpClient http_;
  k8s::ApiClient api_{http_, okna::testing::fakeCluster()};
  k8s::EventRecorder events_{api_, clock_, {"net-1", "uid-1", "openkeel-node-agent"}};
  std::unique_ptr<OvsdbServer> ovs_;
  std::filesystem::path dir_;
};

TEST_F(OwnershipRecoveryTest, DeletedOrGarbledBehindTheRunningAgentsBackIsRestored) {
  auto r = make();
  okna::testing::planAndUpdate(*r, gatewayNode(), {"network"});
  ASSERT_TRUE(loop_.runUntil([&] { return applied() && converged(*r); }));
  const std::string record = externalId(*ovs_, kOwnershipKey).value();
  // Even with the state file gone too: the running agent remembers.
  std::filesystem::remove(stateFile());
  deleteRecord();
  ASSERT_TRUE(loop_.runUntil([&] { return externalId(*ovs_, kOwnershipKey) == record; }));
  EXPECT_TRUE(loop_.runUntil([&] { return recorded("OwnershipRecovered"); }));
  // ... and rewrites the removed state file.
  EXPECT_TRUE(loop_.runUntil([&] { return formatOwnership(fileCopy().record) == record; }));
  garbleRecord();
  ASSERT_TRUE(loop_.runUntil([&] { return externalId(*ovs_, kOwnershipKey) == record; }));
  EXPECT_EQ(lostMetric(), 0);
  // The role goes: everything the agent added goes.
  okna::testing::planAndUpdate(*r, node({}), {"compute"});
  ASSERT_TRUE(loop_.runUntil([&] { return removed(); }));
  EXPECT_FALSE(recorded("OwnershipLost"));
}

TEST_F(OwnershipRecoveryTest, AfterARestartTheStateFileRestoresADeletedOrGarbledRecord) {
  for (const bool garble : {false, true}) {
    SCOPED_TRACE(garble ? "garbled" : "deleted");
    firstAgentApplies();
    const std::string record = externalId(*ovs_, kOwnershipKey).value();
    EXPECT_EQ(formatOwnership(fileCopy().record), record);
    garble ? garbleRecord() : deleteRecord();
    // A new agent process, still a gateway: the record is written back from the file.
    {
      auto second = make();
      okna::testing::planAndUpdate(*second, gatewayNode(), {"network"});
      ASSERT_TRUE(loop_.runUntil([&] { return externalId(*ovs_, kOwnershipKey) == record; }));
    }
    garble ? garbleRecord() : deleteRecord();
    // A new agent process with the role removed: what the first added goes, the rest stays.
    auto third = make();
    okna::testing::planAndUpdate(*third, node({}), {"compute"});
    ASSERT_TRUE(loop_.runUntil([&] { return removed(); }))
        << nlohmann::json(okna::testing::externalIds(*ovs_)).dump();
    ASSERT_TRUE(loop_.runUntil([&] {
      const auto copy = fileCopy();
      return copy.state == OwnershipCopy::State::Known && copy.record.empty();
    }));
    EXPECT_EQ(lostMetric(), 0);
  }
  EXPECT_FALSE(recorded("OwnershipLost"));
}

TEST_F(OwnershipRecoveryTest, RecordAndCopyBothGoneIsLoudUntilAdopted) {
  firstAgentApplies();
  deleteRecord();
  // The copy is damaged too. (Removed instead, a new process cannot tell this node from one
  // set up by hand before the agent's first start: see chassis/README.md.)
  std::ofstream(stateFile(), std::ios::trunc) << "{\"v\":1,\"record\":{\"v\":1,\"cms\":";
  auto r = make();
  okna::testing::planAndUpdate(*r, gatewayNode(),
                               {"compute"});  // the role was removed while the agent was down
  ASSERT_TRUE(loop_.runUntil([&] { return lostMetric() == 1 && recorded("OwnershipLost"); }))
      << metrics_.render();
  // Nothing of it is removed (it cannot tell), and the loss is kept in the record.
  ASSERT_TRUE(loop_.runUntil([&] { return converged(*r); }));
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"), "foreign,enable-chassis-as-gw");
  EXPECT_TRUE(parseOwnership(externalId(*ovs_, kOwnershipKey).value_or(""))->lost);
  const std::string detail = readinessDetail();
  EXPECT_NE(detail.find("OwnershipLost"), std::string::npos) << detail;
  EXPECT_NE(detail.find(kAdoptOwnershipKey), std::string::npos) << detail;
  // The operator adopts: the node stops being a gateway, its mapping, bridge and NIC go.
  okna::testing::planAndUpdate(*r, gatewayNode({{kAdoptOwnershipKey, "true"}}), {"compute"});
  ASSERT_TRUE(loop_.runUntil(
      [&] { return externalId(*ovs_, "ovn-cms-options") == "foreign" && lostMetric() == 0; }));
  EXPECT_TRUE(recorded("OwnershipAdopted"));
  okna::testing::planAndUpdate(*r, node({}, {{kAdoptOwnershipKey, "true"}}), {"compute"});
  ASSERT_TRUE(loop_.runUntil([&] { return removed(); }));
  EXPECT_EQ(readinessDetail().find("OwnershipLost"), std::string::npos) << readinessDetail();
}

TEST_F(OwnershipRecoveryTest, AGarbledRecordWithNoCopyIsReplacedByALostMarkerNotDeleted) {
  firstAgentApplies();
  garbleRecord();
  std::filesystem::remove(stateFile());
  {
    auto r = make();
    okna::testing::planAndUpdate(*r, node({}), {"compute"});
    ASSERT_TRUE(loop_.runUntil([&] {
      const auto value = externalId(*ovs_, kOwnershipKey);
      return value && parseOwnership(*value).ok() && parseOwnership(*value)->lost;
    }));
    EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"), "foreign,enable-chassis-as-gw");
    ASSERT_TRUE(loop_.runUntil([&] { return lostMetric() == 1 && fileCopy().record.lost; }));
  }
  // Still lost for the next agent process (the marker is in OVSDB, and in the file, removed).
  std::filesystem::remove(stateFile());
  auto next = make();
  okna::testing::planAndUpdate(*next, node({}), {"compute"});
  ASSERT_TRUE(loop_.runUntil([&] {
    return next->snapshot() &&
           next->snapshot()->ownershipOutcome.kind == OwnershipOutcome::Kind::Lost;
  }));
  // "none": the items stay someone else's, the marker goes.
  okna::testing::planAndUpdate(*next, node({}, {{kAdoptOwnershipKey, "none"}}), {"compute"});
  ASSERT_TRUE(loop_.runUntil([&] { return !externalId(*ovs_, kOwnershipKey); }));
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options"), "foreign,enable-chassis-as-gw");
  EXPECT_TRUE(bridgeExists(*ovs_, "br-ex"));
}

}  // namespace
}  // namespace okna::ovsdb
