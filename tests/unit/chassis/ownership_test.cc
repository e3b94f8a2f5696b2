// The ownership record's format: stable (compared as a string), round-trips, strict on input.
#include "chassis/ownership.h"

#include <gtest/gtest.h>

namespace okna::ovsdb {
namespace {

TEST(Ownership, FormatIsCompactAndStable) {
  OwnershipRecord r;
  EXPECT_EQ(formatOwnership(r), R"({"v":1})");
  r.cmsItems = {"enable-chassis-as-gw"};
  r.mappings = {"physnet1:br-ex"};
  r.createdKeys = {"ovn-cms-options"};
  r.bridges = {"br-ex"};
  r.ports = {{"br-ex", "bond1"}};
  EXPECT_EQ(formatOwnership(r),
            R"({"bridges":["br-ex"],"cms":["enable-chassis-as-gw"],"keys":["ovn-cms-options"],)"
            R"("mappings":["physnet1:br-ex"],"ports":[["br-ex","bond1"]],"v":1})");
  auto back = parseOwnership(formatOwnership(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(Ownership, DrainStartRoundTrips) {
  OwnershipRecord r;
  r.mappings = {"physnet1:br-ex"};
  r.drainSince = 1700000000;
  EXPECT_EQ(formatOwnership(r), R"({"drain":1700000000,"mappings":["physnet1:br-ex"],"v":1})");
  auto back = parseOwnership(formatOwnership(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
  // A record holding only a drain is not empty: the drain must survive a restart.
  OwnershipRecord onlyDrain;
  onlyDrain.drainSince = 5;
  EXPECT_FALSE(onlyDrain.empty());
}

TEST(Ownership, LostMarkerRoundTripsAndKeepsTheRecord) {
  OwnershipRecord r;
  r.lost = true;
  EXPECT_FALSE(r.empty());
  EXPECT_EQ(formatOwnership(r), R"({"lost":true,"v":1})");
  EXPECT_EQ(*parseOwnership(formatOwnership(r)), r);
  EXPECT_FALSE(parseOwnership(R"({"v":1,"lost":false})").ok());
}

TEST(Ownership, RejectsWhatItCannotTrust) {
  for (const std::string bad :
       {"", "garbage", "[]", R"({"v":2})", R"({"cms":["x"]})", R"({"v":1,"cms":"x"})",
        R"({"v":1,"cms":[1]})", R"({"v":1,"ports":[["br-ex"]]})", R"({"v":1,"ports":"x"})",
        R"({"v":1,"drain":"1"})", R"({"v":1,"drain":-4})", R"({"v":1,"drain":1.5})"}) {
    EXPECT_FALSE(parseOwnership(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace okna::ovsdb
