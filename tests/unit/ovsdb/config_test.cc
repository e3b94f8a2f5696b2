// parseOvsConfig: defaults, every key, and errors that name the field.
#include "ovsdb/config.h"

#include <gtest/gtest.h>

#include "core/yaml_field.h"

namespace okna::ovsdb {
namespace {

core::Result<OvsConfig> parse(const std::string& yaml) {
  return core::catchConfigErrors([&] {
    const auto root = core::YamlField::root(YAML::Load(yaml), "agent.yaml");
    return parseOvsConfig(*root.get("ovs"));
  });
}

TEST(OvsConfig, DefaultsAreOffAndPresenceEnables) {
  const OvsConfig defaults;
  EXPECT_FALSE(defaults.enabled);
  EXPECT_EQ(defaults.remote, "unix:/var/run/openvswitch/db.sock");
  EXPECT_EQ(defaults.drainTimeout, std::chrono::seconds(120));
  // Neutron's agent: max(min(agent_down_time // 3, 10), 3) with agent_down_time 75.
  EXPECT_EQ(defaults.livenessDelayMax, std::chrono::seconds(10));
  EXPECT_EQ(defaults.defaultExternalBridge, "br-ex");
  // Next to Placement's owned-traits file (placement.stateFile), on the same hostPath.
  EXPECT_EQ(defaults.stateFile, "/var/lib/openkeel-node-agent/ovs-ownership.json");
  auto c = parse("ovs: {}");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->enabled);
  EXPECT_FALSE(parse("ovs: {enabled: false}")->enabled);
}

TEST(OvsConfig, EveryKey) {
  auto c = parse(R"(
ovs:
  remote: unix:/run/ovs/db.sock
  sbRemote: tcp:10.0.0.1:6642,tcp:10.0.0.2:6642
  drainTimeoutSeconds: 0
  defaultExternalBridge: br-provider
  stateFile: /state/ovs.json
  livenessDelayMaxSeconds: 0
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->remote, "unix:/run/ovs/db.sock");
  EXPECT_EQ(c->sbRemote, "tcp:10.0.0.1:6642,tcp:10.0.0.2:6642");
  EXPECT_EQ(c->drainTimeout, std::chrono::seconds(0));
  EXPECT_EQ(c->defaultExternalBridge, "br-provider");
  EXPECT_EQ(c->stateFile, "/state/ovs.json");
  EXPECT_EQ(c->livenessDelayMax, std::chrono::milliseconds(0));
}

TEST(OvsConfig, OvsVswitchdIsLookedForNextToAUnixRemoteUnlessTold) {
  auto c = parse("ovs: {remote: 'unix:/run/ovs/db.sock'}");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(c->vswitchdRunDir.has_value());
  EXPECT_EQ(resolveVswitchdRunDir(*c), "/run/ovs");
  c = parse("ovs: {remote: 'tcp:10.0.0.1:6640'}");
  EXPECT_EQ(resolveVswitchdRunDir(*c), "") << "ovs-vswitchd is on another host";
  c = parse("ovs: {vswitchdRunDir: /host/run/openvswitch}");
  EXPECT_EQ(resolveVswitchdRunDir(*c), "/host/run/openvswitch");
  c = parse("ovs: {vswitchdRunDir: ''}");
  EXPECT_EQ(resolveVswitchdRunDir(*c), "") << "\"\": no check";
  c = parse("ovs: {vswitchdRunDir: relative/dir}");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("ovs.vswitchdRunDir"), std::string::npos) << c.error().message;
}

TEST(OvsConfig, ErrorsNameTheField) {
  const auto error = [](const std::string& yaml) {
    auto c = parse(yaml);
    return c.ok() ? std::string("(ok)") : c.error().message;
  };
  EXPECT_NE(error("ovs: {remot: x}").find("ovs.remot"), std::string::npos)
      << error("ovs: {remot: x}");
  EXPECT_NE(error("ovs: {remote: /run/db.sock}").find("ovs.remote"), std::string::npos);
  EXPECT_NE(error("ovs: {sbRemote: 'tcp:1.2.3.4:6642,'}").find("ovs.sbRemote"), std::string::npos);
  EXPECT_NE(error("ovs: {livenessDelayMaxSeconds: 31}").find("ovs.livenessDelayMaxSeconds"),
            std::string::npos);
  EXPECT_NE(error("ovs: {drainTimeoutSeconds: -1}").find("ovs.drainTimeoutSeconds"),
            std::string::npos);
  EXPECT_NE(
      error("ovs: {defaultExternalBridge: br-with-a-long-name}").find("ovs.defaultExternalBridge"),
      std::string::npos);
}

TEST(OvsConfig, SslBlockForBothRemotes) {
  auto c = parse(R"(
ovs:
  remote: ssl:127.0.0.1:6640
  sbRemote: ssl:10.0.0.1:6642,ssl:10.0.0.2:6642
  ssl: {privateKeyFile: /k.pem, certificateFile: /c.pem, caCertFile: /ca.pem}
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->ssl, (OvsSslConfig{"/k.pem", "/c.pem", "/ca.pem"}));
  EXPECT_FALSE(OvsConfig{}.ssl.configured());
}

TEST(OvsConfig, SslErrorsNameTheField) {
  const auto error = [](const std::string& yaml) {
    auto c = parse(yaml);
    return c.ok() ? std::string("(ok)") : c.error().message;
  };
  EXPECT_NE(error("ovs: {remote: 'ssl:127.0.0.1:6640'}").find("ovs.remote"), std::string::npos);
  EXPECT_NE(error("ovs: {remote: 'ssl:127.0.0.1:6640'}").find("ovs.ssl"), std::string::npos);
  EXPECT_NE(error("ovs: {sbRemote: 'tcp:1.2.3.4:6642,ssl:1.2.3.5:6642'}").find("ovs.sbRemote"),
            std::string::npos);
  EXPECT_NE(error("ovs: {ssl: {privateKeyFile: /k, certificateFile: /c}}").find("caCertFile"),
            std::string::npos);
  EXPECT_NE(error("ovs: {ssl: {privateKeyFile: /k, certificateFile: /c, caCertFile: /a, x: 1}}")
                .find("ovs.ssl.x"),
            std::string::npos);
  EXPECT_NE(error("ovs: {ssl: {privateKeyFile: k.pem, certificateFile: /c, caCertFile: /a}}")
                .find("ovs.ssl.privateKeyFile"),
            std::string::npos);
}

TEST(IfaceName, Rules) {
  EXPECT_TRUE(isValidOvsIfaceName("br-ex"));
  EXPECT_TRUE(isValidOvsIfaceName("bond0.100"));
  EXPECT_TRUE(isValidOvsIfaceName("a23456789012345"));
  EXPECT_FALSE(isValidOvsIfaceName("a234567890123456"));
  EXPECT_FALSE(isValidOvsIfaceName(""));
  EXPECT_FALSE(isValidOvsIfaceName(".."));
  EXPECT_FALSE(isValidOvsIfaceName("br ex"));
  EXPECT_FALSE(isValidOvsIfaceName("br/ex"));
}

}  // namespace
}  // namespace okna::ovsdb
