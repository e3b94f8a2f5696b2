#include "placement/clouds_yaml.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace okna::placement {
namespace {

class CloudsYamlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "clouds-" + std::to_string(::getpid()) + ".yaml";
    std::ofstream(path_) << R"(clouds:
  pw:
    auth:
      auth_url: http://127.0.0.1:5000
      username: admin
      password: s3cret
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: internal
    cacert: /etc/ca.pem
  ac:
    auth_type: v3applicationcredential
    auth:
      auth_url: http://127.0.0.1:5000/v3
      application_credential_id: id1
      application_credential_secret: sec
    verify: false
  odd:
    auth_type: token
    auth: {auth_url: http://x}
)";
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(CloudsYamlTest, PasswordCloud) {
  auto r = loadCloud("pw", path_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->auth.type, "password");
  EXPECT_EQ(r->auth.username, "admin");
  EXPECT_EQ(r->auth.password, "s3cret");
  EXPECT_EQ(r->auth.projectDomainName, "Default");
  EXPECT_EQ(r->regionName, "RegionOne");
  EXPECT_EQ(r->interface, "internal");
  EXPECT_EQ(r->tls.caFile, "/etc/ca.pem");
  EXPECT_EQ(r->source.find("s3cret"), std::string::npos);
}

TEST_F(CloudsYamlTest, ApplicationCredentialCloud) {
  auto r = loadCloud("ac", path_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->auth.type, "v3applicationcredential");
  EXPECT_EQ(r->auth.applicationCredentialId, "id1");
  EXPECT_TRUE(r->tls.insecureSkipVerify);
  EXPECT_EQ(r->interface, "public") << "OpenStack's default interface";
}

TEST_F(CloudsYamlTest, Errors) {
  auto missing = loadCloud("nope", path_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cloud nope not found"), std::string::npos)
      << missing.error().message;
  auto odd = loadCloud("odd", path_);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("auth_type token is not supported"), std::string::npos);
}

TEST_F(CloudsYamlTest, ResolveFromConfigAndOverrides) {
  PlacementConfig c;
  c.cloud = "pw";
  c.cloudsFile = path_;
  c.endpointOverride = "http://placement:8778";
  c.regionName = "Ignored";
  auto r = resolveAuth(c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->regionName, "RegionOne") << "the cloud's region wins";
  EXPECT_EQ(r->endpointOverride, "http://placement:8778");

  PlacementConfig none;
  ::unsetenv("OS_CLOUD");
  auto missing = resolveAuth(none);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no credentials"), std::string::npos);
}

TEST_F(CloudsYamlTest, SearchPath) {
  ::setenv("OS_CLIENT_CONFIG_FILE", "/x/clouds.yaml", 1);
  auto p = cloudsYamlSearchPath("");
  ::unsetenv("OS_CLIENT_CONFIG_FILE");
  ASSERT_GE(p.size(), 3u);
  EXPECT_EQ(p.front(), "/x/clouds.yaml");
  EXPECT_EQ(p[1], "clouds.yaml");
  EXPECT_EQ(p.back(), "/etc/openstack/clouds.yaml");
  EXPECT_EQ(cloudsYamlSearchPath("/only.yaml"), std::vector<std::string>{"/only.yaml"});
}

}  // namespace
}  // namespace okna::placement
