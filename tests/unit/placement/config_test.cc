#include "placement/config.h"

#include <gtest/gtest.h>

#include "core/yaml_field.h"

namespace okna::placement {
namespace {

core::Result<PlacementConfig> parse(const std::string& text) {
  return core::catchConfigErrors(
      [&] { return parsePlacementConfig(core::YamlField::root(YAML::Load(text), "agent.yaml")); });
}

TEST(PlacementConfigTest, Defaults) {
  auto c = parse("{}");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->enabled);
  EXPECT_FALSE(c->cpuAllocationRatio) << "unset: Placement's value is kept (Nova's rule)";
  EXPECT_FALSE(c->ramAllocationRatio);
  EXPECT_DOUBLE_EQ(c->initialCpuAllocationRatio, 4.0);
  EXPECT_DOUBLE_EQ(c->initialRamAllocationRatio, 1.0);
  EXPECT_EQ(c->capabilityTraits, defaultCapabilityTraits());
  EXPECT_EQ(c->debounce, std::chrono::seconds(30));
  EXPECT_EQ(c->reservedStep.vcpu, 1);
  EXPECT_EQ(c->reservedStep.memoryMb, 256);
  EXPECT_EQ(c->perVmMemoryOverheadMb, 256);
  EXPECT_EQ(c->hugepagesModel, HugepagesModel::NestedTrait);
  EXPECT_EQ(c->interface, "public");
}

TEST(PlacementConfigTest, FullSection) {
  auto c = parse(R"(
enabled: true
cloud: openkeel
cloudsFile: /etc/openstack/clouds.yaml
auth:
  type: v3applicationcredential
  authUrl: https://keystone.example/v3
  applicationCredentialId: abc
  applicationCredentialSecretFile: /run/secrets/appcred
regionName: RegionTwo
interface: internal
endpointOverride: http://placement:8778
cacert: /etc/ssl/ca.pem
verify: false
cpuAllocationRatio: 8
ramAllocationRatio: 1.5
initialCpuAllocationRatio: 16
capabilityTraits: [COMPUTE_IMAGE_TYPE_RAW]
debounceSeconds: 0.2
reservedStep: {vcpu: 2, memoryMb: 512}
perVmMemoryOverheadMb: 300
hugepagesModel: custom-class
stateFile: /tmp/state.json
resyncSeconds: 0
conflictRetries: 3
backoff: {initialMs: 10, maxMs: 100}
requestTimeoutSeconds: 5
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->auth.type, "v3applicationcredential");
  EXPECT_EQ(c->auth.applicationCredentialSecretFile, "/run/secrets/appcred");
  EXPECT_EQ(c->debounce, std::chrono::milliseconds(200));
  EXPECT_EQ(c->reservedStep.memoryMb, 512);
  EXPECT_EQ(c->hugepagesModel, HugepagesModel::CustomClass);
  EXPECT_FALSE(c->verify);
  EXPECT_EQ(c->resyncInterval.count(), 0);
  EXPECT_EQ(c->cpuAllocationRatio, 8.0);
  EXPECT_EQ(c->ramAllocationRatio, 1.5);
  EXPECT_DOUBLE_EQ(c->initialCpuAllocationRatio, 16);
  EXPECT_EQ(c->capabilityTraits, (std::vector<std::string>{"COMPUTE_IMAGE_TYPE_RAW"}));
}

TEST(PlacementConfigTest, ErrorsNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cpuAllocationRatio: 0", "cpuAllocationRatio: 0 is out of range"},
      {"capabilityTraits: [compute_node]", "\"compute_node\" is not a trait name"},
      {"interface: private", "interface: \"private\" is not one of: public, internal, admin"},
      {"hugepagesModel: flat", "hugepagesModel: \"flat\" is not one of"},
      {"auth: {type: password, authUrl: http://k/v3, username: u}",
       "auth: passwordFile is required"},
      {"auth: {type: none}", "endpointOverride"},
      {"debounce: 3", "debounce: unknown key"},
      {"auth: {password: secret}", "auth.password: unknown key"},
      {"availabilityZones: {computeEndpointOverride: nova:8774}",
       "availabilityZones.computeEndpointOverride: \"nova:8774\" is not an http(s) URL"},
      {"availabilityZones: {label: x}", "availabilityZones.label: unknown key"},
  };
  for (const auto& [text, want] : cases) {
    auto c = parse(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.error().message.find(want), std::string::npos)
        << text << " -> " << c.error().message;
  }
}

}  // namespace
}  // namespace okna::placement
