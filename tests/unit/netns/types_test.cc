// Names as Neutron derives them, and validation that names the bad field.

#include "netns/types.h"

#include <gtest/gtest.h>

namespace okna::netns {
namespace {

TEST(MetadataNamespaceFor, DerivesNeutronNames) {
  auto d = metadataNamespaceFor("9f8b7c6d-1234-4a5b-8c9d-0123456789ab", "FA:16:3E:AA:BB:CC",
                                {"10.0.0.2/24", "169.254.169.254/32", "fe80::a9fe:a9fe/64"});
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->name, "ovnmeta-9f8b7c6d-1234-4a5b-8c9d-0123456789ab");
  EXPECT_EQ(d->hostIface, "tap9f8b7c6d-10");
  EXPECT_EQ(d->innerIface, "tap9f8b7c6d-11");
  EXPECT_EQ(d->mac, "fa:16:3e:aa:bb:cc");
  EXPECT_EQ(d->addresses,
            (std::vector<std::string>{"10.0.0.2/24", "169.254.169.254/32", "fe80::a9fe:a9fe/64"}));
}

TEST(MetadataNamespaceFor, ShortIdUsesAllOfIt) {
  auto d = metadataNamespaceFor("abc", "fa:16:3e:00:00:01", {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->hostIface, "tapabc0");
  EXPECT_EQ(d->innerIface, "tapabc1");
  EXPECT_TRUE(d->addresses.empty());
}

TEST(MetadataNamespaceFor, CanonicalisesAndDeduplicatesAddresses) {
  auto d = metadataNamespaceFor("n", "fa:16:3e:00:00:01",
                                {"FE80:0::A9FE:A9FE/64", "fe80::a9fe:a9fe/64", "10.0.0.2/024"});
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->addresses, (std::vector<std::string>{"fe80::a9fe:a9fe/64", "10.0.0.2/24"}));
}

struct BadInput {
  std::string id, mac;
  std::vector<std::string> addresses;
  std::string mentions;
};

class MetadataNamespaceForRejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(MetadataNamespaceForRejects, NamingTheField) {
  const auto& p = GetParam();
  auto d = metadataNamespaceFor(p.id, p.mac, p.addresses);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find(p.mentions), std::string::npos) << d.error().message;
  EXPECT_EQ(d.error().code, EINVAL);
}

const std::string kMac = "fa:16:3e:00:00:01";

INSTANTIATE_TEST_SUITE_P(
    Fields, MetadataNamespaceForRejects,
    ::testing::Values(BadInput{"", kMac, {}, "network id"}, BadInput{"a/b", kMac, {}, "network id"},
                      BadInput{std::string("a\0b", 3), kMac, {}, "network id"},
                      BadInput{std::string(201, 'a'), kMac, {}, "network id"},
                      BadInput{"..", kMac, {}, "network id"},
                      BadInput{"a b", kMac, {}, "network id"},
                      BadInput{"a:b", kMac, {}, "network id"},
                      BadInput{"n", "fa:16:3e:00:00", {}, "mac"},
                      BadInput{"n", "fa:16:3e:00:00:0g", {}, "mac"},
                      BadInput{"n", "fa-16-3e-00-00-01", {}, "mac"}, BadInput{"n", "", {}, "mac"},
                      BadInput{"n", kMac, {"10.0.0.2"}, "address '10.0.0.2'"},
                      BadInput{"n", kMac, {"10.0.0.2/33"}, "address '10.0.0.2/33'"},
                      BadInput{"n", kMac, {"fe80::1/129"}, "address 'fe80::1/129'"},
                      BadInput{"n", kMac, {"10.0.0.2/"}, "address"},
                      BadInput{"n", kMac, {"10.0.0.2/-1"}, "address"},
                      BadInput{"n", kMac, {"10.0.0.256/24"}, "address '10.0.0.256/24'"},
                      BadInput{"n", kMac, {"x/24"}, "address 'x/24'"}));

TEST(MetadataNamespaceFor, AcceptsLongestId) {
  EXPECT_TRUE(metadataNamespaceFor(std::string(200, 'a'), kMac, {}).ok());
}

TEST(Eui64LinkLocal, FlipsTheLocalBitAndInsertsFffe) {
  EXPECT_EQ(eui64LinkLocal("fa:16:3e:aa:bb:cc"), "fe80::f816:3eff:feaa:bbcc/64");
  EXPECT_EQ(eui64LinkLocal("00:00:00:00:00:01"), "fe80::200:ff:fe00:1/64");
  EXPECT_EQ(eui64LinkLocal("junk"), "");
}

TEST(HostIfaceForNamespace, OnlyForMetadataNamespaces) {
  EXPECT_EQ(hostIfaceForNamespace("ovnmeta-9f8b7c6d-1234"), "tap9f8b7c6d-10");
  EXPECT_EQ(hostIfaceForNamespace("ovnmeta-"), "");
  EXPECT_EQ(hostIfaceForNamespace("qrouter-1"), "");
}

}  // namespace
}  // namespace okna::netns
