// The agent binary against the fake kube-apiserver: informers, roles, readiness, 410 and
// dropped watches, shutdown.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/fakes/agent_process.h"
#include "tests/fakes/fake_apiserver_fixture.h"
#include "tests/support/test_paths.h"

namespace okna {
namespace {

using nlohmann::json;
using okna::testing::AgentProcess;
using okna::testing::FakeApiServer;
using okna::testing::waitFor;
using namespace std::chrono_literals;

const std::string kData = ::okna::testing::kTestDataDir;

// Short backoffs so that retries happen within the test; watch timeouts long enough that a
// normal server-side timeout does not interfere. Placement off: the agent watches its Node only.
const char* kNodeOnlyConfig = R"(
kubernetes:
  watchTimeoutSeconds: {min: 60, max: 90}
  backoff: {initialMs: 100, maxMs: 800}
logging: {level: debug}
placement: {enabled: false}   # these tests are about the Kubernetes side
)";

// Placement on, so that the agent also watches the node's Pods (what most tests here are about);
// the compute role comes from a label lab-1 does not carry, so Placement is never needed and the
// missing credentials do not keep the agent unready.
const char* kConfig = R"(
kubernetes:
  watchTimeoutSeconds: {min: 60, max: 90}
  backoff: {initialMs: 100, maxMs: 800}
logging: {level: debug}
nodeRoles: {roles: {compute: {label: okna-test/compute-never-set}}}
placement: {cloudsFile: /nonexistent/okna-test/clouds.yaml}
)";

// The same, with informers reported failing after 2 s instead of 60.
std::string failFastConfig() {
  std::string c = kConfig;
  c.insert(c.find("kubernetes:\n") + 12, "  failingAfterSeconds: 2\n");
  return c;
}

// The metric families the README's "Health, readiness, metrics" section lists for a component
// ("okna_k8s_informer_{a,b}_total" expands to two names; "{role}" is a label, not a choice).
std::vector<std::string> readmeMetricFamilies(const std::string& prefix) {
  std::ifstream in(std::string(::okna::testing::kSourceDir) + "/README.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const auto from = text.find("## Health, readiness, metrics");
  const auto to = text.find("\n## ", from + 1);
  const std::string section = text.substr(from, to - from);
  std::vector<std::string> out;
  const std::regex nameRe("`(" + prefix + R"([a-z_]*)(\{([a-z_,]+)\})?([a-z_]*))");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), nameRe);
       it != std::sregex_iterator(); ++it) {
    const std::string head = (*it)[1], choices = (*it)[3], tail = (*it)[4];
    if (choices.find(',') == std::string::npos) {
      out.push_back(head + (choices.empty() ? tail : ""));
      continue;
    }
    std::stringstream cs(choices);
    for (std::string c; std::getline(cs, c, ',');) out.push_back(head + c + tail);
  }
  return out;
}

class AgentK8sTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/bin/python3"))
      GTEST_SKIP() << "/usr/bin/python3 is not installed";
    server_ = std::make_unique<FakeApiServer>(
        std::vector<std::string>{kData + "/lab-1.node.yaml", kData + "/lab-1.pods.json"});
  }

  std::unique_ptr<AgentProcess> startAgent(const std::string& config = kConfig) {
    return std::make_unique<AgentProcess>(
        server_->dir(), config,
        std::vector<std::string>{"--node-name", "lab-1", "--kubeconfig", server_->kubeconfig(),
                                 "--context", "node-agent"});
  }

  static bool hasRole(const AgentProcess& a, const std::string& role) {
    const json plan = a.plan();
    if (!plan.contains("roles")) return false;
    for (const auto& r : plan["roles"])
      if (r == role) return true;
    return false;
  }

  // The fake API server again, with lab-1 only and a ClusterRole for the agents that grants
  // nodes get/list/watch and nothing on pods.
  void restartWithNodesOnlyRbac() {
    server_.reset();
    const std::string rbac = (std::filesystem::temp_directory_path() /
                              ("okna-rbac-" + std::to_string(::getpid()) + ".json"))
                                 .string();
    std::ofstream(rbac)
        << R"({"node-agents": [{"resources": ["nodes"], "verbs": ["get", "list", "watch"]}]})";
    server_ = std::make_unique<FakeApiServer>(std::vector<std::string>{kData + "/lab-1.node.yaml"},
                                              std::vector<std::string>{"--rbac", rbac});
    std::filesystem::remove(rbac);
  }

  json requests() const { return json::parse(server_->control("GET", "requests").body); }

  // The watches open at the server; -1 while the control API is unreachable (refuse window).
  long openWatches() const {
    auto r = server_->control("GET", "watches");
    return r.status == 200 ? static_cast<long>(json::parse(r.body).size()) : -1;
  }

  std::unique_ptr<FakeApiServer> server_;
};

TEST_F(AgentK8sTest, ReadyOnlyAfterBothInformersSynced) {
  // Pods cannot be listed for now: the node informer syncs, the pod informer cannot.
  ASSERT_EQ(server_->control("POST", "fail-next?count=1000&status=503&path=/api/v1/pods").status,
            200);
  auto agent = startAgent();
  ASSERT_TRUE(waitFor(
      [&] {
        return agent->get("/readyz?verbose").body.find("[+]node-informer ok") != std::string::npos;
      },
      20s))
      << agent->log();
  auto notReady = agent->get("/readyz?verbose");
  EXPECT_EQ(notReady.status, 503);
  EXPECT_NE(notReady.body.find("[-]pod-informer"), std::string::npos) << notReady.body;
  EXPECT_EQ(agent->get("/healthz").status, 200);

  ASSERT_EQ(server_->control("DELETE", "fail-next").status, 200);
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  EXPECT_EQ(agent->get("/readyz").body, "ok");
}

TEST_F(AgentK8sTest, RoleChangeOnLabelEditReachesTheAgent) {
  auto agent = startAgent(kNodeOnlyConfig);
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  EXPECT_TRUE(hasRole(*agent, "compute"));
  EXPECT_FALSE(hasRole(*agent, "containers"));

  auto r = server_->admin(
      "PATCH", "/api/v1/nodes/lab-1",
      R"({"metadata":{"labels":{"node-role.openkeel.io/containers":"","node-role.openkeel.io/compute":null}}})");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(
      waitFor([&] { return hasRole(*agent, "containers") && !hasRole(*agent, "compute"); }, 10s))
      << agent->log();
  EXPECT_NE(
      agent->log().find(
          "roles: compute,controlPlane,network,storage -> containers,controlPlane,network,storage"),
      std::string::npos)
      << agent->log();

  // A role label with a value grants nothing, and the agent says why.
  server_->admin("PATCH", "/api/v1/nodes/lab-1",
                 R"({"metadata":{"labels":{"node-role.openkeel.io/containers":"yes"}}})");
  ASSERT_TRUE(waitFor([&] { return !hasRole(*agent, "containers"); }, 10s));
  const json plan = agent->plan();
  ASSERT_EQ(plan["warnings"].size(), 1u);
  EXPECT_NE(plan["warnings"][0].get<std::string>().find("must have the empty value"),
            std::string::npos);
}

TEST_F(AgentK8sTest, ForcedGoneLeadsToRelistWithoutLosingEvents) {
  auto agent = startAgent();
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 10s));
  server_->control("DELETE", "requests");
  // The relist after the 410 fails twice, and the node changes in that gap: no watch is open,
  // so only the relist can bring the change.
  server_->control("POST", "fail-next?count=2&status=503&path=/api/v1/nodes&method=GET");
  ASSERT_EQ(server_->control("POST", "expire-watches").status, 200);
  ASSERT_EQ(server_
                ->admin("PATCH", "/api/v1/nodes/lab-1",
                        R"({"metadata":{"labels":{"node-role.openkeel.io/provisioning":""}}})")
                .status,
            200);
  ASSERT_TRUE(waitFor([&] { return hasRole(*agent, "provisioning"); }, 20s)) << agent->log();

  // The requests: LISTs (not watches from an old resourceVersion) came after the expiry.
  int nodeLists = 0;
  for (const auto& req : requests())
    if (req["path"] == "/api/v1/nodes" && !req["query"].contains("watch")) ++nodeLists;
  EXPECT_GE(nodeLists, 3) << requests().dump();  // two failed, one successful
  EXPECT_GE(agent->metric(R"(okna_k8s_informer_relists_total{reason="expired",resource="nodes"})"),
            1);
  EXPECT_GE(agent->metric(R"(okna_k8s_informer_relists_total{reason="expired",resource="pods"})"),
            1);
  // And the agent watches again.
  EXPECT_TRUE(waitFor([&] { return openWatches() == 2; }, 20s));
}

TEST_F(AgentK8sTest, DroppedWatchReconnectsWithBackoff) {
  auto agent = startAgent();
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 10s));
  std::map<std::string, long> rvBefore;  // by resource
  for (const auto& w : json::parse(server_->control("GET", "watches").body))
    rvBefore[w["resource"]] = std::stol(w["query"].value("resourceVersion", "0"));
  server_->control("DELETE", "requests");

  // The API server goes away: open watches cut, new connections refused for a while.
  ASSERT_EQ(server_->control("POST", "refuse?seconds=3&drop=1").status, 200);
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 30s)) << agent->log();

  // The retries waited longer each time (capped exponential backoff with jitter).
  const std::string log = agent->log();
  const std::regex retryRe(R"(nodes informer: watch: .*; retrying in (\d+) ms)");
  std::vector<long> delays;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), retryRe);
       it != std::sregex_iterator(); ++it)
    delays.push_back(std::stol((*it)[1]));
  ASSERT_GE(delays.size(), 2u) << log;
  for (size_t i = 1; i < delays.size(); ++i) {
    EXPECT_GE(delays[i], std::min(delays[i - 1], 400L))
        << "delays must not shrink below the cap's jitter range";
    EXPECT_LE(delays[i], 800) << "capped at backoff.maxMs";
  }
  // The new watches resumed from the resourceVersion they had (no relist needed: the window was
  // not lost): no LIST since the outage, and watches from an RV no older than the old one.
  ASSERT_EQ(rvBefore.size(), 2u);
  for (const auto& w : json::parse(server_->control("GET", "watches").body)) {
    const std::string rv = w["query"].value("resourceVersion", "");
    ASSERT_FALSE(rv.empty()) << w.dump();
    EXPECT_GT(rvBefore.at(w["resource"]), 0) << w.dump();
    EXPECT_EQ(std::stol(rv), rvBefore.at(w["resource"])) << "resumed where it was: " << w.dump();
  }
  for (const auto& req : requests())
    EXPECT_TRUE(req["query"].contains("watch")) << "a LIST after the outage: " << req.dump();
  EXPECT_EQ(agent->metric(R"(okna_k8s_informer_relists_total{reason="expired",resource="nodes"})"),
            0);
  EXPECT_EQ(agent->get("/readyz").status, 200);
}

TEST_F(AgentK8sTest, ApiServerRestartAsARealOneIsFollowedByACachedRelist) {
  auto agent = startAgent();
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 10s));
  server_->control("DELETE", "requests");
  // Watches end cleanly, connections are refused for 2 s, the new cache starts past every RV the
  // agent has seen.
  const json restart = json::parse(server_->control("POST", "restart?seconds=2").body);
  ASSERT_EQ(restart["ended"], 2);
  const long windowStart = restart["windowStart"];
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 30s)) << agent->log();
  for (const auto& w : json::parse(server_->control("GET", "watches").body))
    EXPECT_GE(std::stol(w["query"]["resourceVersion"].get<std::string>()), windowStart) << w.dump();

  // Per resource: a watch from the old RV (answered 200 + ERROR 410), then one LIST served from
  // the watch cache ("not older than" the old RV), never a quorum read from etcd.
  for (const std::string path : {"/api/v1/nodes", "/api/v1/pods"}) {
    std::vector<json> lists;
    for (const auto& req : requests())
      if (req["path"] == path && !req["query"].contains("watch")) lists.push_back(req);
    ASSERT_EQ(lists.size(), 1u) << path << ": " << requests().dump();
    ASSERT_TRUE(lists[0]["query"].contains("resourceVersion")) << lists[0].dump();
    EXPECT_LT(std::stol(lists[0]["query"]["resourceVersion"].get<std::string>()), windowStart);
    EXPECT_FALSE(lists[0]["query"].contains("limit")) << "a limit would make it read etcd";
  }
  EXPECT_EQ(agent->metric(R"(okna_k8s_informer_relists_total{reason="expired",resource="nodes"})"),
            1);
  EXPECT_EQ(agent->metric(R"(okna_k8s_informer_relists_total{reason="expired",resource="pods"})"),
            1);
  EXPECT_EQ(agent->metric(
                R"(okna_k8s_informer_errors_total{reason="watch-error-event",resource="pods"})"),
            0);
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  ASSERT_EQ(server_
                ->admin("PATCH", "/api/v1/nodes/lab-1",
                        R"({"metadata":{"labels":{"node-role.openkeel.io/provisioning":""}}})")
                .status,
            200);
  EXPECT_TRUE(waitFor([&] { return hasRole(*agent, "provisioning"); }, 10s)) << agent->log();
}

// The plan is computed once and shown as it is: the live /debug/plan without its "appliers" is
// what --dry-run prints for the same Node and Pods (here with Placement planned: the reservation
// from the pods), and the appliers' own state sits next to it.
TEST_F(AgentK8sTest, LivePlanWithoutTheAppliersIsTheDryRunOfTheSameNodeAndPods) {
  std::string config = kNodeOnlyConfig;
  config.replace(config.find("placement: {enabled: false}"), 27,
                 "placement: {cloud: okc9-no-such-cloud}");
  auto agent = startAgent(config);
  ASSERT_TRUE(waitFor([&] { return agent->plan().contains("placement"); }, 20s)) << agent->log();
  json live = agent->plan();
  ASSERT_TRUE(live.contains("appliers")) << live.dump(2);
  EXPECT_EQ(live["appliers"]["placement"]["waitingForPods"], false);
  EXPECT_EQ(live["appliers"]["placement"]["mode"], "idle") << "no credentials: never active";
  live.erase("appliers");

  const std::string out = server_->dir() + "/dry-run.json";
  const std::string command = std::string(::okna::testing::kBinaryDir) +
                              "/agent/openkeel-node-agent --dry-run --config " + server_->dir() +
                              "/agent.yaml --node-file " + kData + "/lab-1.node.yaml --pods-file " +
                              kData + "/lab-1.pods.json --output json > " + out;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(out);
  const json dryRun = json::parse(in);
  EXPECT_EQ(dryRun["placement"]["inventories"]["VCPU"]["reserved"],
            live["placement"]["inventories"]["VCPU"]["reserved"]);
  EXPECT_EQ(live, dryRun) << "live:\n" << live.dump(2) << "\ndry run:\n" << dryRun.dump(2);
}

TEST_F(AgentK8sTest, SigtermStopsCleanly) {
  auto agent = startAgent();
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  agent->process().signal(SIGTERM);
  auto status = agent->process().waitExit(5s);
  ASSERT_TRUE(status.has_value()) << "the agent did not exit after SIGTERM";
  EXPECT_EQ(*status, 0);
  EXPECT_NE(agent->log().find("host state is left in place"), std::string::npos);
}

TEST_F(AgentK8sTest, WatchDeniedAfterSyncShowsInReadyzAndMetricsThenRecovers) {
  auto agent = startAgent(failFastConfig());
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 10s));
  EXPECT_EQ(agent->metric(R"(okna_k8s_informer_failing{resource="pods"})"), 0);
  // From now on the pods may not be watched (nor listed); the open watches end.
  ASSERT_EQ(
      server_->control("POST", "fail-next?count=100000&status=403&path=/api/v1/pods&method=GET")
          .status,
      200);
  ASSERT_EQ(server_->control("POST", "drop-watches").status, 200);
  ASSERT_TRUE(waitFor(
      [&] {
        return agent->get("/readyz?verbose").body.find("[-]pod-informer") != std::string::npos;
      },
      20s))
      << agent->log();
  const auto verbose = agent->get("/readyz?verbose");
  EXPECT_EQ(verbose.status, 503);
  EXPECT_NE(verbose.body.find("failing for"), std::string::npos) << verbose.body;
  EXPECT_NE(verbose.body.find("HTTP 403 Forbidden on watch pods"), std::string::npos)
      << verbose.body;
  EXPECT_NE(verbose.body.find("[+]node-informer"), std::string::npos) << verbose.body;
  EXPECT_EQ(agent->metric(R"(okna_k8s_informer_failing{resource="pods"})"), 1);
  EXPECT_EQ(agent->get("/healthz").status, 200) << "not ready, but alive";

  // The cause goes: the agent recovers by itself, and sees a pod created meanwhile.
  ASSERT_EQ(server_->control("DELETE", "fail-next").status, 200);
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  EXPECT_EQ(agent->metric(R"(okna_k8s_informer_failing{resource="pods"})"), 0);
}

TEST_F(AgentK8sTest, EveryMetricTheReadmeListsIsExportedFromTheStart) {
  // Nothing has happened yet: the API server answers nothing but 503.
  ASSERT_EQ(server_->control("POST", "fail-next?count=100000&status=503&path=/api").status, 200);
  auto agent = startAgent();
  ASSERT_TRUE(waitFor([&] { return agent->adminGet("/metrics").status == 200; }, 20s))
      << agent->log();
  const std::string text = agent->adminGet("/metrics").body;
  std::vector<std::string> families = readmeMetricFamilies("okna_k8s_");
  for (const auto& f : readmeMetricFamilies("okna_agent_")) families.push_back(f);
  ASSERT_GE(families.size(), 10u);
  for (const auto& family : families) {
    const std::regex sample("\n" + family + R"((_bucket|_count|_sum)?(\{[^}]*\})? 0\n)");
    EXPECT_TRUE(std::regex_search(text, sample)) << family << " is not exported at 0:\n" << text;
  }
  for (const auto& role :
       {"compute", "network", "controlPlane", "storage", "containers", "provisioning"})
    EXPECT_EQ(agent->metric(std::string(R"(okna_agent_role{role=")") + role + "\"}"), 0) << role;
}

TEST_F(AgentK8sTest, MissingRbacIsReportedByName) {
  // A token whose ClusterRole lacks pods: the agent stays unready and says which permission.
  restartWithNodesOnlyRbac();
  auto agent = startAgent();
  ASSERT_TRUE(waitFor(
      [&] { return agent->get("/readyz?verbose").body.find("RBAC") != std::string::npos; }, 20s))
      << agent->log();
  const std::string body = agent->get("/readyz?verbose").body;
  EXPECT_NE(body.find("needs verb \"list\" on resource \"pods\" at the cluster scope"),
            std::string::npos)
      << body;
  EXPECT_EQ(agent->get("/readyz").status, 503);
}

// Issue 27 (fault matrix, Kubernetes API): throttled with 429 and a Retry-After longer than the
// agent's own backoff (800 ms here), the informer waits what the server asks, every time (no
// tight loop), and a label change made meanwhile is there once the server answers again.
TEST_F(AgentK8sTest, TooManyRequestsWaitsTheRetryAfterAndMissesNoChange) {
  auto agent = startAgent();
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 10s));
  ASSERT_EQ(server_
                ->control("POST",
                          "fail-next?count=100000&status=429&retryAfter=3&path=/api/v1/nodes&"
                          "method=GET")
                .status,
            200);
  server_->control("DELETE", "requests");
  ASSERT_EQ(server_->control("POST", "drop-watches").status, 200);
  // The change the agent must not miss: made while it is throttled.
  auto r = server_->admin("PATCH", "/api/v1/nodes/lab-1",
                          R"({"metadata":{"labels":{"node-role.openkeel.io/containers":""}}})");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto nodeGets = [&] {
    std::vector<double> t;
    for (const auto& req : requests())
      if (req["path"] == "/api/v1/nodes" && req["method"] == "GET") t.push_back(req["t"]);
    return t;
  };
  ASSERT_TRUE(waitFor([&] { return nodeGets().size() >= 3; }, 20s)) << requests().dump();
  const auto t = nodeGets();
  for (size_t i = 1; i < t.size(); ++i)
    EXPECT_GE(t[i] - t[i - 1], 2.9)
        << "request " << i << " came before the Retry-After: " << requests().dump();
  EXPECT_FALSE(hasRole(*agent, "containers")) << "not seen yet: the server has not answered";

  ASSERT_EQ(server_->control("DELETE", "fail-next").status, 200);
  ASSERT_TRUE(waitFor([&] { return hasRole(*agent, "containers"); }, 20s)) << agent->log();
  EXPECT_EQ(agent->get("/readyz").status, 200);
}

// Issue 27 (fault matrix, Kubernetes API): the API server's certificate and CA rotate (the
// kubelet updates a projected ca.crt in place). The connections open at the time keep working;
// the next ones must verify against the new CA, read from the file again, not a cached copy.
TEST_F(AgentK8sTest, RotatedServerCertificateAndCaAreFollowed) {
  auto agent = startAgent();
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 10s));
  ASSERT_EQ(server_->control("POST", "rotate-tls").status, 200);
  // Every connection closes (a second of refusal, watches dropped, kept-alive connections closed
  // at their next request): what follows is new TLS handshakes only, with the new certificate.
  ASSERT_EQ(server_->control("POST", "refuse?seconds=1&drop=1").status, 200);
  // (Our own client is refused too until then.)
  ASSERT_TRUE(waitFor(
      [&] {
        return server_
                   ->admin("PATCH", "/api/v1/nodes/lab-1",
                           R"({"metadata":{"labels":{"node-role.openkeel.io/containers":""}}})")
                   .status == 200;
      },
      10s));
  ASSERT_TRUE(waitFor([&] { return hasRole(*agent, "containers"); }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 10s)) << agent->log();
  EXPECT_EQ(agent->get("/readyz").status, 200);
}

// Issue 27 (fault matrix, Kubernetes API): the service account token rotates: the old one is
// refused (401) once the file holds the new one; the agent reads the file again and goes on.
TEST_F(AgentK8sTest, RotatedTokenFileIsReadAgainAfterA401) {
  const std::string tokenFile = server_->dir() + "/token";
  std::ofstream(tokenFile) << FakeApiServer::kAgentToken;
  const std::string kubeconfig = server_->dir() + "/token-kubeconfig";
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                            << "    server: " << server_->url() << "\n"
                            << "    certificate-authority: " << server_->caFile() << "\n"
                            << "users:\n- name: agent\n  user:\n    tokenFile: " << tokenFile
                            << "\n"
                            << "contexts:\n- name: agent\n  context: {cluster: fake, user: agent}\n"
                            << "current-context: agent\n";
  auto agent = std::make_unique<AgentProcess>(
      server_->dir(), kConfig,
      std::vector<std::string>{"--node-name", "lab-1", "--kubeconfig", kubeconfig});
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 10s));

  ASSERT_EQ(
      server_->control("POST", "token?user=node-agent&token=rotated-token-2&groups=node-agents")
          .status,
      200);
  {
    std::ofstream out(tokenFile + ".new");
    out << "rotated-token-2";
  }
  std::filesystem::rename(tokenFile + ".new", tokenFile);
  ASSERT_EQ(
      server_->control("DELETE", std::string("token?token=") + FakeApiServer::kAgentToken).status,
      200);
  ASSERT_EQ(server_->control("POST", "drop-watches").status, 200);
  auto r = server_->admin("PATCH", "/api/v1/nodes/lab-1",
                          R"({"metadata":{"labels":{"node-role.openkeel.io/containers":""}}})");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(waitFor([&] { return hasRole(*agent, "containers"); }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  server_->control("DELETE", "requests");
  ASSERT_TRUE(waitFor([&] { return openWatches() == 2; }, 10s));
  for (const auto& req : requests()) EXPECT_EQ(req["status"], 200) << req.dump();
}

// A Pod bound to the node, its size chosen by its author: `padding` bytes of annotation (which
// the agent never reads).
std::string podOnLab1(const std::string& name, std::size_t padding) {
  return json{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "tenant"},
        {"annotations", {{"pad", std::string(padding, 'p')}}}}},
      {"spec",
       {{"nodeName", "lab-1"},
        {"containers",
         {{{"name", "c"}, {"image", "i"}, {"resources", {{"requests", {{"cpu", "10m"}}}}}}}}}}}
      .dump();
}

// Whoever may schedule pods onto the node decides their size: the agent keeps of each the fields
// it reads, skips (and says so) one over the limit of one object (1 MiB), in the LIST as in the
// watch, and keeps running and ready; what its store holds stays small however large the pods.
TEST_F(AgentK8sTest, LargePodsAreTrimmedAndAnOversizedOneIsSkipped) {
  constexpr std::size_t kOverLimit = (1u << 20) + 200000;
  auto created = server_->admin("POST", "/api/v1/namespaces/tenant/pods",
                                podOnLab1("huge-listed", kOverLimit), "application/json");
  ASSERT_EQ(created.status, 201) << created.body;
  auto agent = startAgent();
  const std::string skipped = R"(okna_k8s_informer_skipped_total{resource="pods"})";
  const std::string objects = R"(okna_k8s_informer_objects{resource="pods"})";
  const std::string bytes = R"(okna_k8s_informer_object_bytes{resource="pods"})";
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  EXPECT_EQ(agent->metric(skipped), 1);
  EXPECT_EQ(agent->metric(objects), 3) << "lab-1's three pods, not the oversized one";
  EXPECT_NE(agent->log().find("pods informer: a listed object of about"), std::string::npos);

  // Through the watch: 16 pods of 512 kB each (under the limit: read, then trimmed) and one
  // over the limit.
  constexpr int kLarge = 16;
  for (int i = 0; i < kLarge; ++i) {
    created =
        server_->admin("POST", "/api/v1/namespaces/tenant/pods",
                       podOnLab1("large-" + std::to_string(i), 512 * 1024), "application/json");
    ASSERT_EQ(created.status, 201) << created.body;
  }
  created = server_->admin("POST", "/api/v1/namespaces/tenant/pods",
                           podOnLab1("huge-watched", kOverLimit), "application/json");
  ASSERT_EQ(created.status, 201) << created.body;
  ASSERT_TRUE(waitFor([&] { return agent->metric(objects) == 3 + kLarge; }, 20s))
      << agent->metric(objects) << "\n"
      << agent->log();
  ASSERT_TRUE(waitFor([&] { return agent->metric(skipped) == 2; }, 20s)) << agent->log();
  // Its line waits for the rate limit (one per 10 s): the next says how many were not logged.
  const std::string log = agent->log();
  EXPECT_EQ(log.find("ppppppppppppppppppppppppp"), std::string::npos) << "a pod's content logged";
  // 8 MiB of pods went through; the store holds about a few hundred bytes of each.
  EXPECT_LT(agent->metric(bytes), (3 + kLarge) * 1024) << agent->metric(bytes);
  EXPECT_GT(agent->metric(bytes), 0);
  // Still the same process, ready, watching, with no relist for it.
  EXPECT_TRUE(agent->process().running());
  EXPECT_EQ(agent->get("/readyz").status, 200);
  EXPECT_EQ(agent->metric(R"(okna_k8s_informer_relists_total{reason="decode",resource="pods"})"),
            0);
  EXPECT_EQ(openWatches(), 2);
}

// A network-only agent (the chart's nocompute DaemonSet) runs with Placement off: it neither
// watches nor lists Pods, so its service account needs no pods access at all (deploy/helm).
TEST_F(AgentK8sTest, WithPlacementOffThePodsAreNeitherWatchedNorNeeded) {
  restartWithNodesOnlyRbac();
  auto agent = startAgent(kNodeOnlyConfig);
  ASSERT_TRUE(waitFor([&] { return agent->get("/readyz").status == 200; }, 20s)) << agent->log();
  ASSERT_TRUE(waitFor([&] { return openWatches() == 1; }, 10s));
  const std::string verbose = agent->get("/readyz?verbose").body;
  EXPECT_EQ(verbose.find("pod-informer"), std::string::npos) << verbose;
  for (const auto& req : requests())
    EXPECT_EQ(req.dump().find("/api/v1/pods"), std::string::npos) << req.dump();
  EXPECT_TRUE(hasRole(*agent, "compute")) << "the role is still derived, only Placement is off";
}

}  // namespace
}  // namespace okna
