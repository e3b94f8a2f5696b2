// The auth path against a REAL Keystone (Debian keystone 22, sqlite) and a keystone-mode
// Placement, both started by the fixture scripts: password and application-credential tokens from
// the fixture's clouds.yaml and from the agent config with the secret in a file, the endpoint
// from the token's catalog, and one token reused across pushes.

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "core/clock.h"
#include "core/curl_http_client.h"
#include "placement/keystone.h"
#include "placement/reconciler.h"
#include "tests/fakes/placement_plan.h"
#include "tests/integration/placement/counting_http_client.h"
#include "tests/integration/placement/harness.h"

namespace okna::placement {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class KeystoneIT : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::placementInstalled() || !testing::keystoneInstalled()) return;
    dir_ = new std::string(testing::makeTempDir("okna-keystone-it-"));
    const std::string k = *dir_ + "/k";
    if (!testing::runScript(testing::kFixtures + "/start-keystone.sh " + k, *dir_ + "/k.out")) {
      std::cerr << testing::readFile(*dir_ + "/k.out") << "\n";
      return;
    }
    if (!testing::runScript(testing::kFixtures + "/start-placement.sh " + *dir_ + "/p --keystone " +
                                testing::readFile(k + "/url") + " --admin-password-file " + k +
                                "/admin-password",
                            *dir_ + "/p.out"))
      std::cerr << testing::readFile(*dir_ + "/p.out") << "\n";
  }
  static void TearDownTestSuite() {
    if (dir_ == nullptr) return;
    testing::runScript(testing::kFixtures + "/stop.sh " + *dir_ + "/p", *dir_ + "/stop-p.out");
    testing::runScript(testing::kFixtures + "/stop.sh " + *dir_ + "/k", *dir_ + "/stop-k.out");
    std::filesystem::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    if (!testing::placementInstalled() || !testing::keystoneInstalled())
      GTEST_SKIP()
          << "Debian's placement-api and keystone are not installed (packaging/install-deps.sh)";
    ASSERT_TRUE(std::filesystem::exists(*dir_ + "/p/url"))
        << "the Keystone/Placement fixtures did not start";
    name_ = "ks-" + testing::randomUuid().substr(0, 8);
    uid_ = testing::randomUuid();
    config_.debounce = 200ms;
    config_.resyncInterval = 0s;
    config_.stateFile = "";
    config_.cloudsFile = *dir_ + "/k/clouds.yaml";
  }

  // An admin token of our own, to check what the agent did.
  std::string adminToken() {
    PlacementConfig c = config_;
    c.cloud = "openkeel-test";
    auto resolved = resolveAuth(c);
    EXPECT_TRUE(resolved.ok());
    KeystoneAuth auth(http_, clock_, *resolved, 30s);
    std::optional<core::Result<Session>> s;
    boost::asio::co_spawn(
        io_, [&]() -> Task<void> { s = co_await auth.session(false); }, boost::asio::detached);
    testing::runUntil(io_, [&] { return s.has_value(); });
    EXPECT_TRUE(s && s->ok());
    return s && s->ok() ? (*s)->token : "";
  }

  void pushAndCheck(PlacementConfig c) {
    auto r = std::make_unique<Reconciler>(io_, clock_, counting_, std::move(c), metrics_, health_);
    r->setActive(true);
    auto node = testing::makeNode(name_, uid_);
    okna::testing::planAndUpdate(*r, node, {testing::makePod(name_, "a", "1", "1Gi")});
    ASSERT_TRUE(testing::runUntil(io_, [&] { return r->successfulPasses() >= 1 && !r->busy(); }))
        << "failed passes: " << r->failedPasses() << " " << health_.readiness().at(0).detail;
    // Another push with the same token: one token request in all.
    okna::testing::planAndUpdate(*r, node, {testing::makePod(name_, "a", "3", "1Gi")});
    ASSERT_TRUE(testing::runUntil(io_, [&] { return r->successfulPasses() >= 2 && !r->busy(); }));
    EXPECT_EQ(counting_.count("POST /v3/auth/tokens"), 1u);
    // Placement was found in the catalog (the fixture registered it there).
    EXPECT_GE(counting_.count("PUT /resource_providers/" + uid_ + "/inventories"), 2u);
    testing::Operator op(io_, http_, testing::readFile(*dir_ + "/p/url"), adminToken());
    const json inv = op.call("GET", "/resource_providers/" + uid_ + "/inventories").body;
    EXPECT_EQ(inv["inventories"]["VCPU"]["reserved"], 3) << inv.dump();
  }

  static std::string* dir_;
  boost::asio::io_context io_;
  core::AsioClock clock_{io_};
  core::CurlHttpClient http_{io_};
  testing::CountingHttpClient counting_{http_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  PlacementConfig config_;
  std::string name_;
  std::string uid_;
};

std::string* KeystoneIT::dir_ = nullptr;

TEST_F(KeystoneIT, PasswordFromCloudsYaml) {
  PlacementConfig c = config_;
  c.cloud = "openkeel-test";
  pushAndCheck(c);
}

TEST_F(KeystoneIT, ApplicationCredentialFromCloudsYaml) {
  PlacementConfig c = config_;
  c.cloud = "openkeel-test-appcred";
  pushAndCheck(c);
}

TEST_F(KeystoneIT, InlineConfigWithPasswordFile) {
  PlacementConfig c = config_;
  c.cloudsFile.clear();
  ::unsetenv("OS_CLOUD");
  c.auth.type = "password";
  c.auth.authUrl = testing::readFile(*dir_ + "/k/url");  // "/v3" is appended
  c.auth.username = "admin";
  c.auth.passwordFile = *dir_ + "/k/admin-password";
  c.auth.projectName = "admin";
  c.regionName = "RegionOne";
  pushAndCheck(c);
}

TEST_F(KeystoneIT, WrongPasswordIsNotReadyWithAClearReason) {
  const std::string bad = *dir_ + "/wrong-password";
  std::ofstream(bad) << "not-the-password\n";
  PlacementConfig c = config_;
  c.cloudsFile.clear();
  c.auth.authUrl = testing::readFile(*dir_ + "/k/url");
  c.auth.username = "admin";
  c.auth.passwordFile = bad;
  c.auth.projectName = "admin";
  Reconciler r(io_, clock_, counting_, c, metrics_, health_);
  r.setActive(true);
  okna::testing::planAndUpdate(r, testing::makeNode(name_, uid_), {});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return r.failedPasses() >= 1; }));
  const std::string detail = health_.readiness().at(0).detail;
  EXPECT_NE(detail.find("token request failed: HTTP 401"), std::string::npos) << detail;
  EXPECT_EQ(detail.find("not-the-password"), std::string::npos);
}

}  // namespace
}  // namespace okna::placement
