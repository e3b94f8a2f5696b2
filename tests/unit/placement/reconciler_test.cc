#include "placement/reconciler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/fakes/fake_http_client.h"
#include "tests/fakes/manual_clock.h"
#include "tests/fakes/placement_plan.h"
#include "tests/unit/placement/fake_nova.h"
#include "tests/unit/placement/fake_placement.h"

namespace okna::placement {
namespace {

using namespace std::chrono_literals;
constexpr const char* kUid = "0b6c7d9e-1111-4222-8333-444455556666";

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() {
    config_.debounce = 200ms;
    config_.stateFile = stateFile_;
    config_.resyncInterval = std::chrono::seconds(0);
    config_.capabilityTraits = {};
    config_.backoff.initial = 5ms;
    config_.backoff.max = 20ms;
    node_.name = "cmp-1";
    node_.uid = kUid;
    node_.allocatable = {{"cpu", "16"}, {"memory", "64Gi"}, {"hugepages-1Gi", "4Gi"}};
  }
  ~ReconcilerTest() override { std::filesystem::remove(stateFile_); }

  std::unique_ptr<Reconciler> make() {
    auto r = std::make_unique<Reconciler>(io_, clock_, fake_, config_, metrics_, health_);
    r->setActive(true);
    return r;
  }
  // Lives through simulated time (every timer due fires) until `cond` holds, at most a minute.
  bool runUntil(const std::function<bool()>& cond) { return clock_.runFor(60s, cond); }
  // Lives through exactly `d` of simulated time (past any debounce window), for "nothing
  // happens" checks: every timer due in it has fired.
  void settle(std::chrono::milliseconds d = 400ms) { clock_.runFor(d); }
  k8s::PodInfo pod(const std::string& name, const std::string& cpu, const std::string& memory) {
    k8s::PodInfo p;
    p.namespace_ = "infra";
    p.name = name;
    p.nodeName = "cmp-1";
    p.phase = "Running";
    p.containers.push_back({"main", {{"cpu", cpu}, {"memory", memory}}, ""});
    return p;
  }
  const testing::FakePlacement::Entry& root() { return fake_.providers.at(kUid); }
  double metric(const std::string& line) {
    const std::string text = metrics_.render();
    // A sample line, not the "# HELP" one.
    auto pos = text.find("\n" + line + " ");
    return pos == std::string::npos ? 0 : std::stod(text.substr(pos + line.size() + 2));
  }

  boost::asio::io_context io_;
  testing::ManualClock clock_{io_};
  testing::FakePlacement fake_;
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  PlacementConfig config_;
  k8s::NodeInfo node_;
  std::string stateFile_ =
      ::testing::TempDir() + "placement-state-" + std::to_string(::getpid()) + ".json";
};

TEST_F(ReconcilerTest, FirstPushCreatesTheTree) {
  auto r = make();
  node_.labels["trait.openkeel.io/CUSTOM_LAB"] = "";
  node_.labels["cpu-feature.node.kubevirt.io/avx"] = "true";
  // The agent hands no Placement section before the pods have synced: the node alone sends
  // nothing.
  r->setNode(node_.name, node_.uid);
  settle(50ms);
  EXPECT_EQ(fake_.total(), 0) << "nothing is sent without the plan's Placement section";
  EXPECT_FALSE(health_.ready());

  okna::testing::planAndUpdate(*r, node_, {pod("a", "1500m", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_EQ(root().provider.name, "cmp-1");
  EXPECT_EQ(root().inventories.at("VCPU"), (Inventory{16, 2, 1, 16, 1, 4.0}));
  EXPECT_EQ(root().inventories.at("MEMORY_MB"), (Inventory{65536, 1024, 1, 65536, 1, 1.0}));
  EXPECT_EQ(root().traits, (Traits{"COMPUTE_NODE", "CUSTOM_LAB", "HW_CPU_X86_AVX"}));
  ASSERT_EQ(fake_.providers.size(), 2u);
  const auto& child =
      std::find_if(fake_.providers.begin(), fake_.providers.end(), [](const auto& kv) {
        return kv.first != kUid;
      })->second;
  EXPECT_EQ(child.provider.parentUuid, kUid);
  EXPECT_EQ(child.inventories.at("MEMORY_MB").total, 4096);
  EXPECT_EQ(child.traits, (Traits{"CUSTOM_HUGEPAGES_1G"}));
  EXPECT_TRUE(health_.ready());
  EXPECT_EQ(fake_.calls["inventories"], 0) << "a provider just created needs no read";
}

TEST_F(ReconcilerTest, SteadyStateSendsNothing) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  const int before = fake_.total();
  for (int i = 0; i < 20; ++i) okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  settle();
  EXPECT_EQ(fake_.total(), before);
}

TEST_F(ReconcilerTest, BurstOfPodChangesIsOneWrite) {
  auto r = make();
  std::vector<k8s::PodInfo> pods{pod("base", "1", "1Gi")};
  okna::testing::planAndUpdate(*r, node_, pods);
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  const int puts = fake_.calls["putInventories"];
  for (int i = 0; i < 50; ++i) {
    pods.push_back(pod("job-" + std::to_string(i), "100m", "64Mi"));
    okna::testing::planAndUpdate(*r, node_, pods);
  }
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 2; }));
  settle();
  EXPECT_EQ(fake_.calls["putInventories"], puts + 1);
  EXPECT_EQ(root().inventories.at("VCPU").reserved, 6);  // 1 + 5.0
  EXPECT_EQ(root().inventories.at("MEMORY_MB").reserved, 1024 + 50 * 64);
  EXPECT_GE(metric("okna_placement_changes_skipped_total{reason=\"debounced\"}"), 49);
}

TEST_F(ReconcilerTest, AReservationMoveWaitsForExactlyTheDebounceWindow) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  const int puts = fake_.calls["putInventories"];
  okna::testing::planAndUpdate(*r, node_, {pod("a", "3", "2Gi")});
  EXPECT_EQ(r->debugJson()["dueInMs"], 200);
  // Every timer due in the window has fired: the write is held, not lost and not sent early.
  settle(config_.debounce - 1ms);
  EXPECT_EQ(fake_.calls["putInventories"], puts) << "sent before the debounce window closed";
  EXPECT_TRUE(r->busy()) << "the change must still be pending";
  // A later change inside the window does not extend it.
  okna::testing::planAndUpdate(*r, node_, {pod("a", "4", "2Gi")});
  settle(1ms);
  EXPECT_EQ(fake_.calls["putInventories"], puts + 1);
  EXPECT_EQ(root().inventories.at("VCPU").reserved, 4);
  EXPECT_FALSE(r->busy());
}

TEST_F(ReconcilerTest, ChangeBelowStepIsNotSent) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  const int before = fake_.total();
  // +100 MiB (< 256) and the same CPUs once rounded.
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi"), pod("b", "0", "100Mi")});
  settle();
  EXPECT_EQ(fake_.total(), before);
  EXPECT_EQ(root().inventories.at("MEMORY_MB").reserved, 1024);
  EXPECT_EQ(metric("okna_placement_changes_skipped_total{reason=\"below_step\"}"), 1);
  // /debug/plan's view: what is wanted, and what the step keeps sent instead.
  const nlohmann::json view = r->debugJson();
  EXPECT_EQ(view["heldBackByStep"], true) << view.dump();
  EXPECT_EQ(view["heldBack"]["MEMORY_MB"], nlohmann::json({{"wanted", 1124}, {"sent", 1024}}));
  EXPECT_FALSE(view["heldBack"].contains("VCPU"));
  // Exactly the step (+256 MiB): the seed says "more than", so still nothing.
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi"), pod("b", "0", "256Mi")});
  settle();
  EXPECT_EQ(fake_.total(), before);
  EXPECT_EQ(root().inventories.at("MEMORY_MB").reserved, 1024);
  // Another +44 MiB: 300 MiB since the last value sent, so it goes out.
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi"), pod("b", "0", "300Mi")});
  ASSERT_TRUE(runUntil([&] { return root().inventories.at("MEMORY_MB").reserved == 1324; }));
}

TEST_F(ReconcilerTest, NodeChangesSkipTheStepAndTheWindow) {
  config_.debounce = std::chrono::hours(1);
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 1; }));
  node_.allocatable["cpu"] = "12";
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return root().inventories.at("VCPU").total == 12; }));
  node_.unschedulable = false;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return root().traits == Traits{"COMPUTE_NODE"}; }));
}

TEST_F(ReconcilerTest, ConcurrentWriterIsRetried) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  // A VM lands (generation moves), then the reservation changes: the PUT meets a 409.
  fake_.allocate(kUid, "VCPU", 4);
  fake_.concurrentWriters = 2;
  okna::testing::planAndUpdate(*r, node_, {pod("a", "3", "2Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 2; }));
  EXPECT_EQ(root().inventories.at("VCPU").reserved, 3);
  EXPECT_EQ(root().inventories.at("MEMORY_MB").reserved, 2048);
  EXPECT_EQ(r->counters().conflicts, 2u);
  EXPECT_EQ(r->failedPasses(), 0u);
  EXPECT_EQ(metric("okna_placement_conflicts_total"), 2);
}

TEST_F(ReconcilerTest, PlacementDownThenBack) {
  auto r = make();
  fake_.down = true;
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->failedPasses() >= 3; }));
  EXPECT_FALSE(health_.ready());
  fake_.down = false;
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_EQ(root().inventories.at("VCPU").reserved, 1);
  EXPECT_TRUE(health_.ready());
  // Down again while pods change: the latest desired state is what arrives afterwards.
  fake_.down = true;
  okna::testing::planAndUpdate(*r, node_, {pod("a", "5", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->failedPasses() >= 5; }));
  okna::testing::planAndUpdate(*r, node_, {pod("a", "7", "1Gi")});
  fake_.down = false;
  ASSERT_TRUE(runUntil([&] { return root().inventories.at("VCPU").reserved == 7; }));
}

TEST_F(ReconcilerTest, TraitOwnershipSurvivesRestart) {
  auto r = make();
  node_.labels = {{"trait.openkeel.io/CUSTOM_A", ""}, {"trait.openkeel.io/CUSTOM_B", ""}};
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  // An operator adds a trait, and one the agent also wants.
  fake_.catalog.insert("CUSTOM_OPERATOR");
  fake_.providers.at(kUid).traits.insert("CUSTOM_OPERATOR");
  fake_.providers.at(kUid).traits.insert("HW_CPU_X86_AVX");
  ++fake_.providers.at(kUid).provider.generation;
  node_.labels.erase("trait.openkeel.io/CUSTOM_A");
  node_.labels["cpu-feature.node.kubevirt.io/avx"] = "true";
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return !root().traits.count("CUSTOM_A"); }));
  EXPECT_EQ(root().traits,
            (Traits{"COMPUTE_NODE", "CUSTOM_B", "CUSTOM_OPERATOR", "HW_CPU_X86_AVX"}));

  // Restart: a new reconciler reads what it owns from the state file.
  r.reset();
  r = make();
  node_.labels.clear();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_EQ(root().traits, (Traits{"COMPUTE_NODE", "CUSTOM_OPERATOR", "HW_CPU_X86_AVX"}))
      << "CUSTOM_B was the agent's; AVX was set by the operator first, so it stays";
}

TEST_F(ReconcilerTest, UnknownStandardTraitIsSkipped) {
  auto r = make();
  node_.labels = {{"trait.openkeel.io/HW_GPU_NOT_A_TRAIT", ""},
                  {"cpu-feature.node.kubevirt.io/sse4.2", "true"}};
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_EQ(root().traits, (Traits{"COMPUTE_NODE", "HW_CPU_X86_SSE42"}));
}

TEST_F(ReconcilerTest, ProviderWithTheNameButAnotherUuidIsReportedNotAdopted) {
  fake_.providers["old-uuid"].provider = {"old-uuid", "cmp-1", "", "old-uuid", 7};
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->failedPasses() >= 2; }));
  EXPECT_EQ(fake_.providers.size(), 1u);
  EXPECT_EQ(fake_.calls["createProvider"], 0);
  EXPECT_EQ(fake_.calls["deleteProvider"], 0);
  auto checks = health_.readiness();
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].ok);
  EXPECT_NE(checks[0].detail.find("already exists with uuid old-uuid"), std::string::npos)
      << checks[0].detail;
}

TEST_F(ReconcilerTest, OldPlacementIsAClearError) {
  fake_.version = "1.17";
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->failedPasses() >= 1; }));
  EXPECT_NE(health_.readiness()[0].detail.find("microversions up to 1.17; the agent needs 1.26"),
            std::string::npos);
}

TEST_F(ReconcilerTest, LosingTheRoleKeepsTheProvider) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  const auto inventories = root().inventories;
  r->setActive(false);
  ASSERT_TRUE(runUntil([&] { return r->closed(); }));
  EXPECT_TRUE(health_.readiness().empty());
  EXPECT_EQ(fake_.providers.size(), 2u) << "losing the role never deletes the provider";
  EXPECT_EQ(root().inventories, inventories) << "nor changes its inventories";
}

TEST_F(ReconcilerTest, RemovedPageSizeDeletesItsChild) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  ASSERT_EQ(fake_.providers.size(), 2u);
  node_.allocatable.erase("hugepages-1Gi");
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return fake_.providers.size() == 1; }));
}

// Issue 10, "the cache must not lie": a 409 on inventories means the provider changed in ways the
// agent did not see; its trait view must be re-read too (here: an operator removed the cordon's
// COMPUTE_STATUS_DISABLED, and the agent must put it back with the next write).
TEST_F(ReconcilerTest, ConflictForgetsEverythingKnownOfTheProvider) {
  node_.unschedulable = true;
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  ASSERT_TRUE(root().traits.count("COMPUTE_STATUS_DISABLED"));
  fake_.providers.at(kUid).traits.erase("COMPUTE_STATUS_DISABLED");
  ++fake_.providers.at(kUid).provider.generation;
  okna::testing::planAndUpdate(*r, node_, {pod("a", "3", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 2; }));
  EXPECT_EQ(root().inventories.at("VCPU").reserved, 3);
  EXPECT_EQ(r->counters().conflicts, 1u);
  EXPECT_TRUE(root().traits.count("COMPUTE_STATUS_DISABLED"))
      << "the trait view older than the 409 was trusted";
}

TEST_F(ReconcilerTest, RegainingTheRoleStartsFromAFreshRead) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  r->setActive(false);
  ASSERT_TRUE(runUntil([&] { return r->closed(); }));
  // While the role is away, someone deletes an inventory class.
  fake_.providers.at(kUid).inventories.erase("MEMORY_MB");
  ++fake_.providers.at(kUid).provider.generation;
  r->setActive(true);
  ASSERT_TRUE(runUntil([&] { return root().inventories.count("MEMORY_MB") == 1; }));
}

// Issue 10, "a pass cannot jam": a child that Placement refuses to delete (VMs still use its
// hugepages) must not hold back the root's reservations and cordon state.
TEST_F(ReconcilerTest, RefusedChildDeletionDoesNotHoldTheRootBack) {
  auto r = make();
  std::vector<std::string> events;
  r->setEventSink([&](const std::string& type, const std::string& reason, const std::string&) {
    events.push_back(type + " " + reason);
  });
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  const std::string child = uuid5(std::string(kUid) + "/hugepages-1Gi");
  ASSERT_TRUE(fake_.providers.count(child));
  fake_.inUse.insert(child);
  node_.allocatable.erase("hugepages-1Gi");
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {pod("a", "4", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 1; }));
  EXPECT_EQ(root().inventories.at("VCPU").reserved, 4);
  EXPECT_TRUE(fake_.providers.count(child));
  // Retried on its own: the refusal stays visible, the node stays ready.
  ASSERT_TRUE(runUntil([&] { return fake_.calls["deleteProvider"] >= 3; }));
  EXPECT_TRUE(health_.ready());
  ASSERT_EQ(health_.readiness().size(), 1u);
  EXPECT_NE(health_.readiness()[0].detail.find("cannot delete cmp-1:hugepages-1Gi"),
            std::string::npos)
      << health_.readiness()[0].detail;
  EXPECT_EQ(metric("okna_placement_deletions_refused"), 1);
  EXPECT_EQ(events, std::vector<std::string>{"Warning PlacementProviderInUse"}) << "once";
  // The VMs leave: the child goes, and so does the detail.
  fake_.inUse.clear();
  ASSERT_TRUE(runUntil([&] { return !fake_.providers.count(child); }));
  ASSERT_TRUE(runUntil(
      [&] { return health_.readiness()[0].detail.find("cannot delete") == std::string::npos; }));
  EXPECT_EQ(r->failedPasses(), 0u);
}

TEST_F(ReconcilerTest, AnExceptionFailsThePassNotTheWorker) {
  fake_.throwNext["providersInTree"] = 1;
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_EQ(r->failedPasses(), 1u);
  EXPECT_EQ(metric("okna_placement_worker_errors_total"), 1);
  // And it keeps working afterwards.
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 1; }));
}

TEST_F(ReconcilerTest, ResyncSurvivesTheRoleGoingAndComingBack) {
  config_.resyncInterval = std::chrono::seconds(1);
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  r->setActive(false);
  ASSERT_TRUE(runUntil([&] { return r->closed(); }));
  r->setActive(true);
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 3; }));
  // Behind the agent's back, with no trigger of its own: only a resync repairs it.
  fake_.providers.at(kUid).inventories.erase("VCPU");
  ++fake_.providers.at(kUid).provider.generation;
  ASSERT_TRUE(runUntil([&] { return root().inventories.count("VCPU") == 1; }));
}

// A pass holds references into the syncer's view of the providers across its awaits. A role
// change (or the resync timer) while a request is in flight drops that view only once the pass
// has ended: dropping it under the suspended pass was a use after free (seen under ASan in
// PlacementIT.WipedDatabaseIsRebuiltAtTheNextResync).
TEST_F(ReconcilerTest, TheProviderViewIsDroppedOnlyAfterThePassInFlight) {
  auto r = make();
  node_.labels["trait.openkeel.io/CUSTOM_LAB"] = "";
  fake_.during["putProviderTraits"] = [&] { r->setActive(false); };
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->closed(); }));
  EXPECT_EQ(root().traits.count("COMPUTE_STATUS_DISABLED"), 1u);
  r->setActive(true);
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 0; }));
  EXPECT_EQ(root().traits.count("CUSTOM_LAB"), 1u);
}

TEST_F(ReconcilerTest, FailedPassesKeepTheTraitCatalog) {
  fake_.failNext["putInventories"] = 3;
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_EQ(r->failedPasses(), 3u);
  EXPECT_EQ(fake_.calls["allTraits"], 1) << "GET /traits (~9 KB) is not a retry's business";
}

TEST_F(ReconcilerTest, FailureAfterTheRoleWentLeavesNoReadinessEntry) {
  auto r = make();
  fake_.down = true;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->failedPasses() >= 1; }));
  ASSERT_EQ(health_.readiness().size(), 1u);
  r->setActive(false);
  const unsigned failed = r->failedPasses();
  ASSERT_TRUE(runUntil([&] { return r->failedPasses() >= failed + 2; }));
  EXPECT_TRUE(health_.readiness().empty());
  EXPECT_TRUE(health_.ready());
}

TEST_F(ReconcilerTest, RecreatedNodeShowsInReadinessWhenever) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_TRUE(health_.ready());
  // The Node is deleted and re-joins with a new uid while the old provider still exists.
  node_.uid = "99999999-1111-4222-8333-444455556666";
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->failedPasses() >= 1; }));
  EXPECT_FALSE(health_.ready());
  EXPECT_NE(health_.readiness()[0].detail.find("already exists with uuid " + std::string(kUid)),
            std::string::npos);
}

TEST_F(ReconcilerTest, WithoutCredentialsTheRoleAloneDecidesReadiness) {
  ::unsetenv("OS_CLOUD");
  testing::FakeHttpClient http;
  Reconciler r(io_, clock_, http, config_, metrics_, health_);
  r.setActive(true);
  r.setActive(true);
  ASSERT_EQ(health_.readiness().size(), 1u);
  EXPECT_FALSE(health_.ready());
  EXPECT_NE(health_.readiness()[0].detail.find("no credentials"), std::string::npos);
  r.setActive(false);
  EXPECT_TRUE(health_.readiness().empty()) << "the compute role went, and so must its check";
  EXPECT_TRUE(health_.ready());
  EXPECT_TRUE(http.all().empty());
}

// Issue 10, "the role closes the node" (seed 000 § 4.1).
TEST_F(ReconcilerTest, LosingTheRoleDisablesTheProviderUntilItComesBack) {
  auto r = make();
  node_.labels["trait.openkeel.io/CUSTOM_LAB"] = "";
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_FALSE(root().traits.count("COMPUTE_STATUS_DISABLED"));
  r->setActive(false);
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 1; }));
  EXPECT_TRUE(root().traits.count("CUSTOM_LAB")) << "closing changes nothing else";
  // Cordoned, then uncordoned, while the role is away: the node stays closed.
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {});
  node_.unschedulable = false;
  okna::testing::planAndUpdate(*r, node_, {});
  settle(100ms);
  EXPECT_TRUE(root().traits.count("COMPUTE_STATUS_DISABLED"));
  // The role returns on an uncordoned node: open again.
  r->setActive(true);
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 0; }));
  // The role returns on a cordoned node: stays closed, as the cordon says.
  r->setActive(false);
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 1; }));
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {});
  r->setActive(true);
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() >= 5; }));
  settle(50ms);
  EXPECT_TRUE(root().traits.count("COMPUTE_STATUS_DISABLED"));
  node_.unschedulable = false;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 0; }));
}

TEST_F(ReconcilerTest, StartingWithoutTheRoleClosesAnExistingProviderOnly) {
  {
    auto r = std::make_unique<Reconciler>(io_, clock_, fake_, config_, metrics_, health_);
    r->setActive(false);
    okna::testing::planAndUpdate(*r, node_, {});
    ASSERT_TRUE(runUntil([&] { return r->closed(); }));
    EXPECT_TRUE(fake_.providers.empty()) << "no provider is created for a node without the role";
    EXPECT_EQ(fake_.writes(), 0);
    EXPECT_TRUE(health_.readiness().empty());
  }
  fake_.providers[kUid].provider = {kUid, "cmp-1", "", kUid, 3};
  fake_.providers[kUid].traits = {"HW_CPU_X86_AVX"};
  auto r = std::make_unique<Reconciler>(io_, clock_, fake_, config_, metrics_, health_);
  r->setActive(false);
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->closed(); }));
  EXPECT_EQ(root().traits, (Traits{"COMPUTE_STATUS_DISABLED", "HW_CPU_X86_AVX"}));
  // At steady state a closed node costs nothing.
  const int before = fake_.total();
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  settle(100ms);
  EXPECT_EQ(fake_.total(), before);
}

// Issue 10, "who owns the allocation ratio": Nova's rule.
TEST_F(ReconcilerTest, RatioSetInPlacementIsKeptUnlessConfigured) {
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {pod("a", "1", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_DOUBLE_EQ(root().inventories.at("VCPU").allocationRatio, 4.0) << "initial, new class";
  // An operator sets 8 by hand; the next write (a reservation) keeps it.
  fake_.providers.at(kUid).inventories.at("VCPU").allocationRatio = 8;
  ++fake_.providers.at(kUid).provider.generation;
  okna::testing::planAndUpdate(*r, node_, {pod("a", "3", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return root().inventories.at("VCPU").reserved == 3; }));
  EXPECT_DOUBLE_EQ(root().inventories.at("VCPU").allocationRatio, 8);
  // A configured ratio is enforced.
  r.reset();
  config_.cpuAllocationRatio = 2;
  r = make();
  okna::testing::planAndUpdate(*r, node_, {pod("a", "3", "1Gi")});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  EXPECT_DOUBLE_EQ(root().inventories.at("VCPU").allocationRatio, 2);
}

// A device pool's reservation follows the non-VM pods like the root's: debounced, and sent
// for any move (a step of 1); its total follows allocatable at once.
TEST_F(ReconcilerTest, DevicePoolReservationIsDebouncedItsTotalIsNot) {
  config_.devices = {{"intel.com/sriov_physnet1", "SRIOV_NET_VF", "", {}, {}}};
  node_.allocatable["intel.com/sriov_physnet1"] = "8";
  auto r = make();
  k8s::PodInfo dpdk = pod("dpdk", "1", "1Gi");
  okna::testing::planAndUpdate(*r, node_, {dpdk});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  const std::string vf = childUuid(kUid, "intel.com/sriov_physnet1");
  ASSERT_TRUE(fake_.providers.count(vf));
  EXPECT_EQ(fake_.providers.at(vf).inventories.at("SRIOV_NET_VF"), (Inventory{8, 0, 1, 8, 1, 1.0}));
  const int puts = fake_.calls["putInventories"];
  dpdk.containers[0].requests["intel.com/sriov_physnet1"] = "1";
  okna::testing::planAndUpdate(*r, node_, {dpdk});
  settle(config_.debounce - 1ms);
  EXPECT_EQ(fake_.calls["putInventories"], puts) << "sent before the debounce window closed";
  settle(1ms);
  EXPECT_EQ(fake_.providers.at(vf).inventories.at("SRIOV_NET_VF").reserved, 1);
  node_.allocatable["intel.com/sriov_physnet1"] = "6";
  okna::testing::planAndUpdate(*r, node_, {dpdk});
  settle(1ms);
  EXPECT_EQ(fake_.providers.at(vf).inventories.at("SRIOV_NET_VF").total, 6) << "at once";
  const int steady = fake_.total();
  for (int i = 0; i < 5; ++i) okna::testing::planAndUpdate(*r, node_, {dpdk});
  settle();
  EXPECT_EQ(fake_.total(), steady);
}

// A pool that leaves allocatable while VMs hold some of its devices: its total goes down to what
// is allocated (closed to new claims), it is reported, and it is deleted once they are gone.
TEST_F(ReconcilerTest, RemovedPoolShrinksToItsAllocationsThenGoes) {
  config_.devices = {{"nvidia.com/GA102GL_A10", "PGPU", "gpu0", {}, {}}};
  node_.allocatable["nvidia.com/GA102GL_A10"] = "4";
  auto r = make();
  std::vector<std::string> events;
  r->setEventSink([&](const std::string&, const std::string& reason, const std::string&) {
    events.push_back(reason);
  });
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  const std::string gpu = childUuid(kUid, "nvidia.com/GA102GL_A10");
  fake_.allocate(gpu, "PGPU", 1);
  fake_.inUse.insert(gpu);
  node_.allocatable.erase("nvidia.com/GA102GL_A10");
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 1; }));
  ASSERT_TRUE(runUntil([&] { return fake_.providers.at(gpu).inventories.at("PGPU").total == 1; }));
  EXPECT_EQ(fake_.providers.at(gpu).inventories.at("PGPU"), (Inventory{1, 1, 1, 1, 1, 1.0}));
  ASSERT_TRUE(runUntil([&] {
    return health_.readiness()[0].detail.find(
               "cannot delete cmp-1:gpu0 (retried): in use (PGPU 1)") != std::string::npos;
  })) << health_.readiness()[0].detail;
  EXPECT_EQ(events, std::vector<std::string>{"PlacementProviderInUse"});
  // Retried with backoff, not in a loop: a bounded number of attempts in a minute.
  settle(2s);
  EXPECT_LT(fake_.calls["deleteProvider"], 2000 / 5);
  fake_.inUse.clear();
  fake_.providers.at(gpu).usages.clear();
  ASSERT_TRUE(runUntil([&] { return !fake_.providers.count(gpu); }));
  EXPECT_EQ(r->failedPasses(), 0u);
}

// The cordon still reaches Placement when a class must leave the root while a VM uses it.
TEST_F(ReconcilerTest, ClassInUseIsKeptClosedAndTraitsStillGoOut) {
  node_.annotations["placement.openkeel.io/dedicated-cpus"] = "4";
  auto r = make();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return r->successfulPasses() == 1; }));
  fake_.allocate(kUid, "PCPU", 3);
  node_.annotations.clear();
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 1; }));
  EXPECT_EQ(root().inventories.at("PCPU"), (Inventory{3, 3, 1, 3, 1, 1.0}));
  EXPECT_EQ(root().inventories.at("VCPU").total, 16);
  fake_.providers.at(kUid).usages.erase("PCPU");
  ASSERT_TRUE(runUntil([&] { return root().inventories.count("PCPU") == 0; }));
  EXPECT_EQ(r->failedPasses(), 0u);
}

// Hundreds of agents start at once: another one creates az-<zone> between this agent's list and
// its create. Nova's 409 means "read again and join".
TEST_F(ReconcilerTest, ZoneAggregateCreatedByAnotherAgentMeanwhileIsJoined) {
  testing::FakeNova nova;
  node_.labels["topology.kubernetes.io/zone"] = "a";
  auto r = std::make_unique<Reconciler>(io_, clock_, fake_, config_, metrics_, health_, &nova);
  r->setActive(true);
  nova.during["createAggregate"] = [&] { nova.make("az-a", "a").hosts.insert("cmp-2"); };
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(
      runUntil([&] { return nova.find("az-a") && nova.find("az-a")->hosts.count("cmp-1"); }));
  EXPECT_EQ(nova.aggregates_.size(), 1u) << "not duplicated";
  EXPECT_EQ(nova.calls["aggregates"], 2) << "read again after the 409";
  ASSERT_TRUE(runUntil([&] { return root().aggregates == std::set<std::string>{"agg-1"}; }));
  // Steady state: nothing more to Nova or Placement.
  const int novaCalls = nova.total();
  const int placementCalls = fake_.total();
  for (int i = 0; i < 5; ++i) okna::testing::planAndUpdate(*r, node_, {});
  settle();
  EXPECT_EQ(nova.total(), novaCalls);
  EXPECT_EQ(fake_.total(), placementCalls);
}

// No os-aggregates rights: reported (readiness detail, one Event), retried with backoff, and the
// cordon still goes out.
TEST_F(ReconcilerTest, ForbiddenAggregatesHoldNothingBack) {
  testing::FakeNova nova;
  nova.forbidden = true;
  node_.labels["topology.kubernetes.io/zone"] = "a";
  node_.unschedulable = true;
  std::vector<std::string> events;
  auto r = std::make_unique<Reconciler>(io_, clock_, fake_, config_, metrics_, health_, &nova);
  r->setEventSink([&](const std::string&, const std::string& reason, const std::string&) {
    events.push_back(reason);
  });
  r->setActive(true);
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(runUntil([&] { return root().traits.count("COMPUTE_STATUS_DISABLED") == 1; }));
  ASSERT_TRUE(runUntil([&] { return nova.calls["aggregates"] >= 3; })) << "retried";
  EXPECT_TRUE(health_.ready());
  EXPECT_NE(health_.readiness()[0].detail.find("availability zone not applied (retried): nova "
                                               "aggregates: HTTP 403"),
            std::string::npos)
      << health_.readiness()[0].detail;
  EXPECT_EQ(events, std::vector<std::string>{"AvailabilityZoneNotApplied"}) << "once";
  nova.forbidden = false;
  ASSERT_TRUE(
      runUntil([&] { return nova.find("az-a") && nova.find("az-a")->hosts.count("cmp-1"); }));
  ASSERT_TRUE(runUntil([&] {
    return health_.readiness()[0].detail.find("availability zone") == std::string::npos;
  }));
  EXPECT_EQ(r->failedPasses(), 0u);
}

}  // namespace
}  // namespace okna::placement
