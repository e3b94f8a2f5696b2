// The one applier contract (core/applier.h): the agent hands each applier its section and reads
// its description through the contract only, so a fake stands in for any applier; the live
// appliers report their readiness component and describe themselves as /debug/plan shows them.
#include "core/applier.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/plan_appliers.h"
#include "chassis/chassis_reconciler.h"
#include "core/health.h"
#include "core/loop_thread.h"
#include "core/metrics.h"
#include "placement/reconciler.h"
#include "tests/fakes/fake_ovsdb.h"
#include "tests/fakes/manual_clock.h"
#include "tests/unit/placement/fake_placement.h"

namespace okna::agent {
namespace {

using namespace std::chrono_literals;

// Records what it was handed; describes itself by its name and the number of sections seen.
template <typename Section, typename Seen>
class RecordingApplier : public core::Applier<Section> {
 public:
  explicit RecordingApplier(std::string name) : name_(std::move(name)) {}
  void apply(const Section& section) override { seen.push_back(Seen(section)); }
  void stop() override { stopped = true; }
  std::optional<core::HealthRegistry::Check> health() const override {
    return core::HealthRegistry::Check{name_, true, "fake"};
  }
  nlohmann::json describe() const override { return {{"fake", name_}, {"seen", seen.size()}}; }
  bool settled() const override { return !seen.empty(); }

  std::vector<Seen> seen;
  bool stopped = false;

 private:
  std::string name_;
};

// What a section said, copied (the sections hold references into the plan).
struct ChassisSeen {
  explicit ChassisSeen(const ovsdb::ChassisSection& s) : node(s.node.name), planned(s.planned) {}
  std::string node;
  ovsdb::DesiredChassis planned;
};
struct PlacementSeen {
  explicit PlacementSeen(const placement::PlacementSection& s)
      : name(s.nodeName), uid(s.nodeUid), podsKnown(s.podsKnown), hasTree(s.desired.has_value()) {}
  std::string name, uid;
  bool podsKnown;
  bool hasTree;
};

k8s::NodeInfo computeNode() {
  k8s::NodeInfo n;
  n.name = "hv-1";
  n.uid = "0b6c7d9e-1111-4222-8333-444455556666";
  n.labels = {{"node-role.openkeel.io/compute", ""}};
  n.allocatable = {{"cpu", "16"}, {"memory", "64Gi"}};
  return n;
}

TEST(ApplierContractTest, HandPlanGivesEachApplierItsSectionThroughTheContract) {
  AgentConfig config;
  config.ovs.enabled = true;
  const k8s::NodeInfo node = computeNode();
  const Plan plan = computePlan(config, {node, std::vector<k8s::PodInfo>{}});
  ASSERT_TRUE(plan.placement) << "a compute node has a Placement section";
  ASSERT_TRUE(plan.metadata.active);

  RecordingApplier<ovsdb::ChassisSection, ChassisSeen> chassis("ovs");
  RecordingApplier<placement::PlacementSection, PlacementSeen> placementApplier("placement");
  RecordingApplier<MetadataIntent, MetadataIntent> metadata("metadata");
  const PlanAppliers appliers{&chassis, &placementApplier, &metadata};

  handPlan(plan, node, false, appliers);
  ASSERT_EQ(chassis.seen.size(), 1u);
  EXPECT_EQ(chassis.seen[0].node, "hv-1");
  EXPECT_EQ(chassis.seen[0].planned, plan.chassis);
  ASSERT_EQ(placementApplier.seen.size(), 1u);
  EXPECT_EQ(placementApplier.seen[0].name, "hv-1");
  EXPECT_EQ(placementApplier.seen[0].uid, node.uid);
  EXPECT_FALSE(placementApplier.seen[0].podsKnown) << "the applier decides what that means";
  EXPECT_TRUE(placementApplier.seen[0].hasTree);
  ASSERT_EQ(metadata.seen.size(), 1u);
  EXPECT_TRUE(metadata.seen[0].active);
  EXPECT_EQ(metadata.seen[0].reason, plan.metadata.reason);

  handPlan(plan, node, true, appliers);
  EXPECT_TRUE(placementApplier.seen.at(1).podsKnown);

  // /debug/plan's "appliers" is what each applier describes, under its section's key.
  const nlohmann::json view = appliersJson(appliers, false);
  EXPECT_EQ(view["ovs"], (nlohmann::json{{"fake", "ovs"}, {"seen", 2}}));
  EXPECT_EQ(view["placement"]["fake"], "placement");
  EXPECT_EQ(view["placement"]["waitingForPods"], true);
  EXPECT_EQ(view["metadata"], (nlohmann::json{{"fake", "metadata"}, {"seen", 2}}));
  // Appliers not configured are left out.
  EXPECT_EQ(appliersJson({nullptr, nullptr, &metadata}, true).size(), 1u);
}

class LiveApplierTest : public ::testing::Test {
 protected:
  LiveApplierTest() {
    config_.ovs.enabled = true;
    config_.ovs.remote = "unix:/fake/db.sock";
    config_.placement.stateFile = stateFile_;
    config_.placement.resyncInterval = 0s;
    config_.placement.capabilityTraits = {};
  }
  ~LiveApplierTest() override { std::filesystem::remove(stateFile_); }

  AgentConfig config_;
  std::string stateFile_ =
      ::testing::TempDir() + "applier-contract-state-" + std::to_string(::getpid()) + ".json";
  boost::asio::io_context io_;
  okna::testing::ManualClock clock_{io_};
  okna::testing::FakeOvsdb ovsdb_;
  okna::testing::FakePlacement placementApi_;
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
};

TEST_F(LiveApplierTest, PlacementKeepsItsStateUntilThePodsAreKnown) {
  placement::Reconciler r(io_, clock_, placementApi_, config_.placement, metrics_, health_);
  const k8s::NodeInfo node = computeNode();
  const Plan plan = computePlan(config_, {node, std::vector<k8s::PodInfo>{}});
  ASSERT_TRUE(plan.placement);
  core::Applier<placement::PlacementSection>& applier = r;

  applier.apply({plan.nodeName, plan.nodeUid, false, plan.placement});
  clock_.runFor(1s);
  EXPECT_FALSE(r.active()) << "no reservation from half the pods";
  EXPECT_FALSE(applier.health()) << "no readiness component before the compute role is acted on";
  EXPECT_TRUE(placementApi_.providers.empty());

  applier.apply({plan.nodeName, plan.nodeUid, true, plan.placement});
  clock_.runFor(1s);
  EXPECT_TRUE(r.active());
  EXPECT_TRUE(placementApi_.providers.count(node.uid));
  const auto health = applier.health();
  ASSERT_TRUE(health);
  EXPECT_EQ(health->name, "placement");
  EXPECT_TRUE(health->ok) << health->detail;
  EXPECT_EQ(applier.describe(), r.debugJson());

  // The role goes (no section) while the pods are known: the provider is closed.
  const std::optional<placement::DesiredProviderTree> none;
  applier.apply({plan.nodeName, plan.nodeUid, true, none});
  clock_.runFor(1s);
  EXPECT_FALSE(r.active());
  applier.stop();
  applier.stop();  // idempotent
}

TEST_F(LiveApplierTest, TheChassisReportsItsReadinessComponent) {
  ovsdb::ChassisReconciler r(io_, clock_, config_.ovs, metrics_, health_, nullptr,
                             ovsdb_.factory());
  core::Applier<ovsdb::ChassisSection>& applier = r;
  const auto before = applier.health();
  ASSERT_TRUE(before);
  EXPECT_EQ(before->name, "ovsdb");
  EXPECT_FALSE(before->ok);
  EXPECT_EQ(before->detail, "waiting for the Node");

  const k8s::NodeInfo node = computeNode();
  const Plan plan = computePlan(config_, {node, std::vector<k8s::PodInfo>{}});
  applier.apply({node, plan.chassis});
  clock_.runFor(1s);
  const auto after = applier.health();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->ok, health_.component("ovsdb")->ok);
  EXPECT_EQ(after->detail, health_.component("ovsdb")->detail);
  EXPECT_FALSE(ovsdb_.submitted().empty()) << "apply() is update()";
  EXPECT_EQ(applier.describe(), r.debugJson());
  applier.stop();
}

#ifndef NDEBUG
TEST_F(LiveApplierTest, AnApplierCalledOffTheLoopAbortsInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  placement::Reconciler r(io_, clock_, placementApi_, config_.placement, metrics_, health_);
  EXPECT_DEATH(
      {
        const core::LoopThreadScope loop;
        std::thread([&] { r.setActive(true); }).join();
      },
      "setActive: loop-only code called off the event loop thread");
}
#endif

}  // namespace
}  // namespace okna::agent
