// One plan per input change, consumed by every applier: the planners run once (PlanTracker), each
// warning is logged once under its component, and the appliers (the chassis reconciler on an
// in-memory OVSDB, Placement on a fake Placement, both on a manual clock) log none of them again;
// what each applier does about its section shows next to the plan (appliersJson).
#include "agent/plan.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/plan_appliers.h"
#include "chassis/chassis_reconciler.h"
#include "core/health.h"
#include "core/logging.h"
#include "core/metrics.h"
#include "placement/reconciler.h"
#include "tests/fakes/fake_ovsdb.h"
#include "tests/fakes/manual_clock.h"
#include "tests/unit/placement/fake_placement.h"

namespace okna::agent {
namespace {

using namespace std::chrono_literals;

class QuietNics : public ovsdb::HostNics {
 public:
  ovsdb::NicFacts facts(const std::string&) override { return {}; }
};

class PlanTest : public ::testing::Test {
 protected:
  PlanTest() {
    config_.ovs.enabled = true;
    config_.ovs.remote = "unix:/fake/db.sock";
    config_.placement.stateFile = stateFile_;
    config_.placement.resyncInterval = 0s;
    config_.placement.capabilityTraits = {};
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    sink_->set_pattern("[%n] %v");
    for (const char* component : {"agent", "roles", "ovsdb", "placement", "k8s"})
      core::logger(component)->sinks().push_back(sink_);
    chassis_ = std::make_unique<ovsdb::ChassisReconciler>(io_, clock_, config_.ovs, metrics_,
                                                          health_, nullptr, ovsdb_.factory());
    chassis_->setHostNics(std::make_unique<QuietNics>());
    placement_ = std::make_unique<placement::Reconciler>(io_, clock_, placementApi_,
                                                         config_.placement, metrics_, health_);
  }
  ~PlanTest() override {
    for (const char* component : {"agent", "roles", "ovsdb", "placement", "k8s"}) {
      auto& sinks = core::logger(component)->sinks();
      sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    }
    std::filesystem::remove(stateFile_);
  }

  // A compute and network node with one bad input per planner.
  static k8s::NodeInfo node() {
    k8s::NodeInfo n;
    n.name = "hv-1";
    n.uid = "0b6c7d9e-1111-4222-8333-444455556666";
    n.labels = {{"node-role.openkeel.io/compute", ""},
                {"node-role.openkeel.io/network", ""},
                {"node-role.openkeel.io/containers", "yes"}};
    n.annotations = {{ovsdb::kBridgeMappingsKey, "physnet1:br-ex,physnet2"},
                     {"placement.openkeel.io/cpu-allocation-ratio", "lots"}};
    n.allocatable = {{"cpu", "16"}, {"memory", "64Gi"}};
    return n;
  }
  static k8s::PodInfo pod(const std::string& name, const std::string& cpu) {
    k8s::PodInfo p;
    p.namespace_ = "infra";
    p.name = name;
    p.nodeName = "hv-1";
    p.phase = "Running";
    p.containers.push_back({"main", {{"cpu", cpu}, {"memory", "1Gi"}}, ""});
    return p;
  }

  // One input change as the agent handles it: plan once, hand each applier its section, and
  // let the appliers run (a second of simulated time: every timer due in it fires).
  const Plan& change(const k8s::NodeInfo& n, const std::vector<k8s::PodInfo>& pods) {
    const Plan& plan = tracker_.update({n, pods});
    handPlan(plan, n, true, appliers());
    clock_.runFor(1s);
    return plan;
  }
  PlanAppliers appliers() { return {chassis_.get(), placement_.get(), nullptr}; }

  // How many log lines carry `message`, and under which component each did.
  std::vector<std::string> loggedUnder(const std::string& message) const {
    std::vector<std::string> out;
    std::istringstream lines(log_.str());
    for (std::string line; std::getline(lines, line);)
      if (line.find(message) != std::string::npos)
        out.push_back(line.substr(0, line.find(']') + 1));
    return out;
  }

  AgentConfig config_;
  std::string stateFile_ =
      ::testing::TempDir() + "plan-test-state-" + std::to_string(::getpid()) + ".json";
  std::ostringstream log_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  boost::asio::io_context io_;
  okna::testing::ManualClock clock_{io_};
  okna::testing::FakeOvsdb ovsdb_;
  okna::testing::FakePlacement placementApi_;
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  std::unique_ptr<ovsdb::ChassisReconciler> chassis_;
  std::unique_ptr<placement::Reconciler> placement_;
  PlanTracker tracker_{config_};
};

TEST_F(PlanTest, EachWarningIsLoggedOncePerInputChangeUnderItsComponent) {
  const Plan first = change(node(), {pod("a", "1")});
  ASSERT_EQ(first.warnings.size(), 3u);
  ASSERT_TRUE(placementApi_.providers.count(node().uid)) << "Placement applied its section";
  ASSERT_FALSE(ovsdb_.submitted().empty()) << "the chassis applied its section";
  std::map<std::string, std::string> component;
  for (const auto& w : first.warnings) component[w.message] = "[" + w.component + "]";
  for (const auto& w : first.warnings)
    EXPECT_EQ(loggedUnder(w.message), std::vector<std::string>{component[w.message]}) << log_.str();
  EXPECT_EQ(component.size(), 3u);

  // A pod change: the same warnings hold, and none is said again by anyone.
  change(node(), {pod("a", "1"), pod("b", "2")});
  for (const auto& w : first.warnings)
    EXPECT_EQ(loggedUnder(w.message).size(), 1u) << w.message << "\n" << log_.str();

  // The mappings are fixed, then broken again: said once more, only that one.
  k8s::NodeInfo fixed = node();
  fixed.annotations[ovsdb::kBridgeMappingsKey] = "physnet1:br-ex";
  EXPECT_EQ(change(fixed, {pod("a", "1")}).warnings.size(), 2u);
  change(node(), {pod("a", "1")});
  for (const auto& w : first.warnings)
    EXPECT_EQ(loggedUnder(w.message).size(), w.component == "ovsdb" ? 2u : 1u) << w.message << "\n"
                                                                               << log_.str();
}

TEST_F(PlanTest, AppliersShowTheDrainAndTheReservationHeldBackByTheStep) {
  ovsdb_.setChassis("chassis-1");
  k8s::NodeInfo gateway = node();
  gateway.annotations[ovsdb::kBridgeMappingsKey] = "physnet1:br-ex";
  change(gateway, {pod("a", "1")});
  ovsdb_.setGatewayPorts({"cr-lrp-ext"});
  clock_.runFor(1s);
  nlohmann::json view = appliersJson(appliers(), true);
  EXPECT_EQ(view["ovs"]["drain"]["inProgress"], false) << view.dump();
  EXPECT_EQ(view["placement"]["mode"], "manage");
  EXPECT_EQ(view["placement"]["heldBackByStep"], false);

  // The network role and its mappings go while a router gateway is bound here; a pod adds 100m
  // of CPU.
  k8s::NodeInfo plain = gateway;
  plain.labels.erase("node-role.openkeel.io/network");
  plain.annotations.erase(ovsdb::kBridgeMappingsKey);
  const Plan& plan = change(plain, {pod("a", "1"), pod("b", "100m")});
  // What is wanted: no network; what the chassis applier does: keep it while draining.
  EXPECT_EQ(toDryRunJson(plan.chassis)["external_ids"].count("ovn-bridge-mappings"), 0u);
  EXPECT_EQ(ovsdb_.externalId("ovn-bridge-mappings"), "physnet1:br-ex");
  view = appliersJson(appliers(), true);
  EXPECT_EQ(view["ovs"]["drain"]["inProgress"], true) << view.dump();
  EXPECT_EQ(view["ovs"]["drain"]["gatewayPorts"], nlohmann::json({"cr-lrp-ext"}));
  // What is wanted: 2 VCPU reserved; what Placement keeps: 1, within the step.
  ASSERT_TRUE(plan.placement);
  EXPECT_EQ(plan.placement->root.inventories.at("VCPU").reserved, 2);
  EXPECT_EQ(view["placement"]["heldBackByStep"], true) << view.dump();
  EXPECT_EQ(view["placement"]["heldBack"]["VCPU"], nlohmann::json({{"wanted", 2}, {"sent", 1}}));
  EXPECT_EQ(placementApi_.providers.at(node().uid).inventories.at("VCPU").reserved, 1);
  EXPECT_EQ(view["placement"]["waitingForPods"], false);
}

}  // namespace
}  // namespace okna::agent
