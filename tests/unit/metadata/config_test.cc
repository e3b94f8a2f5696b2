#include "metadata/config.h"

#include <gtest/gtest.h>

#include "core/yaml_field.h"

namespace okna::metadata {
namespace {

core::Result<MetadataConfig> parse(const std::string& text) {
  return core::catchConfigErrors(
      [&] { return parseMetadataConfig(core::YamlField::root(YAML::Load(text), "agent.yaml")); });
}

TEST(MetadataConfigTest, Defaults) {
  auto c = parse("{}");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->enabled);
  EXPECT_TRUE(c->ipv6);
  EXPECT_EQ(c->sharedSecretFile, "");
  EXPECT_EQ(c->nova.host, "127.0.0.1");
  EXPECT_EQ(c->nova.port, 8775);
  EXPECT_EQ(c->nova.protocol, "http");
  EXPECT_FALSE(c->nova.insecure);
  EXPECT_EQ(c->nova.connectTimeout, std::chrono::seconds(2));
  EXPECT_EQ(c->nova.timeout, std::chrono::seconds(8));
  EXPECT_EQ(c->limits.maxConnectionsPerNamespace, 64);
  EXPECT_EQ(c->limits.maxRequestHeaderBytes, 8192);
  EXPECT_EQ(c->limits.maxBodyBytes, 16384);
  EXPECT_EQ(c->limits.maxInFlightPerNamespace, 16);
  EXPECT_EQ(c->limits.requestDeadline, std::chrono::seconds(9)) << "below cloud-init's 10 s";
  EXPECT_EQ(c->limits.headerTimeout, std::chrono::seconds(10));
  EXPECT_EQ(c->limits.idleTimeout, std::chrono::seconds(60));
  EXPECT_EQ(c->limits.maxConnectionsPerClient, 8);
  EXPECT_EQ(c->limits.maxInFlightPerClient, 4);
  EXPECT_EQ(c->limits.projectShare, 0.5);
  EXPECT_EQ(c->limits.busyIdleTimeout, std::chrono::seconds(2));
  EXPECT_EQ(c->limits.maxConnectionsTotal, 0) << "0: from the file limit and the memory budget";
  EXPECT_EQ(c->limits.memoryBudgetBytes, 0) << "0: from the cgroup's memory limit";
  EXPECT_EQ(c->limits.memoryBudgetFraction, 0.5);
  EXPECT_EQ(c->verifyInterval, std::chrono::seconds(60));
}

TEST(MetadataConfigTest, EveryKey) {
  auto c = parse(R"(
enabled: false
sharedSecretFile: /run/secrets/metadata/secret
ipv6: false
verifyIntervalSeconds: 0
nova:
  host: nova-metadata.openstack.svc
  port: 18775
  protocol: https
  caFile: /etc/ssl/nova-ca.pem
  insecure: true
  clientCertFile: /etc/ssl/client.pem
  clientKeyFile: /etc/ssl/client.key
  connectTimeoutSeconds: 0.5
  timeoutSeconds: 3
limits:
  maxConnectionsPerNamespace: 10
  maxRequestHeaderBytes: 4096
  maxBodyBytes: 1024
  maxInFlightPerNamespace: 4
  requestDeadlineSeconds: 6.5
  headerTimeoutSeconds: 1.5
  idleTimeoutSeconds: 30
  maxConnectionsPerClient: 3
  maxInFlightPerClient: 2
  projectShare: 0.25
  busyIdleTimeoutSeconds: 0.5
  maxConnectionsTotal: 5000
  memoryBudgetBytes: 67108864
  memoryBudgetFraction: 0.25
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(c->enabled);
  EXPECT_FALSE(c->ipv6);
  EXPECT_EQ(c->verifyInterval, std::chrono::milliseconds(0)) << "0 turns the check off";
  EXPECT_EQ(c->sharedSecretFile, "/run/secrets/metadata/secret");
  EXPECT_EQ(c->nova.host, "nova-metadata.openstack.svc");
  EXPECT_EQ(c->nova.port, 18775);
  EXPECT_EQ(c->nova.protocol, "https");
  EXPECT_EQ(c->nova.caFile, "/etc/ssl/nova-ca.pem");
  EXPECT_TRUE(c->nova.insecure);
  EXPECT_EQ(c->nova.clientCertFile, "/etc/ssl/client.pem");
  EXPECT_EQ(c->nova.clientKeyFile, "/etc/ssl/client.key");
  EXPECT_EQ(c->nova.connectTimeout, std::chrono::milliseconds(500));
  EXPECT_EQ(c->nova.timeout, std::chrono::seconds(3));
  EXPECT_EQ(c->limits.maxConnectionsPerNamespace, 10);
  EXPECT_EQ(c->limits.maxRequestHeaderBytes, 4096);
  EXPECT_EQ(c->limits.maxBodyBytes, 1024);
  EXPECT_EQ(c->limits.maxInFlightPerNamespace, 4);
  EXPECT_EQ(c->limits.requestDeadline, std::chrono::milliseconds(6500));
  EXPECT_EQ(c->limits.headerTimeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(c->limits.idleTimeout, std::chrono::seconds(30));
  EXPECT_EQ(c->limits.maxConnectionsPerClient, 3);
  EXPECT_EQ(c->limits.maxInFlightPerClient, 2);
  EXPECT_EQ(c->limits.projectShare, 0.25);
  EXPECT_EQ(c->limits.busyIdleTimeout, std::chrono::milliseconds(500));
  EXPECT_EQ(c->limits.maxConnectionsTotal, 5000);
  EXPECT_EQ(c->limits.memoryBudgetBytes, 64 << 20);
  EXPECT_EQ(c->limits.memoryBudgetFraction, 0.25);
}

struct BadCase {
  const char* yaml;
  const char* expected;  // a substring of the error
};

class MetadataConfigErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(MetadataConfigErrorTest, NamesTheField) {
  auto c = parse(GetParam().yaml);
  ASSERT_FALSE(c.ok()) << GetParam().yaml;
  EXPECT_NE(c.error().message.find(GetParam().expected), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("agent.yaml:"), std::string::npos) << c.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    All, MetadataConfigErrorTest,
    ::testing::Values(
        BadCase{"enable: true", "enable: unknown key"}, BadCase{"enabled: maybe", "enabled"},
        BadCase{"ipv6: 3", "ipv6"}, BadCase{"verifyIntervalSeconds: -1", "verifyIntervalSeconds"},
        BadCase{"sharedSecretFile: [a]", "sharedSecretFile"},
        BadCase{"nova: {hots: x}", "nova.hots: unknown key"},
        BadCase{"nova: {host: ''}", "nova.host"}, BadCase{"nova: {host: '[::1]'}", "nova.host"},
        BadCase{"nova: {port: 0}", "nova.port"}, BadCase{"nova: {port: 70000}", "nova.port"},
        BadCase{"nova: {protocol: ftp}", "nova.protocol"},
        BadCase{"nova: {insecure: perhaps}", "nova.insecure"},
        BadCase{"nova: {clientCertFile: /c.pem}", "clientKeyFile go together"},
        BadCase{"nova: {clientKeyFile: /c.key}", "clientKeyFile go together"},
        BadCase{"nova: {connectTimeoutSeconds: 0}", "nova.connectTimeoutSeconds"},
        BadCase{"nova: {timeoutSeconds: -1}", "nova.timeoutSeconds"},
        BadCase{"limits: {maxConns: 1}", "limits.maxConns: unknown key"},
        BadCase{"limits: {maxConnectionsPerNamespace: 0}", "limits.maxConnectionsPerNamespace"},
        BadCase{"limits: {maxRequestHeaderBytes: 100}", "limits.maxRequestHeaderBytes"},
        BadCase{"limits: {maxBodyBytes: -1}", "limits.maxBodyBytes"},
        BadCase{"limits: {maxInFlightPerNamespace: 0}", "limits.maxInFlightPerNamespace"},
        BadCase{"limits: {requestDeadlineSeconds: 0}", "limits.requestDeadlineSeconds"},
        BadCase{"limits: {headerTimeoutSeconds: 0}", "limits.headerTimeoutSeconds"},
        BadCase{"limits: {idleTimeoutSeconds: x}", "limits.idleTimeoutSeconds"},
        BadCase{"limits: {maxConnectionsPerClient: 0}", "limits.maxConnectionsPerClient"},
        BadCase{"limits: {maxInFlightPerClient: 0}", "limits.maxInFlightPerClient"},
        BadCase{"limits: {projectShare: 0}", "limits.projectShare"},
        BadCase{"limits: {projectShare: 1.5}", "limits.projectShare"},
        BadCase{"limits: {busyIdleTimeoutSeconds: 0}", "limits.busyIdleTimeoutSeconds"},
        BadCase{"limits: {maxConnectionsTotal: -1}", "limits.maxConnectionsTotal"},
        BadCase{"limits: {memoryBudgetBytes: 1000}", "limits.memoryBudgetBytes"},
        BadCase{"limits: {memoryBudgetBytes: -1}", "limits.memoryBudgetBytes"},
        BadCase{"limits: {memoryBudgetFraction: 1}", "limits.memoryBudgetFraction"}));

}  // namespace
}  // namespace okna::metadata
