// LinuxHostNics: default routes from /proc/net/route and /proc/net/ipv6_route (files the test
// writes, in the kernel's format), addresses from getifaddrs (loopback is always there); the
// Node's InternalIPs it is compared with, parsed from the Node object.
#include "chassis/host_nics.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "k8s/objects.h"

namespace okna::ovsdb {
namespace {

class HostNicsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "okna-procnet-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  std::string dir_;
};

TEST_F(HostNicsTest, DefaultRoutesFromProcNet) {
  write("route",
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
        "eth1\t0002A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n");
  write("ipv6_route",
        "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
        "fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth2\n"
        "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
        "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n"
        "20010db8000000000000000000000000 40 00000000000000000000000000000000 00 "
        "00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1\n");
  LinuxHostNics nics(dir_);
  EXPECT_TRUE(nics.facts("eth0").carriesDefaultRoute);
  EXPECT_FALSE(nics.facts("eth1").carriesDefaultRoute);
  EXPECT_TRUE(nics.facts("eth2").carriesDefaultRoute);
  EXPECT_FALSE(nics.facts("eth9").carriesDefaultRoute);
}

TEST_F(HostNicsTest, AddressesFromTheKernel) {
  LinuxHostNics nics(dir_);  // no route files: no default route
  const NicFacts lo = nics.facts("lo");
  EXPECT_FALSE(lo.carriesDefaultRoute);
  EXPECT_NE(std::find(lo.addresses.begin(), lo.addresses.end(), "127.0.0.1"), lo.addresses.end());
  EXPECT_TRUE(nics.facts("okna-nosuch0").addresses.empty());
}

}  // namespace
}  // namespace okna::ovsdb

// The InternalIP addresses the safety check compares with come from the Node object's
// status.addresses (every InternalIP, IPv4 and IPv6; other types ignored).
namespace okna::ovsdb {
namespace {

nlohmann::json nodeWithAddresses(nlohmann::json addresses) {
  return {{"metadata",
           {{"name", "net-1"}, {"labels", {{kExternalNicKey, "eth1"}}}, {"annotations", {}}}},
          {"status", {{"addresses", std::move(addresses)}}}};
}

TEST(NodeInternalIps, EveryInternalIpOfTheNodeObjectAndNothingElse) {
  auto node =
      k8s::parseNode(nodeWithAddresses({{{"type", "Hostname"}, {"address", "net-1"}},
                                        {{"type", "InternalIP"}, {"address", "10.0.0.5"}},
                                        {{"type", "ExternalIP"}, {"address", "203.0.113.5"}},
                                        {{"type", "InternalIP"}, {"address", "fd00::5"}}}));
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(node->internalIps, (std::vector<std::string>{"10.0.0.5", "fd00::5"}));
  // The IPv6 one is enough to refuse a NIC that carries it; the ExternalIP is not checked.
  DesiredChassis d = planChassis({}, *node, {"network"});
  guardExternalNic(d, *node, NicFacts{false, {"fd00::5"}});
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0].reason, "UnsafeExternalNic");
  EXPECT_NE(d.warnings[0].message.find("InternalIP fd00::5"), std::string::npos);
  d = planChassis({}, *node, {"network"});
  guardExternalNic(d, *node, NicFacts{false, {"203.0.113.5"}});
  EXPECT_TRUE(d.warnings.empty());
}

TEST(NodeInternalIps, NoAddressesAndMalformedOnes) {
  auto none = k8s::parseNode({{"metadata", {{"name", "net-1"}}}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->internalIps.empty());
  auto bad = k8s::parseNode(nodeWithAddresses({{{"type", "InternalIP"}, {"address", 5}}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("status.addresses[0].address"), std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace okna::ovsdb
