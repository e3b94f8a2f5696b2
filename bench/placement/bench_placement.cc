// Counts the HTTP requests the Placement reconciler sends, against a REAL Placement (the
// tests/fixtures/openstack noauth2 fixture, started here in a temp dir): per pod change, per burst,
// at steady state, after a conflict and after a restart. Not a test: it prints a table.
//   bench_placement [--debounce-ms N] [--changes N] [--steady-seconds N] [--devices 1]
// --devices 1: the node also has two device pools (placement.devices: 8 SR-IOV VFs with two
// fixed bandwidth inventories, 2 GPUs) and a DPDK pod holding a VF (issue #29).
// --zone 1: the node also has a topology.kubernetes.io/zone label, and Nova's own compute API
// (tests/fixtures/nova/start-nova-api.sh) is started: the agent joins az-<zone> in Nova and
// mirrors it in Placement; its requests to Nova are counted too.

#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/curl_http_client.h"
#include "core/logging.h"
#include "placement/reconciler.h"
#include "tests/fakes/placement_plan.h"
#include "tests/integration/placement/counting_http_client.h"
#include "tests/integration/placement/harness.h"

using namespace okna;
using namespace std::chrono_literals;

namespace {

struct Row {
  std::string scenario;
  size_t events;
  size_t requests;
  std::string detail;
};

std::string summary(const testing::CountingHttpClient& c, size_t from) {
  std::map<std::string, int> kinds;
  for (size_t i = from; i < c.log().size(); ++i) {
    std::string k = c.log()[i];
    // Collapse uuids: "PUT /resource_providers/{uuid}/inventories".
    const auto rp = k.find("/resource_providers/");
    if (rp != std::string::npos) {
      const auto end = k.find('/', rp + 20);
      k = k.substr(0, rp + 20) + "{uuid}" + (end == std::string::npos ? "" : k.substr(end));
    }
    if (auto q = k.find('?'); q != std::string::npos) k = k.substr(0, q);
    ++kinds[k];
  }
  std::string out;
  for (const auto& [k, n] : kinds) out += (out.empty() ? "" : ", ") + std::to_string(n) + "x " + k;
  return out.empty() ? "-" : out;
}

}  // namespace

int main(int argc, char** argv) {
  int debounceMs = 200;
  int changes = 20;
  int steadySeconds = 10;
  bool devices = false;
  bool zone = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--devices")) devices = std::atoi(argv[i + 1]) != 0;
    if (!std::strcmp(argv[i], "--zone")) zone = std::atoi(argv[i + 1]) != 0;
    if (!std::strcmp(argv[i], "--debounce-ms")) debounceMs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--changes")) changes = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steady-seconds")) steadySeconds = std::atoi(argv[i + 1]);
  }
  if (!testing::placementInstalled()) {
    std::cerr << "placement-api is not installed\n";
    return 2;
  }
  core::setupLogging({"text", "warn", {}});
  const std::string dir = testing::makeTempDir("okna-placement-bench-");
  if (!testing::runScript(testing::kFixtures + "/start-placement.sh " + dir + "/p",
                          dir + "/p.out")) {
    std::cerr << testing::readFile(dir + "/p.out") << "\n";
    return 1;
  }
  const std::string url = testing::readFile(dir + "/p/url");

  boost::asio::io_context io;
  okna::core::AsioClock clock(io);
  core::CurlHttpClient http(io);
  testing::CountingHttpClient counting(http);
  testing::Operator op(io, http, url);
  core::MetricsRegistry metrics;
  core::HealthRegistry health;
  placement::PlacementConfig config;
  config.auth.type = "none";
  config.endpointOverride = url;
  config.debounce = std::chrono::milliseconds(debounceMs);
  config.resyncInterval = 0s;
  config.stateFile = dir + "/state.json";
  const std::string name = "bench-1";
  const std::string uid = testing::randomUuid();
  auto node = testing::makeNode(name, uid);
  node.labels = {{"cpu-feature.node.kubevirt.io/avx2", "true"},
                 {"trait.openkeel.io/CUSTOM_BENCH", ""}};
  std::vector<k8s::PodInfo> pods;
  for (int i = 0; i < 30; ++i)
    pods.push_back(testing::makePod(name, "infra-" + std::to_string(i), "100m", "128Mi"));
  for (int i = 0; i < 5; ++i)
    pods.push_back(testing::makePod(name, "vm-" + std::to_string(i), "2", "4Gi", true));
  if (zone) {
    if (!testing::runScript(std::string(::okna::testing::kSourceDir) +
                                "/tests/fixtures/nova/start-nova-api.sh " + dir + "/nova " + url +
                                " " + name + "=" + uid,
                            dir + "/nova.out")) {
      std::cerr << testing::readFile(dir + "/nova.out") << "\n";
      return 1;
    }
    config.availabilityZones.computeEndpointOverride = testing::readFile(dir + "/nova/url");
    node.labels["topology.kubernetes.io/zone"] = "zone-a";
  }
  if (devices) {
    config.devices = {
        {"intel.com/sriov_physnet1",
         "SRIOV_NET_VF",
         "",
         {"CUSTOM_PHYSNET_PHYSNET1", "HW_NIC_SRIOV"},
         {{"NET_BW_EGR_KILOBIT_PER_SEC", 10000000}, {"NET_BW_IGR_KILOBIT_PER_SEC", 10000000}}},
        {"nvidia.com/GA102GL_A10", "PGPU", "gpu0", {}, {}}};
    node.allocatable["intel.com/sriov_physnet1"] = "8";
    node.allocatable["nvidia.com/GA102GL_A10"] = "2";
    pods[0].containers[0].requests["intel.com/sriov_physnet1"] = "1";
  }

  std::vector<Row> rows;
  auto agent =
      std::make_unique<placement::Reconciler>(io, clock, counting, config, metrics, health);
  agent->setActive(true);
  auto waitPass = [&](unsigned n) {
    return testing::runUntil(io, [&] { return agent->successfulPasses() >= n && !agent->busy(); });
  };

  size_t mark = counting.size();
  okna::testing::planAndUpdate(*agent, node, pods);
  waitPass(1);
  rows.push_back({devices ? "first registration (root + 2 hugepage + 2 device children, traits)"
                          : "first registration (root + 2 hugepage children, traits)",
                  1, counting.size() - mark, summary(counting, mark)});

  mark = counting.size();
  const auto steadyEnd = std::chrono::steady_clock::now() + std::chrono::seconds(steadySeconds);
  size_t updates = 0;
  while (std::chrono::steady_clock::now() < steadyEnd) {
    okna::testing::planAndUpdate(*agent, node, pods);  // a pod status change: same requests
    ++updates;
    testing::runFor(io, 50ms);
  }
  rows.push_back({"steady state: " + std::to_string(steadySeconds) + " s, unchanged inputs",
                  updates, counting.size() - mark, summary(counting, mark)});

  mark = counting.size();
  unsigned passes = agent->successfulPasses();
  for (int i = 0; i < changes; ++i) {
    // Alternately a 2-CPU/1-GiB pod arrives and leaves: above both steps every time.
    if (i % 2 == 0) {
      pods.push_back(testing::makePod(name, "job", "2", "1Gi"));
    } else {
      pods.pop_back();
    }
    okna::testing::planAndUpdate(*agent, node, pods);
    waitPass(++passes);
  }
  rows.push_back({"pod change above the step, one per window (arrive/leave)",
                  static_cast<size_t>(changes), counting.size() - mark, summary(counting, mark)});

  mark = counting.size();
  for (int i = 0; i < 50; ++i) {
    pods.push_back(testing::makePod(name, "burst-" + std::to_string(i), "50m", "16Mi"));
    okna::testing::planAndUpdate(*agent, node, pods);
  }
  waitPass(++passes);
  rows.push_back({"burst of 50 pod changes inside one window", 50, counting.size() - mark,
                  summary(counting, mark)});

  mark = counting.size();
  for (int i = 0; i < changes; ++i) {
    pods.push_back(testing::makePod(name, "tiny-" + std::to_string(i), "0", "8Mi"));
    okna::testing::planAndUpdate(*agent, node, pods);
    testing::runFor(io, std::chrono::milliseconds(debounceMs + 100));
  }
  rows.push_back({"pod changes below the step (8 MiB each, cumulative 160 MiB)",
                  static_cast<size_t>(changes), counting.size() - mark, summary(counting, mark)});

  // A VM lands between two pushes: the next PUT meets a 409 and is retried.
  const nlohmann::json alloc{{"allocations", {{uid, {{"resources", {{"VCPU", 1}}}}}}},
                             {"project_id", testing::randomUuid()},
                             {"user_id", testing::randomUuid()},
                             {"consumer_generation", nullptr}};
  op.call("PUT", "/allocations/" + testing::randomUuid(), alloc, "1.28");
  mark = counting.size();
  pods.push_back(testing::makePod(name, "after-vm", "2", "1Gi"));
  okna::testing::planAndUpdate(*agent, node, pods);
  waitPass(++passes);
  rows.push_back({"pod change after an allocation (409 then retry)", 1, counting.size() - mark,
                  summary(counting, mark)});

  // Agent restart (also what a periodic resync costs, plus GET /).
  agent.reset();
  agent = std::make_unique<placement::Reconciler>(io, clock, counting, config, metrics, health);
  agent->setActive(true);
  mark = counting.size();
  okna::testing::planAndUpdate(*agent, node, pods);
  waitPass(1);
  rows.push_back({"agent restart, provider already up to date", 1, counting.size() - mark,
                  summary(counting, mark)});

  // The compute role goes (the node is closed), stays away, and comes back.
  mark = counting.size();
  agent->setActive(false);
  testing::runUntil(io, [&] { return agent->closed() && !agent->busy(); });
  rows.push_back({"compute role lost (COMPUTE_STATUS_DISABLED set)", 1, counting.size() - mark,
                  summary(counting, mark)});
  mark = counting.size();
  updates = 0;
  const auto closedEnd = std::chrono::steady_clock::now() + std::chrono::seconds(steadySeconds);
  while (std::chrono::steady_clock::now() < closedEnd) {
    okna::testing::planAndUpdate(*agent, node, pods);
    ++updates;
    testing::runFor(io, 50ms);
  }
  rows.push_back({"steady state without the role: " + std::to_string(steadySeconds) + " s", updates,
                  counting.size() - mark, summary(counting, mark)});
  mark = counting.size();
  const unsigned before = agent->successfulPasses();
  agent->setActive(true);
  waitPass(before + 1);
  rows.push_back({"compute role regained (fresh read, trait cleared)", 1, counting.size() - mark,
                  summary(counting, mark)});
  agent.reset();

  std::printf(
      "| scenario | events | requests | per event | requests sent |\n|---|---|---|---|---|\n");
  for (const auto& r : rows)
    std::printf("| %s | %zu | %zu | %.2f | %s |\n", r.scenario.c_str(), r.events, r.requests,
                r.events ? static_cast<double>(r.requests) / static_cast<double>(r.events) : 0.0,
                r.detail.c_str());
  if (zone) testing::runScript(testing::kFixtures + "/stop.sh " + dir + "/nova", dir + "/stop.out");
  testing::runScript(testing::kFixtures + "/stop.sh " + dir + "/p", dir + "/stop.out");
  std::filesystem::remove_all(dir);
  return 0;
}
