// The Kubernetes API gone for a long while (issue 27's fault matrix, "Kubernetes API: gone for
// 60 s"): the real agent on a real OVN chassis loses its API server (its watch cut, every
// request it makes closed unanswered) while the cluster goes on changing its Node. Afterwards:
// the change made during the outage is acted on, the agent retried with a bounded backoff (its
// attempts counted by the fake API server, and at most what the configured backoff allows), and
// metadata was untouched throughout (the VM served during the outage, from the same namespace).
//
// The outage is seen by the agent alone (`/_fake/refuse?user=node-agent`: a partition), so that
// the admin can change the Node meanwhile. The window is OKNA_K8S_OUTAGE_SECONDS (default 8, so
// that CI stays fast; the bound holds for any window: the figure for 60 s is in tests/FAULTS.md
// with the command that measured it: OKNA_K8S_OUTAGE_SECONDS=60 OKNA_K8S_DEFAULT_BACKOFF=1).
#include <cmath>

#include "tests/integration/metadata/agent_metadata_fixture.h"

namespace okna {
namespace {

using namespace metadata_e2e;
using namespace std::chrono_literals;

// The most attempts an informer can make in `windowMs` of failures under a capped exponential
// backoff whose every delay is at least (1 - jitter) of its nominal value (core/backoff.h), plus
// the immediate reconnect after a watch that had been running.
int maxAttempts(double windowMs, double initialMs, double maxMs, double jitter = 0.5) {
  int attempts = 2;  // the immediate re-watch, and the first attempt after the first delay
  double t = 0;
  for (int k = 0;; ++k) {
    t += (1 - jitter) * std::min(initialMs * std::pow(2.0, k), maxMs);
    if (t > windowMs) return attempts;
    ++attempts;
  }
}

TEST_F(AgentMetadataTest, KubernetesApiGoneMissesNoChangeRetriesBoundedAndLeavesMetadataAlone) {
  const double windowS = std::getenv("OKNA_K8S_OUTAGE_SECONDS")
                             ? std::atof(std::getenv("OKNA_K8S_OUTAGE_SECONDS"))
                             : 8;
  // OKNA_K8S_DEFAULT_BACKOFF=1: the agent's default backoff (500 ms doubling to 30 s), for the
  // 60 s figure; otherwise a shorter one so that the test ends soon after the outage.
  const bool defaultBackoff = std::getenv("OKNA_K8S_DEFAULT_BACKOFF") != nullptr;
  const double kInitialMs = defaultBackoff ? 500 : 200, kMaxMs = defaultBackoff ? 30000 : 2000;
  if (!defaultBackoff) extraConfig_ = "kubernetes: {backoff: {initialMs: 200, maxMs: 2000}}\n";
  const auto net1 = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  startAgent();
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 30s))
      << agent_->get("/readyz?verbose").body;
  const auto watches = [&] {
    return nlohmann::json::parse(server_->control("GET", "watches").body).size();
  };
  ASSERT_TRUE(waitFor([&] { return watches() >= 1; }, 10s));
  const size_t informers = watches();
  const ino_t inode = namespaceInode(net1.metadata_netns);
  const auto refused = [&] {
    return nlohmann::json::parse(server_->control("GET", "state").body)["refused"].get<long>();
  };
  const long refusedBefore = refused();

  const auto start = std::chrono::steady_clock::now();
  const auto outage = std::chrono::milliseconds(static_cast<long>(windowS * 1000));
  ASSERT_EQ(
      server_->control("POST", "refuse?drop=1&user=node-agent&seconds=" + std::to_string(windowS))
          .status,
      200);
  // The cluster changes the Node meanwhile: the network role (ovn-cms-options on this host).
  ASSERT_EQ(server_
                ->admin("PATCH", "/api/v1/nodes/hv-e2e",
                        R"({"metadata":{"labels":{"node-role.openkeel.io/network":""}}})")
                .status,
            200);
  // Metadata is not the API server's business: the VM is served throughout, from the same
  // namespace.
  int servedDuringOutage = 0;
  while (std::chrono::steady_clock::now() - start < outage - 1s) {
    const Answer a = curlFromVm(*chassis_, vm1.netns, "/openstack/latest/meta_data.json");
    EXPECT_EQ(a.status, 200) << a.body;
    servedDuringOutage += a.status == 200;
    EXPECT_EQ(namespaceInode(net1.metadata_netns), inode);
    if (HasFailure()) break;
  }
  EXPECT_GT(servedDuringOutage, 0);
  const auto cmsOptions = [&] {
    return chassis_
        ->vsctl({"--if-exists", "get", "Open_vSwitch", ".", "external_ids:ovn-cms-options"})
        .out;
  };
  EXPECT_EQ(cmsOptions().find("enable-chassis-as-gw"), std::string::npos)
      << "the agent saw the change through a partition";

  // Back: the change made during the outage is acted on, within a backoff's reach.
  EXPECT_TRUE(
      waitFor([&] { return cmsOptions().find("enable-chassis-as-gw") != std::string::npos; },
              outage + std::chrono::milliseconds(static_cast<long>(kMaxMs)) + 20s))
      << cmsOptions() << agent_->log();
  const double caughtUpS =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long attempts = refused() - refusedBefore;
  const int bound = maxAttempts(windowS * 1000, kInitialMs, kMaxMs);
  std::cout << "[ figure   ] outage " << windowS << " s, " << informers
            << " informer(s): " << attempts << " requests refused (bound " << bound
            << " per informer), change acted on " << caughtUpS << " s after the outage began"
            << std::endl;
  EXPECT_GE(attempts, 1) << "the agent did not even try";
  EXPECT_LE(attempts, static_cast<long>(informers) * bound) << "a tight loop";
  EXPECT_EQ(namespaceInode(net1.metadata_netns), inode);
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  EXPECT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 30s))
      << agent_->get("/readyz?verbose").body;
}

}  // namespace
}  // namespace okna
