#include "k8s/quantity.h"

#include <gtest/gtest.h>

namespace okna::k8s {
namespace {

std::int64_t milli(const char* s) {
  return Quantity::parse(s)->ceilScaled(1000);
}
std::int64_t units(const char* s) {
  return Quantity::parse(s)->ceilScaled(1);
}

TEST(QuantityTest, CpuForms) {
  EXPECT_EQ(milli("15"), 15000);
  EXPECT_EQ(milli("15500m"), 15500);
  EXPECT_EQ(milli("0.5"), 500);
  EXPECT_EQ(milli("0.1"), 100);  // exact: no binary floating point
  EXPECT_EQ(milli("100m"), 100);
  EXPECT_EQ(milli("1u"), 1);  // rounds up
  EXPECT_EQ(milli("250000n"), 1);
  EXPECT_EQ(milli("1e3"), 1000000);
  EXPECT_EQ(milli("+2"), 2000);
}

TEST(QuantityTest, MemoryForms) {
  EXPECT_EQ(units("60498112Ki"), 60498112LL * 1024);
  EXPECT_EQ(units("2Gi"), 2LL << 30);
  EXPECT_EQ(units("1.5Gi"), 3LL << 29);
  EXPECT_EQ(units("128974848"), 128974848);
  EXPECT_EQ(units("129M"), 129000000);
  EXPECT_EQ(units("1k"), 1000);
  EXPECT_EQ(units("1Ei"), 1LL << 60);
}

TEST(QuantityTest, Rounding) {
  auto q = Quantity::parse("1500m");
  EXPECT_EQ(q->ceilScaled(1), 2);
  EXPECT_EQ(q->floorScaled(1), 1);
  auto n = Quantity::parse("-1500m");
  EXPECT_TRUE(n->negative());
  EXPECT_EQ(n->ceilScaled(1), -1);
  EXPECT_EQ(n->floorScaled(1), -2);
}

TEST(QuantityTest, RejectsMalformed) {
  for (const char* bad : {"", "abc", "1.2.3", "5Zi", "m", "1e", "1eX", "--1", "1 Gi"}) {
    auto q = Quantity::parse(bad);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_NE(q.error().message.find("quantity"), std::string::npos);
  }
}

TEST(QuantityTest, SaturatesInsteadOfOverflowing) {
  EXPECT_EQ(units("999999999999Ei"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(units("12345678901234567890"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(units("1e30"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(milli("1e-30"), 1);
  EXPECT_EQ(saturatingAdd(std::numeric_limits<std::int64_t>::max(), 1),
            std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(saturatingAdd(std::numeric_limits<std::int64_t>::min(), -1),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(saturatingAdd(40, 2), 42);
}

TEST(QuantityTest, RejectsAbsurdExponents) {
  for (const char* bad :
       {"1e999", "1e-999", "1e31", "1e-31", "0.5e-30", "0.00000000000000000000000000000000001"}) {
    auto q = Quantity::parse(bad);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_NE(q.error().message.find("exponent out of range"), std::string::npos)
        << q.error().message;
  }
}

}  // namespace
}  // namespace okna::k8s
