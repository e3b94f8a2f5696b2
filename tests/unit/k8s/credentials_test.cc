#include "k8s/credentials.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace okna::k8s {
namespace {

namespace fs = std::filesystem;

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("okna-cred-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name) << content;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(CredentialsTest, KubeconfigWithDataAndRelativePaths) {
  write("token", "secret-token\n");
  const auto path = write("config", R"(
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
- name: c2
  cluster: {server: "https://10.0.0.1", certificate-authority: ca.crt, insecure-skip-tls-verify: true}
users:
- name: u1
  user: {tokenFile: token, client-certificate: c.crt, client-key: /abs/c.key}
contexts:
- name: dev
  context: {cluster: c1, user: u1}
- name: other
  context: {cluster: c2, user: u1}
)");
  auto c = kubeconfigConfig(path);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->tls.caPem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(c->tls.clientCertFile, (dir_ / "c.crt").string());
  EXPECT_EQ(c->tls.clientKeyFile, "/abs/c.key");
  EXPECT_EQ(c->token.current(), "secret-token");

  auto other = kubeconfigConfig(path, "other");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->tls.insecureSkipVerify);
  EXPECT_EQ(other->tls.caFile, (dir_ / "ca.crt").string());
}

TEST_F(CredentialsTest, KubeconfigErrorsNameWhatIsMissing) {
  const auto path = write("config", "current-context: x\ncontexts: []\n");
  auto c = kubeconfigConfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("context \"x\" not found"), std::string::npos);
  const auto exec = write("exec", R"(
current-context: a
clusters: [{name: c, cluster: {server: "https://h"}}]
users: [{name: u, user: {exec: {command: aws}}}]
contexts: [{name: a, context: {cluster: c, user: u}}]
)");
  auto e = kubeconfigConfig(exec);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("exec and auth-provider plugins are not supported"),
            std::string::npos);
}

TEST_F(CredentialsTest, TokenFileIsReReadWhenItRotates) {
  const auto path = write("token", "one");
  auto t = TokenSource::file(path);
  EXPECT_EQ(t.current(), "one");
  write("token",
        "second-token");  // a different size is enough to notice, even within one mtime tick
  EXPECT_EQ(t.current(), "second-token");
  fs::remove(path);
  EXPECT_EQ(t.current(), "second-token");  // a missing file keeps the last good token
}

TEST_F(CredentialsTest, InCluster) {
  const auto token = write("token", "sa-token");
  const auto ca = write("ca.crt", "pem");
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = inClusterConfig({token, ca});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token.current(), "sa-token");
  EXPECT_EQ(c->tls.caFile, ca);
  ::setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  EXPECT_EQ(inClusterConfig({token, ca})->server, "https://[fd00::1]:443");
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  auto missing = inClusterConfig({token, ca});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

}  // namespace
}  // namespace okna::k8s
