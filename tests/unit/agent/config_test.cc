#include "agent/config.h"

#include <gtest/gtest.h>

namespace okna::agent {
namespace {

TEST(ConfigTest, EmptyDocumentGivesDefaults) {
  auto c = parseConfig("", "agent.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->health.listen, "0.0.0.0:19874");
  EXPECT_EQ(c->health.adminListen, "127.0.0.1:19875");
  EXPECT_EQ(c->health.maxConnections, 64u);
  EXPECT_EQ(c->logging.format, "text");
  EXPECT_EQ(c->nodeRoles.profile, RoleProfile::Default);
}

TEST(ConfigTest, FullDocument) {
  auto c = parseConfig(R"(
nodeName: lab-1
kubernetes:
  kubeconfig: /etc/kube/config
  context: dev
  watchTimeoutSeconds: {min: 5, max: 10}
  backoff: {initialMs: 100, maxMs: 2000}
  failingAfterSeconds: 15
health: {listen: "127.0.0.1:9999"}
logging: {format: json, level: debug, components: {k8s: trace}}
)",
                       "agent.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->nodeName, "lab-1");
  EXPECT_EQ(c->kubernetes.context, "dev");
  EXPECT_EQ(c->kubernetes.watchTimeoutMax.count(), 10);
  EXPECT_EQ(c->kubernetes.backoff.max.count(), 2000);
  EXPECT_EQ(c->kubernetes.failingAfter.count(), 15);
  EXPECT_EQ(c->logging.components.at("k8s"), "trace");
}

TEST(ConfigTest, ErrorsNameFileLineAndKey) {
  auto c = parseConfig("kubernetes:\n  kubeconfig: x\n  watchTimeout: 5\n", "/etc/agent.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.rfind("/etc/agent.yaml:3:3: kubernetes.watchTimeout: unknown key", 0),
            0u)
      << c.error().message;
}

TEST(ConfigTest, RejectsBadValues) {
  const std::pair<const char*, const char*> cases[] = {
      {"health: {listen: nowhere}", "health.listen"},
      {"health: {listen: '1.2.3.4:70000'}", "port must be 0-65535"},
      {"health: {listen: 'localhost:1'}",
       "health.listen: listen \"localhost:1\": the host must "
       "be an IP address"},
      {"health: {adminListen: nowhere}", "health.adminListen: adminListen \"nowhere\""},
      {"health: {adminListen: '127.0.0.1:99999'}", "health.adminListen"},
      {"health: {adminListen: 'node-1:19875'}", "health.adminListen"},
      {"health: {adminListen: ':19875'}", "health.adminListen"},
      {"health: {adminListen: [a]}", "health.adminListen"},
      {"health: {listen: '0.0.0.0:19875'}",
       "health.adminListen (--admin-listen) "
       "\"127.0.0.1:19875\": the same port as health.listen"},
      {"health: {maxConnections: 0}", "health.maxConnections"},
      {"health: {maxConnections: 100000}", "health.maxConnections"},
      {"health: {metricsListen: '127.0.0.1:1'}", "health.metricsListen: unknown key"},
      {"logging: {format: xml}", "logging.format: \"xml\" is not one of: text, json"},
      {"logging: {level: loud}", "logging.level"},
      {"logging: {components: {k8s: loud}}", "logging.components.k8s"},
      {"kubernetes: {watchTimeoutSeconds: {min: 10, max: 5}}", "max must be >= min"},
      {"kubernetes: {watchTimeoutSeconds: {min: abc}}", "\"abc\" is not an integer"},
      {"kubernetes: {backoff: {initialMs: 1}}", "out of range"},
      {"kubernetes: {failingAfterSeconds: 0}", "kubernetes.failingAfterSeconds"},
      {"nodeRoles: [a]", "nodeRoles: expected a mapping"},
      {"bogus: 1", "bogus: unknown key"},
      {"nodeRoles: {taints: maybe}", "is not true or false"},
      {"{unclosed", "invalid YAML"},
  };
  for (const auto& [yaml, message] : cases) {
    auto c = parseConfig(yaml, "a.yaml");
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(c.error().message.find(message), std::string::npos)
        << yaml << " -> " << c.error().message;
  }
}

TEST(ConfigTest, HealthListeners) {
  auto c = parseConfig(
      "health: {listen: '[::]:8080', adminListen: '0.0.0.0:8081', maxConnections: 8}\n", "a.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->health.listen, "[::]:8080");
  EXPECT_EQ(c->health.adminListen, "0.0.0.0:8081");
  EXPECT_EQ(c->health.maxConnections, 8u);
  // Empty: no admin listener.
  c = parseConfig("health: {adminListen: ''}\n", "a.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->health.adminListen, "");
}

// What main() checks once the flags have overridden the file.
TEST(ConfigTest, CheckHealthListenersNamesTheKeyAndTheFlag) {
  HealthConfig h;
  EXPECT_TRUE(checkHealthListeners(h).ok());
  h.adminListen = "";
  EXPECT_TRUE(checkHealthListeners(h).ok());
  h.listen = "127.0.0.1:0";
  h.adminListen = "127.0.0.1:0";
  EXPECT_TRUE(checkHealthListeners(h).ok()) << "two ephemeral ports never collide";
  h.listen = "0.0.0.0:9000";
  h.adminListen = "127.0.0.1:9000";
  auto s = checkHealthListeners(h);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("health.adminListen (--admin-listen)"), std::string::npos)
      << s.error().message;
  h.adminListen = "loopback:9001";
  s = checkHealthListeners(h);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("health.adminListen (--admin-listen) \"loopback:9001\": the "
                                   "host must be an IP address"),
            std::string::npos)
      << s.error().message;
  h.listen = "9000";
  s = checkHealthListeners(h);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("health.listen (--health-listen)"), std::string::npos)
      << s.error().message;
}

TEST(ConfigTest, ListenAddressForms) {
  EXPECT_EQ(parseListenAddress("[::1]:80", "x")->first, "::1");
  EXPECT_EQ(parseListenAddress("0.0.0.0:0", "x")->second, 0);
  EXPECT_FALSE(parseListenAddress(":80", "x").ok());
  EXPECT_FALSE(parseListenAddress("[]:80", "x").ok());
  EXPECT_FALSE(parseListenAddress("example.com:80", "x").ok());
}

}  // namespace
TEST(ConfigTest, HardenedProfileTakesTraitsOnlyFromProtectedLabels) {
  auto hardened = parseConfig("nodeRoles: {profile: hardened}\n", "agent.yaml");
  ASSERT_TRUE(hardened.ok()) << hardened.error().message;
  EXPECT_TRUE(hardened->placement.trustedTraitsOnly);
  auto open = parseConfig("nodeRoles: {profile: default}\n", "agent.yaml");
  ASSERT_TRUE(open.ok()) << open.error().message;
  EXPECT_FALSE(open->placement.trustedTraitsOnly);
}

}  // namespace okna::agent
