// metadata/memory_budget.h: the budget from the cgroup's memory limit (fake cgroupfs trees), what
// a connection is charged, the default connection cap, and who is closed first over the budget.

#include "metadata/memory_budget.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "metadata/config.h"

namespace okna::metadata {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using TimePoint = Occupant::TimePoint;

const TimePoint kStart = TimePoint{} + std::chrono::hours(1);

// A connection holding an answer; admission's side is not used here.
struct Holder final : Occupant {
  bool proceed() override { return true; }
  void waitsAt(Scope) override {}
};

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("okna-cgroup-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  std::uint64_t limit() {
    return cgroupMemoryLimit(root_.string(), (root_ / "proc-self-cgroup").string());
  }
  fs::path root_;
};

TEST_F(CgroupTree, V2TheLowestLimitFromTheProcessCgroupUpToTheRoot) {
  write("proc-self-cgroup", "0::/kubepods.slice/pod1/agent\n");
  write("kubepods.slice/pod1/agent/memory.max", "268435456\n");
  write("kubepods.slice/pod1/memory.max", "max\n");
  write("kubepods.slice/memory.max", "1073741824\n");
  EXPECT_EQ(limit(), 268435456u);
  write("kubepods.slice/memory.max", "134217728\n");
  EXPECT_EQ(limit(), 134217728u) << "a parent's lower limit binds";
}

TEST_F(CgroupTree, V2InItsOwnCgroupNamespaceAndWithoutALimit) {
  write("proc-self-cgroup", "0::/\n");
  EXPECT_EQ(limit(), 0u) << "no memory.max: none";
  write("memory.max", "max\n");
  EXPECT_EQ(limit(), 0u);
  write("memory.max", "268435456\n");
  EXPECT_EQ(limit(), 268435456u);
}

TEST_F(CgroupTree, V1TheMemoryControllersHierarchy) {
  write("proc-self-cgroup",
        "12:cpu,cpuacct:/docker/x\n4:memory:/process_api/abc\n1:name=systemd:/\n0::/\n");
  write("memory/process_api/abc/memory.limit_in_bytes", "9223372036854771712\n");
  write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(limit(), 0u) << "v1 writes no limit as the largest int64";
  write("memory/process_api/memory.limit_in_bytes", "536870912\n");
  EXPECT_EQ(limit(), 536870912u);
  write("proc-self-cgroup", "7:blkio,memory:/process_api/abc\n");
  EXPECT_EQ(limit(), 536870912u) << "memory among other controllers";
}

TEST_F(CgroupTree, NothingReadableIsNoLimit) {
  EXPECT_EQ(limit(), 0u);
  write("proc-self-cgroup", "garbage\n0::relative\n");
  EXPECT_EQ(limit(), 0u);
}

TEST(MemoryBudgetFor, ConfiguredElseAFractionOfTheLimitElseTheDefault) {
  MetadataLimits limits;
  EXPECT_EQ(memoryBudgetFor(limits, 256u << 20).bytes, 128u << 20) << "half the chart's 256 Mi";
  limits.memoryBudgetFraction = 0.25;
  EXPECT_EQ(memoryBudgetFor(limits, 256u << 20).bytes, 64u << 20);
  EXPECT_EQ(memoryBudgetFor(limits, 0).bytes, kBudgetWithoutLimit);
  limits.memoryBudgetBytes = 10 << 20;
  const BudgetChoice configured = memoryBudgetFor(limits, 256u << 20);
  EXPECT_EQ(configured.bytes, 10u << 20);
  EXPECT_NE(configured.source.find("memoryBudgetBytes"), std::string::npos);
}

TEST(MemoryBudgetFor, AConnectionIsChargedItsLargestRequestItsKernelQueuesAndItsObjects) {
  MetadataLimits limits;  // 8 KiB of header, 16 KiB of body
  const std::size_t charge = connectionCharge(limits);
  EXPECT_EQ(charge, std::size_t{132} << 10);
  limits.maxBodyBytes = 0;
  EXPECT_EQ(connectionCharge(limits), charge - (32u << 10)) << "the body, in two places";
  // Half of the chart's budget holds this many connections at their largest.
  EXPECT_EQ(connectionsWithin(128u << 20, charge), 496u);
  EXPECT_EQ(connectionsWithin(1000, charge), 1u);
}

TEST(MemoryBudgetFor, TheConnectionCapIsTheSmallerOfTheFileLimitsAndTheBudgets) {
  MetadataLimits limits;
  const std::size_t charge = connectionCharge(limits);
  MemoryBudget small(4u << 20, charge);  // 15 connections at their largest in half of it
  const ConnectionCap cap = totalConnectionCap(limits, small);
  EXPECT_EQ(cap.connections, 15u);
  EXPECT_NE(cap.source.find("memory budget"), std::string::npos) << cap.source;
  limits.maxConnectionsTotal = 1000;
  EXPECT_EQ(totalConnectionCap(limits, small).connections, 1000u) << "configured: as it says";
}

TEST(MemoryBudgetTest, ConnectionsAndTheAnswersHeldAreCharged) {
  MemoryBudget budget(1000, 100);
  Holder a, b;
  budget.opened();
  budget.opened();
  EXPECT_EQ(budget.held(), 200u);
  budget.hold(a, 500, 480, 0, kStart);
  EXPECT_EQ(budget.held(), 700u);
  EXPECT_FALSE(budget.over());
  budget.hold(b, 400, 400, 0, kStart);
  EXPECT_TRUE(budget.over());
  budget.hold(b, 300, 300, 0, kStart);  // its next answer replaces the last
  EXPECT_EQ(budget.held(), 1000u);
  EXPECT_FALSE(budget.over());
  budget.drop(a);
  budget.drop(a);  // twice: nothing
  EXPECT_EQ(budget.held(), 500u);
  budget.drop(b);
  budget.closed();
  budget.closed();
  EXPECT_EQ(budget.held(), 0u);
  EXPECT_EQ(budget.costliest(kStart), nullptr);
}

// Over the budget the connection whose answer would take longest to go at the rate its VM has
// read it is closed first: one that has read none of it before any reader, the larger of two
// such; an answer just begun is not closed for being large.
TEST(MemoryBudgetTest, TheConnectionsThatHoldMostAndReadLeastAreClosedFirst) {
  MemoryBudget budget(1 << 20, 0);
  Holder reader, slowReader, smallNonReader, bigNonReader, justBegun;
  budget.hold(reader, 800'000, 800'000, 400'000, kStart);     // 0.4 MB/s for 1 s: 1 s left
  budget.hold(slowReader, 200'000, 200'000, 20'000, kStart);  // 20 kB/s: 9 s left
  budget.hold(smallNonReader, 100'000, 100'000, 0, kStart);   // never
  budget.hold(bigNonReader, 300'000, 300'000, 0, kStart);     // never, and more of it
  budget.hold(justBegun, 5'000'000, 5'000'000, 64'000, kStart + seconds(1));
  const TimePoint now = kStart + seconds(1);
  std::vector<Occupant*> order;
  for (Occupant* next; (next = budget.costliest(now)) != nullptr;) {
    order.push_back(next);
    budget.drop(*next);
  }
  const std::vector<Occupant*> expected{&bigNonReader, &smallNonReader, &slowReader, &reader,
                                        &justBegun};
  EXPECT_EQ(order, expected);
}

TEST(MemoryBudgetTest, AnAnswerTheVmKeepsNotReadingRisesToTheTop) {
  MemoryBudget budget(1 << 20, 0);
  Holder stalled, reading;
  budget.hold(stalled, 500'000, 500'000, 100'000, kStart);  // took what the kernel took, then none
  budget.hold(reading, 900'000, 900'000, 100'000, kStart);
  EXPECT_EQ(budget.costliest(kStart + seconds(1)), &reading) << "both read 100 kB in 1 s";
  MemoryBudget::progress(reading, 800'000);
  EXPECT_EQ(budget.costliest(kStart + seconds(2)), &stalled);
  budget.drop(stalled);
  budget.drop(reading);
}

}  // namespace
}  // namespace okna::metadata
