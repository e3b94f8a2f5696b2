// The agent's heap policy (agent/heap_release.h): when it limits malloc to one arena, and that
// its RSS reading works.

#include "agent/heap_release.h"

#include <gtest/gtest.h>

#include <vector>

namespace okna::agent {
namespace {

TEST(OneMallocArena, ChosenWhenTheEnvironmentSaysNothing) {
  EXPECT_TRUE(shouldUseOneMallocArena(nullptr, nullptr));
  EXPECT_TRUE(shouldUseOneMallocArena(nullptr, "glibc.malloc.tcache_count=0"));
}

TEST(OneMallocArena, TheOperatorsChoiceWins) {
  EXPECT_FALSE(shouldUseOneMallocArena("4", nullptr));
  EXPECT_FALSE(shouldUseOneMallocArena("", nullptr));
  EXPECT_FALSE(shouldUseOneMallocArena(nullptr, "glibc.malloc.arena_max=8"));
  EXPECT_FALSE(
      shouldUseOneMallocArena(nullptr, "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=2"));
}

TEST(ResidentBytes, GrowsWhenMemoryIsTouched) {
  const std::size_t before = residentBytes();
  ASSERT_GT(before, 0u);
  std::vector<char> touched(64 << 20, 1);  // 64 MiB written: resident whatever the allocator
  EXPECT_GE(residentBytes(), before + (32u << 20));
  EXPECT_EQ(touched[touched.size() / 2], 1);
}

}  // namespace
}  // namespace okna::agent
