// Placement and Keystone faults, end to end (issue 27's fault matrix): the real agent binary,
// the Node and its Pods from the fake API server, a REAL Keystone and a keystone-mode Placement
// (tests/fixtures/openstack), and between the agent and Placement a small fault-injecting proxy
// (tests/fixtures/openstack/fault_proxy.py, real HTTP) that answers 503 to everything (a 5xx
// storm), holds every request unanswered (a hung Placement), or forwards. Keystone revokes the
// very token the agent holds. Each time the Node's labels change during the fault; afterwards:
// the agent's attempts during the fault are at most what its backoff allows (counted by the
// proxy), it catches up, and the node's traits are exactly what its labels say at the end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <thread>

#include "tests/fakes/agent_process.h"
#include "tests/fakes/fake_apiserver_fixture.h"
#include "tests/integration/placement/harness.h"

namespace okna {
namespace {

using nlohmann::json;
using okna::testing::AgentProcess;
using okna::testing::FakeApiServer;
using okna::testing::Process;
using okna::testing::waitFor;
using namespace std::chrono_literals;

const std::string kData = ::okna::testing::kTestDataDir;
constexpr double kInitialMs = 200, kMaxMs = 2000, kRequestTimeoutS = 2;

// The most requests a reconciler can start in `windowMs` of failures: the first at once, then
// one after each failed attempt (which lasts `perAttemptMs` when it waits for its request to
// time out) and its backoff delay, every delay at least half its nominal value (core/backoff.h's
// jitter).
int maxAttempts(double windowMs, double perAttemptMs = 0) {
  int attempts = 1;
  double t = 0;
  for (int k = 0;; ++k) {
    t += perAttemptMs + 0.5 * std::min(kInitialMs * std::pow(2.0, k), kMaxMs);
    if (t > windowMs) return attempts;
    ++attempts;
  }
}

std::string shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

class AgentPlacementFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::placementInstalled() || !testing::keystoneInstalled())
      GTEST_SKIP() << "Debian's placement-api and keystone are not installed "
                      "(packaging/install-deps.sh)";
    dir_ = testing::makeTempDir("okna-placement-faults-");
    k_ = dir_ + "/k";
    p_ = dir_ + "/p";
    ASSERT_TRUE(
        testing::runScript(testing::kFixtures + "/start-keystone.sh " + k_, dir_ + "/k.out"))
        << testing::readFile(dir_ + "/k.out");
    ASSERT_TRUE(testing::runScript(testing::kFixtures + "/start-placement.sh " + p_ +
                                       " --keystone " + testing::readFile(k_ + "/url") +
                                       " --admin-password-file " + k_ +
                                       "/admin-password --token-cache-time -1",
                                   dir_ + "/p.out"))
        << testing::readFile(dir_ + "/p.out");
    proxy_ = std::make_unique<Process>(
        std::vector<std::string>{"/usr/bin/python3", testing::kFixtures + "/fault_proxy.py",
                                 "--upstream", testing::readFile(p_ + "/url"), "--ready-file",
                                 dir_ + "/proxy-url"},
        dir_ + "/proxy.log");
    ASSERT_TRUE(waitFor([&] { return std::filesystem::exists(dir_ + "/proxy-url"); }, 20s))
        << proxy_->log();
    proxyUrl_ = testing::readFile(dir_ + "/proxy-url");
    server_ = std::make_unique<FakeApiServer>(
        std::vector<std::string>{kData + "/lab-1.node.yaml", kData + "/lab-1.pods.json"});
  }

  void TearDown() override {
    if (HasFailure() && agent_) std::cerr << "---- agent log\n" << agent_->log();
    agent_.reset();
    proxy_.reset();
    server_.reset();
    if (dir_.empty()) return;
    testing::runScript(testing::kFixtures + "/stop.sh " + p_, dir_ + "/stop-p.out");
    testing::runScript(testing::kFixtures + "/stop.sh " + k_, dir_ + "/stop-k.out");
    std::filesystem::remove_all(dir_);
  }

  void startAgent() {
    const std::string config =
        "placement:\n"
        "  cloud: openkeel-test\n"
        "  cloudsFile: " +
        k_ + "/clouds.yaml\n  endpointOverride: " + proxyUrl_ +
        "\n"
        "  debounceSeconds: 0.2\n"
        "  stateFile: \"\"\n"
        "  resyncSeconds: 0\n"
        "  requestTimeoutSeconds: 2\n"
        "  backoff: {initialMs: 200, maxMs: 2000}\n"
        "kubernetes: {backoff: {initialMs: 100, maxMs: 1000}}\n";
    agent_ = std::make_unique<AgentProcess>(
        server_->dir(), config,
        std::vector<std::string>{"--node-name", "lab-1", "--kubeconfig", server_->kubeconfig(),
                                 "--context", "node-agent"});
  }

  json proxyStats() { return json::parse(shell("curl -sf " + proxyUrl_ + "/_fault/stats")); }
  void proxyMode(const std::string& query) {
    ASSERT_EQ(shell("curl -sf -o /dev/null -w '%{http_code}' -X POST '" + proxyUrl_ +
                    "/_fault/mode" + query + "'"),
              "200");
  }

  // A token of the fixture's admin, straight from Keystone (never through the proxy).
  std::string adminToken() {
    const std::string body =
        R"({"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"admin",)"
        R"("domain":{"name":"Default"},"password":")" +
        testing::readFile(k_ + "/admin-password") +
        R"("}}},"scope":{"project":{"name":"admin","domain":{"name":"Default"}}}}})";
    std::ofstream(dir_ + "/auth.json") << body;
    const std::string headers =
        shell("curl -sf -o /dev/null -D - -H 'Content-Type: application/json' --data @" + dir_ +
              "/auth.json " + testing::readFile(k_ + "/url") + "/v3/auth/tokens");
    std::filesystem::remove(dir_ + "/auth.json");
    const auto p = headers.find("X-Subject-Token: ");
    if (p == std::string::npos) return "";
    const auto e = headers.find_first_of("\r\n", p);
    return headers.substr(p + 17, e - p - 17);
  }

  // The node's traits, read from Placement directly as an operator.
  std::set<std::string> traits() {
    const std::string token = adminToken();
    const std::string placement = testing::readFile(p_ + "/url");
    const std::string h =
        "-H 'X-Auth-Token: " + token + "' -H 'OpenStack-API-Version: placement 1.39' ";
    const json rps =
        json::parse(shell("curl -sf " + h + "'" + placement + "/resource_providers?name=lab-1'"));
    if (rps["resource_providers"].empty()) return {};
    const std::string uuid = rps["resource_providers"][0]["uuid"];
    const json t =
        json::parse(shell("curl -sf " + h + placement + "/resource_providers/" + uuid + "/traits"));
    return t["traits"].get<std::set<std::string>>();
  }
  bool hasTrait(const std::string& t) { return traits().count(t) == 1; }

  void label(const std::string& trait, bool on) {
    const json patch = {
        {"metadata",
         {{"labels", {{"trait.openkeel.io/" + trait, on ? json("") : json(nullptr)}}}}}};
    ASSERT_EQ(server_->admin("PATCH", "/api/v1/nodes/lab-1", patch.dump()).status, 200);
  }

  std::string dir_, k_, p_, proxyUrl_;
  std::unique_ptr<Process> proxy_;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(AgentPlacementFaultsTest, StormsHangsAndARevokedTokenAreRetriedBoundedAndCaughtUp) {
  startAgent();
  ASSERT_TRUE(waitFor([&] { return hasTrait("COMPUTE_NODE"); }, 60s)) << agent_->log();
  const std::set<std::string> before = traits();

  // A 5xx storm of a few seconds (the fault's length, not a synchronisation), during which a
  // trait label is added.
  const auto storm = 5s;
  json s0 = proxyStats();
  const auto t0 = std::chrono::steady_clock::now();
  proxyMode("?status=503");
  label("CUSTOM_FAULT_STORM", true);
  std::this_thread::sleep_for(storm);
  json s1 = proxyStats();
  proxyMode("");
  const double stormMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const long faulted = s1["faulted"].get<long>() - s0["faulted"].get<long>();
  std::cout << "[ figure   ] 503 storm " << stormMs << " ms: " << faulted << " requests (bound "
            << maxAttempts(stormMs) << ")" << std::endl;
  EXPECT_GE(faulted, 2) << "the agent did not retry";
  EXPECT_LE(faulted, maxAttempts(stormMs)) << "a tight loop";
  EXPECT_TRUE(waitFor([&] { return hasTrait("CUSTOM_FAULT_STORM"); }, 30s)) << agent_->log();

  // A hung Placement: every request held unanswered; the agent's request timeout ends each one.
  // The storm's trait goes and another comes meanwhile.
  s0 = proxyStats();
  const auto t1 = std::chrono::steady_clock::now();
  proxyMode("?hang=1");
  label("CUSTOM_FAULT_STORM", false);
  label("CUSTOM_FAULT_HANG", true);
  std::this_thread::sleep_for(8s);  // the fault's length
  s1 = proxyStats();
  proxyMode("");
  const double hangMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  const long hung = s1["hung"].get<long>() - s0["hung"].get<long>();
  std::cout << "[ figure   ] hung " << hangMs << " ms: " << hung << " requests held (bound "
            << maxAttempts(hangMs, kRequestTimeoutS * 1000) << ")" << std::endl;
  EXPECT_GE(hung, 2) << "the agent did not time out and retry";
  EXPECT_LE(hung, maxAttempts(hangMs, kRequestTimeoutS * 1000)) << "a tight loop";
  EXPECT_TRUE(waitFor(
      [&] { return hasTrait("CUSTOM_FAULT_HANG") && !hasTrait("CUSTOM_FAULT_STORM"); }, 30s))
      << agent_->log();

  // Keystone revokes the token the agent holds: Placement refuses it (401), the agent renews
  // once and goes on.
  s0 = proxyStats();
  const std::string held = s0["lastToken"];
  ASSERT_FALSE(held.empty());
  const std::string admin = adminToken();
  ASSERT_NE(admin, held);
  ASSERT_EQ(shell("curl -s -o /dev/null -w '%{http_code}' -X DELETE -H 'X-Auth-Token: " + admin +
                  "' -H 'X-Subject-Token: " + held + "' " + testing::readFile(k_ + "/url") +
                  "/v3/auth/tokens"),
            "204");
  label("CUSTOM_FAULT_REVOKED", true);
  EXPECT_TRUE(waitFor([&] { return hasTrait("CUSTOM_FAULT_REVOKED"); }, 30s)) << agent_->log();
  s1 = proxyStats();
  EXPECT_GE(s1["statuses"].value("401", 0), 1) << s1.dump();
  EXPECT_NE(s1["lastToken"].get<std::string>(), held) << "the revoked token is still in use";
  EXPECT_EQ(s1["tokens"].get<int>(), s0["tokens"].get<int>() + 1) << "one renewal";

  // The node's traits at the end: what it had, plus the two labels still set.
  std::set<std::string> want = before;
  want.insert({"CUSTOM_FAULT_HANG", "CUSTOM_FAULT_REVOKED"});
  EXPECT_EQ(traits(), want);
  EXPECT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 30s))
      << agent_->get("/readyz?verbose").body;
}

}  // namespace
}  // namespace okna
