// The reconciler against a REAL Placement (Debian placement-api 8.0, sqlite, noauth2), started
// by the fixture scripts on loopback. Each test uses its own node (fresh name and uid), so tests
// share one server. Waits are bounded loops on conditions, never timing assertions.

#include <gtest/gtest.h>

#include "tests/integration/placement/placement_it.h"

namespace okna::placement {
namespace {

TEST_F(PlacementIT, ProviderInventoriesAndNestedHugepages) {
  auto r = agent();
  okna::testing::planAndUpdate(
      *r, node_, {makePod(name_, "ds", "1500m", "1Gi"), makePod(name_, "vm", "2", "4Gi", true)});
  ASSERT_TRUE(pushed(*r, 1));
  EXPECT_TRUE(health_.ready());

  const json root = get("/resource_providers/" + uid_);
  EXPECT_EQ(root["name"], name_);
  EXPECT_EQ(root["uuid"], uid_);
  const json inv = inventories(uid_);
  EXPECT_EQ(inv["VCPU"]["total"], 16);
  EXPECT_EQ(inv["VCPU"]["reserved"], 2);
  EXPECT_EQ(inv["VCPU"]["max_unit"], 16);
  EXPECT_DOUBLE_EQ(inv["VCPU"]["allocation_ratio"].get<double>(), 4.0);
  EXPECT_EQ(inv["MEMORY_MB"]["total"], 65536) << "allocatable.memory as is: hugepages already out";
  EXPECT_EQ(inv["MEMORY_MB"]["reserved"], 1024 + 256) << "non-VM requests + one VM's overhead";
  EXPECT_FALSE(inv.contains("PCPU")) << "total 0 is omitted";

  const json tree = get("/resource_providers?in_tree=" + uid_)["resource_providers"];
  ASSERT_EQ(tree.size(), 3u);
  std::map<std::string, std::string> childTrait;
  for (const auto& p : tree) {
    if (p["uuid"] == uid_) continue;
    EXPECT_EQ(p["parent_provider_uuid"], uid_);
    const auto t = traits(p["uuid"]);
    ASSERT_EQ(t.size(), 1u);
    childTrait[p["name"]] = *t.begin();
    const json childInv = inventories(p["uuid"]);
    EXPECT_EQ(childInv["MEMORY_MB"]["total"], p["name"] == name_ + ":hugepages-1Gi" ? 4096 : 512);
  }
  EXPECT_EQ(childTrait[name_ + ":hugepages-1Gi"], "CUSTOM_HUGEPAGES_1G");
  EXPECT_EQ(childTrait[name_ + ":hugepages-2Mi"], "CUSTOM_HUGEPAGES_2M");
}

TEST_F(PlacementIT, BurstIsOnePutAndBelowStepIsNone) {
  auto r = agent();
  std::vector<k8s::PodInfo> pods{makePod(name_, "base", "1", "1Gi")};
  okna::testing::planAndUpdate(*r, node_, pods);
  ASSERT_TRUE(pushed(*r, 1));

  // Steady state: updates with nothing new send nothing.
  size_t mark = counting_.size();
  for (int i = 0; i < 10; ++i) okna::testing::planAndUpdate(*r, node_, pods);
  testing::runFor(io_, 500ms);
  EXPECT_EQ(counting_.size(), mark) << "steady state";

  // 50 pod changes inside one window: one PUT.
  mark = counting_.size();
  for (int i = 0; i < 50; ++i) {
    pods.push_back(makePod(name_, "job-" + std::to_string(i), "100m", "32Mi"));
    okna::testing::planAndUpdate(*r, node_, pods);
  }
  ASSERT_TRUE(pushed(*r, 2));
  EXPECT_EQ(counting_.count("PUT /resource_providers/" + uid_ + "/inventories", mark), 1u);
  EXPECT_EQ(inventories(uid_)["VCPU"]["reserved"], 6);
  EXPECT_EQ(inventories(uid_)["MEMORY_MB"]["reserved"], 1024 + 50 * 32);

  // A change below the step (64 MiB < 256 MiB, CPUs unchanged once rounded): nothing sent.
  mark = counting_.size();
  pods.push_back(makePod(name_, "small", "0", "64Mi"));
  okna::testing::planAndUpdate(*r, node_, pods);
  testing::runFor(io_, 600ms);
  EXPECT_EQ(counting_.size(), mark);
  EXPECT_EQ(inventories(uid_)["MEMORY_MB"]["reserved"], 1024 + 50 * 32);
}

TEST_F(PlacementIT, ConcurrentWriterConflictIsRetried) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "1", "1Gi")});
  ASSERT_TRUE(pushed(*r, 1));
  // A VM is scheduled on the node (as Nova would): the provider generation moves.
  const json alloc{{"allocations", {{uid_, {{"resources", {{"VCPU", 2}, {"MEMORY_MB", 2048}}}}}}},
                   {"project_id", testing::randomUuid()},
                   {"user_id", testing::randomUuid()},
                   {"consumer_generation", nullptr}};
  ASSERT_EQ(op_.call("PUT", "/allocations/" + testing::randomUuid(), alloc, "1.28").status, 204);
  const size_t mark = counting_.size();
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "3", "3Gi")});
  ASSERT_TRUE(pushed(*r, 2));
  EXPECT_GE(r->counters().conflicts, 1u);
  EXPECT_EQ(r->failedPasses(), 0u);
  EXPECT_EQ(counting_.count("PUT /resource_providers/" + uid_ + "/inventories", mark), 2u)
      << "409, then success";
  EXPECT_EQ(inventories(uid_)["VCPU"]["reserved"], 3);
  EXPECT_EQ(inventories(uid_)["MEMORY_MB"]["reserved"], 3072);
}

TEST_F(PlacementIT, TraitsFromLabelsAndTheOperatorsTraitSurvivesRestart) {
  node_.labels = {{"trait.openkeel.io/CUSTOM_IT_AGENT", ""},
                  {"cpu-feature.node.kubevirt.io/sse4.2", "true"},
                  {"cpu-feature.node.kubevirt.io/not-a-cpu-feature", "true"}};
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  EXPECT_EQ(traits(uid_),
            (std::set<std::string>{"COMPUTE_NODE", "CUSTOM_IT_AGENT", "HW_CPU_X86_SSE42"}));

  // An operator adds a trait of their own.
  ASSERT_EQ(op_.call("PUT", "/traits/CUSTOM_IT_OPERATOR").status / 100, 2);
  json t = get("/resource_providers/" + uid_ + "/traits");
  t["traits"].push_back("CUSTOM_IT_OPERATOR");
  ASSERT_EQ(op_.call("PUT", "/resource_providers/" + uid_ + "/traits", t).status, 200);

  // The node is cordoned, then the agent restarts.
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(
      testing::runUntil(io_, [&] { return traits(uid_).count("COMPUTE_STATUS_DISABLED") == 1; }));
  r.reset();
  r = agent();
  node_.labels.erase("trait.openkeel.io/CUSTOM_IT_AGENT");
  node_.unschedulable = false;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  EXPECT_EQ(traits(uid_),
            (std::set<std::string>{"COMPUTE_NODE", "CUSTOM_IT_OPERATOR", "HW_CPU_X86_SSE42"}));
}

TEST_F(PlacementIT, NodeRecreatedIsReportedNotAdopted) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  r.reset();
  // Same name, new uid: the old provider stays, nothing is created.
  const std::string newUid = testing::randomUuid();
  node_.uid = newUid;
  r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return r->failedPasses() >= 1; }));
  EXPECT_EQ(op_.call("GET", "/resource_providers/" + newUid).status, 404);
  EXPECT_EQ(op_.call("GET", "/resource_providers/" + uid_).status, 200);
  EXPECT_FALSE(health_.ready());
  EXPECT_NE(health_.readiness()[0].detail.find("already exists with uuid " + uid_),
            std::string::npos);
}

TEST_F(PlacementIT, PlacementStoppedAndRestartedAgentCatchesUp) {
  // A Placement of this test's own, so that stopping it does not disturb the others.
  const std::string dir = *dir_ + "/restart-" + name_;
  ASSERT_TRUE(testing::runScript(testing::kFixtures + "/start-placement.sh " + dir, dir + ".out"))
      << testing::readFile(dir + ".out");
  const std::string url = testing::readFile(dir + "/url");
  testing::Operator op(io_, http_, url);
  auto r = agent(url);
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "1", "1Gi")});
  ASSERT_TRUE(pushed(*r, 1));

  ASSERT_TRUE(testing::runScript(testing::kFixtures + "/stop.sh " + dir, dir + ".stop.out"));
  // Pods change while Placement is down: passes fail, the desired state is kept.
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "4", "5Gi")});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return r->failedPasses() >= 2; }));
  EXPECT_TRUE(health_.ready()) << "still ready: the first push happened, only updates are late";

  ASSERT_TRUE(testing::restartPlacement(dir));
  ASSERT_TRUE(testing::runUntil(
      io_, [&] { return r->successfulPasses() >= 2; }, 90s));
  const json inv =
      op.call("GET", "/resource_providers/" + uid_ + "/inventories").body["inventories"];
  EXPECT_EQ(inv["VCPU"]["reserved"], 4);
  EXPECT_EQ(inv["MEMORY_MB"]["reserved"], 5120);
  r.reset();
  testing::runScript(testing::kFixtures + "/stop.sh " + dir, dir + ".stop2.out");
}

// Issue 27 (fault matrix): Placement's database wiped and re-created empty (a restore gone wrong,
// a new deployment on the same endpoint). Nothing changes on the node, so only the periodic
// resync can notice: it must rebuild the provider, its inventories with the live reservation,
// its nested hugepage providers and the traits, without a restart of the agent.
TEST_F(PlacementIT, WipedDatabaseIsRebuiltAtTheNextResync) {
  const std::string dir = *dir_ + "/wiped-" + name_;
  ASSERT_TRUE(testing::runScript(testing::kFixtures + "/start-placement.sh " + dir, dir + ".out"))
      << testing::readFile(dir + ".out");
  const std::string url = testing::readFile(dir + "/url");
  testing::Operator op(io_, http_, url);
  config_.resyncInterval = 1s;
  node_.labels = {{"trait.openkeel.io/CUSTOM_IT_WIPED", ""}};
  auto r = agent(url);
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "2", "3Gi")});
  ASSERT_TRUE(pushed(*r, 1));
  const auto providers = [&] {
    return op.call("GET", "/resource_providers?in_tree=" + uid_).body["resource_providers"].size();
  };
  ASSERT_EQ(providers(), 3u) << "the node and its two hugepage providers";

  ASSERT_TRUE(testing::runScript(testing::kFixtures + "/stop.sh " + dir, dir + ".stop.out"));
  std::filesystem::remove(dir + "/placement.db");
  ASSERT_TRUE(testing::runScript(
      "placement-manage --config-file " + dir + "/placement.conf db sync", dir + ".sync.out"))
      << testing::readFile(dir + ".sync.out");
  ASSERT_TRUE(testing::restartPlacement(dir));
  ASSERT_TRUE(testing::runUntil(
      io_,
      [&] {
        const auto got = op.call("GET", "/resource_providers/" + uid_ + "/traits");
        return got.status == 200 && got.body["traits"].size() == 2 && providers() == 3;
      },
      60s))
      << "not rebuilt: " << op.call("GET", "/resource_providers?in_tree=" + uid_).body.dump();
  const json inv =
      op.call("GET", "/resource_providers/" + uid_ + "/inventories").body["inventories"];
  EXPECT_EQ(inv["VCPU"]["reserved"], 2);
  EXPECT_EQ(inv["MEMORY_MB"]["reserved"], 3072);
  EXPECT_EQ(op.call("GET", "/resource_providers/" + uid_ + "/traits")
                .body["traits"]
                .get<std::set<std::string>>(),
            (std::set<std::string>{"COMPUTE_NODE", "CUSTOM_IT_WIPED"}));
  r.reset();
  testing::runScript(testing::kFixtures + "/stop.sh " + dir, dir + ".stop2.out");
}

// Issue 10: after a 409 the trait view is re-read too. An operator replaces the traits (as
// `openstack resource provider trait set` does) and drops the cordon's COMPUTE_STATUS_DISABLED;
// the agent's next write meets a 409 and must put the trait back.
TEST_F(PlacementIT, ConflictReReadsTheTraitsToo) {
  node_.unschedulable = true;
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "1", "1Gi")});
  ASSERT_TRUE(pushed(*r, 1));
  ASSERT_EQ(traits(uid_).count("COMPUTE_STATUS_DISABLED"), 1u);
  json t = get("/resource_providers/" + uid_ + "/traits");
  t["traits"] = json::array({"COMPUTE_NODE"});
  ASSERT_EQ(op_.call("PUT", "/resource_providers/" + uid_ + "/traits", t).status, 200);
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "3", "1Gi")});
  ASSERT_TRUE(pushed(*r, 2));
  EXPECT_GE(r->counters().conflicts, 1u);
  EXPECT_EQ(inventories(uid_)["VCPU"]["reserved"], 3);
  EXPECT_EQ(traits(uid_).count("COMPUTE_STATUS_DISABLED"), 1u);
}

// Seed 000 4.1: a node without the compute role is not a hypervisor.
TEST_F(PlacementIT, LosingTheRoleClosesTheNodeRegainingItOpensIt) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  const json before = inventories(uid_);
  r->setActive(false);
  ASSERT_TRUE(testing::runUntil(io_, [&] { return r->closed(); }));
  EXPECT_EQ(traits(uid_).count("COMPUTE_STATUS_DISABLED"), 1u);
  EXPECT_EQ(inventories(uid_), before) << "the provider and its inventories stay";
  r->setActive(true);
  ASSERT_TRUE(
      testing::runUntil(io_, [&] { return traits(uid_).count("COMPUTE_STATUS_DISABLED") == 0; }));
}

// A hugepage size goes while a VM still uses it: Placement refuses the child's deletion
// (resource_provider.inuse); the root is brought up to date all the same.
TEST_F(PlacementIT, ChildInUseDoesNotHoldTheRootBack) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  const std::string child = uuid5(uid_ + "/hugepages-1Gi");
  const std::string vm = testing::randomUuid();
  const json alloc{{"allocations", {{child, {{"resources", {{"MEMORY_MB", 1024}}}}}}},
                   {"project_id", testing::randomUuid()},
                   {"user_id", testing::randomUuid()},
                   {"consumer_generation", nullptr}};
  ASSERT_EQ(op_.call("PUT", "/allocations/" + vm, alloc, "1.28").status, 204);
  node_.allocatable.erase("hugepages-1Gi");
  node_.unschedulable = true;
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "2", "1Gi")});
  ASSERT_TRUE(
      testing::runUntil(io_, [&] { return traits(uid_).count("COMPUTE_STATUS_DISABLED") == 1; }));
  EXPECT_EQ(inventories(uid_)["VCPU"]["reserved"], 2);
  ASSERT_TRUE(testing::runUntil(io_, [&] {
    return !health_.readiness().empty() &&
           health_.readiness()[0].detail.find("cannot delete " + name_ + ":hugepages-1Gi") !=
               std::string::npos;
  })) << (health_.readiness().empty() ? "" : health_.readiness()[0].detail);
  EXPECT_TRUE(health_.ready());
  EXPECT_EQ(op_.call("GET", "/resource_providers/" + child).status, 200);
  // The VM goes: the retry deletes the child.
  ASSERT_EQ(op_.call("DELETE", "/allocations/" + vm).status, 204);
  ASSERT_TRUE(testing::runUntil(
      io_, [&] { return op_.call("GET", "/resource_providers/" + child).status == 404; }));
  EXPECT_EQ(r->failedPasses(), 0u);
}

// Nova's rule for allocation ratios: unset in config, a ratio set in Placement is kept.
TEST_F(PlacementIT, HandSetRatioIsKeptUnlessConfigured) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "1", "1Gi")});
  ASSERT_TRUE(pushed(*r, 1));
  json inv = get("/resource_providers/" + uid_ + "/inventories");
  inv["inventories"]["VCPU"]["allocation_ratio"] = 8.0;
  ASSERT_EQ(op_.call("PUT", "/resource_providers/" + uid_ + "/inventories", inv).status, 200);
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "3", "1Gi")});
  ASSERT_TRUE(pushed(*r, 2));
  EXPECT_EQ(inventories(uid_)["VCPU"]["reserved"], 3);
  EXPECT_DOUBLE_EQ(inventories(uid_)["VCPU"]["allocation_ratio"].get<double>(), 8.0);
  r.reset();
  config_.cpuAllocationRatio = 2.0;
  r = agent();
  okna::testing::planAndUpdate(*r, node_, {makePod(name_, "a", "3", "1Gi")});
  ASSERT_TRUE(pushed(*r, 1));
  EXPECT_DOUBLE_EQ(inventories(uid_)["VCPU"]["allocation_ratio"].get<double>(), 2.0);
}

// The default capability traits are all standard traits this Placement knows.
TEST_F(PlacementIT, RootCarriesComputeNodeAndTheCapabilityTraits) {
  config_.capabilityTraits = defaultCapabilityTraits();
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  std::set<std::string> want{"COMPUTE_NODE"};
  want.insert(config_.capabilityTraits.begin(), config_.capabilityTraits.end());
  EXPECT_EQ(traits(uid_), want);
}

}  // namespace
}  // namespace okna::placement
