// The Southbound values a project member controls, as the IDL thread checks them on entry
// (metadata/sb_values.h): each malformed value marks its port, and nothing else does.

#include "metadata/sb_values.h"

#include <gtest/gtest.h>

#include <cctype>

namespace okna::ovsdb {
namespace {

constexpr const char* kInstance = "4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f";
constexpr const char* kProject = "8d3f5c2a9b1e4f7a8c6d5e4f3a2b1c0d";

SbPort vm() {
  SbPort p;
  p.uuid = "0e9a5c1e-7777-4b1a-9c3d-2e4f6a8b0c1d";
  p.logicalPort = "6f2b9e4c-1d3a-4c5e-8f7a-9b0c1d2e3f4a";
  p.datapath = "11111111-1111-1111-1111-111111111111";
  p.onChassis = true;
  p.mac0 = "fa:16:3e:00:00:10 10.0.0.10 fd00::10";
  p.cidrs = "10.0.0.10/24 fd00::10/64";
  p.deviceId = kInstance;
  p.projectId = kProject;
  return p;
}

TEST(SbValues, AWellFormedVmPortHasNoProblem) {
  EXPECT_EQ(sbPortProblem(vm()), "");
  auto upper = vm();
  upper.deviceId = "4B1A0CC0-7C2D-4E6A-9A9B-1A2B3C4D5E6F";
  EXPECT_EQ(sbPortProblem(upper), "") << "UUIDs in either case";
  auto external = vm();
  external.type = "external";
  EXPECT_EQ(sbPortProblem(external), "");
  // An LDAP-backed or federated project id is not 32 hex digits: any token is accepted.
  auto ldap = vm();
  ldap.projectId = "project_alpha-01";
  EXPECT_EQ(sbPortProblem(ldap), "");
}

TEST(SbValues, AnEmptyDeviceIdIsNoProblemHereTheProxyAnswers404) {
  auto p = vm();
  p.deviceId = "";
  p.projectId = "";
  EXPECT_EQ(sbPortProblem(p), "");
}

struct Bad {
  const char* what;
  void (*spoil)(SbPort&);
  const char* problem;  // a substring of the reason
};

class SbValuesBad : public ::testing::TestWithParam<Bad> {};

TEST_P(SbValuesBad, MarksThePortAndNamesTheColumn) {
  auto p = vm();
  GetParam().spoil(p);
  const std::string problem = sbPortProblem(p);
  EXPECT_NE(problem.find(GetParam().problem), std::string::npos)
      << GetParam().what << ": got \"" << problem << "\"";
}

INSTANTIATE_TEST_SUITE_P(
    EachMalformedValue, SbValuesBad,
    ::testing::Values(
        // The finding: a device_id carrying its own request to Nova.
        Bad{"request splitting",
            [](SbPort& p) {
              p.deviceId = std::string(kInstance) + "\r\n\r\nGET / HTTP/1.1\r\nX-A: b";
            },
            "neutron:device_id holds a control character"},
        Bad{"LF alone", [](SbPort& p) { p.deviceId = std::string(kInstance) + "\n"; },
            "neutron:device_id holds a control character"},
        Bad{"NUL-free but a 246-char request",
            [](SbPort& p) { p.deviceId = std::string(246, 'a'); },
            "neutron:device_id is not a UUID"},
        Bad{"device_id too long", [](SbPort& p) { p.deviceId = std::string(300, 'a'); },
            "neutron:device_id is longer than 255"},
        Bad{"device_id not a UUID", [](SbPort& p) { p.deviceId = "vm-1"; }, "not a UUID"},
        Bad{"UUID with braces",
            [](SbPort& p) { p.deviceId = "{4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f}"; }, "not a UUID"},
        Bad{"UUID with a space",
            [](SbPort& p) { p.deviceId = "4b1a0cc0 7c2d-4e6a-9a9b-1a2b3c4d5e6f"; },
            "neutron:device_id holds a space"},
        Bad{"project id with CRLF", [](SbPort& p) { p.projectId = "abc\r\nX-Instance-ID: x"; },
            "neutron:project_id holds a control character"},
        Bad{"project id with a colon", [](SbPort& p) { p.projectId = "a:b"; },
            "neutron:project_id is not a token"},
        Bad{"project id empty", [](SbPort& p) { p.projectId = ""; }, "neutron:project_id is empty"},
        Bad{"right-to-left override in the logical port",
            [](SbPort& p) { p.logicalPort = "port\xe2\x80\xae"; },
            "logical_port holds a byte outside printable ASCII"},
        Bad{"DEL in the type", [](SbPort& p) { p.type = "\x7f"; }, "type holds a control"},
        Bad{"escape sequence in the mac column", [](SbPort& p) { p.mac0 += " \x1b[2J"; },
            "mac holds a control character"},
        Bad{"a huge address list", [](SbPort& p) { p.mac0 = std::string(9000, '1'); },
            "mac is longer than 8192"},
        Bad{"newline in the cidrs", [](SbPort& p) { p.cidrs = "10.0.0.10/24\n"; },
            "neutron:cidrs holds a control character"}),
    [](const ::testing::TestParamInfo<Bad>& param) {
      std::string name;
      for (const char c : std::string(param.param.what))
        name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

TEST(SbValues, ALocalportIsCheckedForBytesNotForAnInstance) {
  SbPort p;
  p.logicalPort = "md-port";
  p.type = "localport";
  p.mac0 = "fa:16:3e:00:00:01 10.0.0.2";
  p.cidrs = "10.0.0.2/24";
  p.deviceId = "ovnmeta-5e0e6b3a";  // Neutron's metadata port: not an instance
  EXPECT_EQ(sbPortProblem(p), "");
  p.logicalPort = "md port";
  EXPECT_NE(sbPortProblem(p), "");
}

TEST(SbValues, UuidAndProjectIdAndNetworkIdShapes) {
  EXPECT_TRUE(isUuid(kInstance));
  EXPECT_FALSE(isUuid("4b1a0cc07c2d4e6a9a9b1a2b3c4d5e6f"));
  EXPECT_FALSE(isUuid("4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6g"));
  EXPECT_FALSE(isUuid(""));
  EXPECT_TRUE(isProjectId(kProject));
  EXPECT_FALSE(isProjectId(""));
  EXPECT_FALSE(isProjectId(std::string(256, 'a')));
  EXPECT_TRUE(isSafeNetworkId("5e0e6b3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"));
  EXPECT_TRUE(isSafeNetworkId("net_a-1"));
  for (const char* bad : {"", "../../etc", "a/b", "a b", "a.b", "a\nb", "\xe2\x80\xae"})
    EXPECT_FALSE(isSafeNetworkId(bad)) << bad;
  EXPECT_FALSE(isSafeNetworkId(std::string(65, 'a')));
}

}  // namespace
}  // namespace okna::ovsdb
